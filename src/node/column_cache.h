// ColumnCache: segments' rows decoded once into column batches, so that plan fragments scan
// them without RocksDB iteration or row decoding.
//
// An image holds every column of every live row of one segment at its newest committed
// version, in key order (with each version's timestamp), and the newest commit timestamp
// among those versions (deletions included). It answers a scan at read_ts exactly when
// read_ts >= that timestamp and the segment's data version (storage::Segment::data_version
// grows after every commit or split that reaches the segment) is still the one the image was
// built at, or the segment's recording of commits covers every change since (SegmentRows
// merges the recorded versions read_ts sees): the reader has waited for every commit at or
// below read_ts (Participant::AwaitReadable), so no version it must see is missing. Scans whose
// transaction has pending writes in the segment, and index scans, never use images (SegmentRows
// decides).
//
// Only scans of a whole segment build images, and only of quiet segments: one whose data
// version has not changed for `quiet_micros` as earlier scans saw it, or one not written
// since the node started, or one changed only by commits since a read found no image (the
// read starts the segment's recording of commits, storage/recent_versions.h, which keeps an
// image current; a split or an ingested commit ends it). Once built, an image stays current
// under commits: reads merge the recorded versions they see. Past the byte budget the
// least recently used images give way if they have not been read for kIdleMicros; otherwise
// no image is built (a table larger than the budget keeps its first images rather than
// rebuilding all of them on every scan). Warm, called in the background, builds the images
// of segments written (or created by a split or a move) since the node started once they are
// quiet, so the first scan after a load finds them, and those changed only by commits since a
// read missed in the last kIdleMicros; it also builds anew images whose recording grew.
// Thread-safe; images are immutable and shared by the scans reading them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/status.h"
#include "query/exec/batch.h"
#include "storage/segment_store.h"

namespace wattdb::node {

struct SegmentImage {
  uint64_t data_version = 0;  // the segment's data version it reflects
  Timestamp newest_ts = 0;    // answers reads at or above this
  std::string lo, hi;         // the key range it holds: its segment's when built ("" = unbounded)
  size_t rows = 0;
  size_t width = 0;                // columns per row (0 if the segment has no rows)
  size_t bytes = 0;                // approximate memory held
  size_t encoded_bytes = 0;        // of that, columns' attached encodings (exec::Vector::encoding)
  std::string key_bytes;           // the rows' primary keys, concatenated in key order
  std::vector<uint32_t> key_ends;  // key i ends at key_ends[i] and starts where key i-1 ends
  std::vector<exec::Batch> batches;  // exec::kBatchRows rows each, the last possibly fewer
  // 1 if column c of batch b holds a NULL: nulls_in[b * width + c] (empty: not known). A scan
  // that shares a column without NULLs says so, and its readers skip its NULL flags.
  std::vector<uint8_t> nulls_in;
  std::vector<Timestamp> row_ts;      // each row's version
  size_t prefix = 0;                  // bytes every key begins with (IndexKeys)
  std::vector<uint64_t> key_heads;    // key i's 8 bytes after the prefix, as a number (IndexKeys)
  std::vector<uint64_t> head_blocks;  // key_heads[kHeadBlock * j]: a search's first steps, in cache
  static constexpr size_t kHeadBlock = 32;

  // Row i encoded as storage keeps rows (common/codec.h), from its columns.
  std::string EncodedRow(size_t i) const;

  // Whether [a, b) ("" = unbounded) lies within the range it holds. A reader that checked
  // the segment's range before taking the image must check again: the segment may have split
  // in between, and an image built since holds only the part that stayed.
  bool Covers(std::string_view a, std::string_view b) const {
    return storage::RangeCovers(lo, hi, a, b);
  }

  std::string_view key(size_t i) const {
    size_t begin = i == 0 ? 0 : key_ends[i - 1];
    return std::string_view(key_bytes).substr(begin, key_ends[i] - begin);
  }
  // Fills prefix and key_heads from the keys (in order), which the searches below use: a
  // search compares 8-byte numbers, and whole keys only where those are equal.
  void IndexKeys();
  // The first row whose key is >= k (rows if none). REQUIRES: IndexKeys since the last key.
  size_t LowerBound(std::string_view k) const;
  // The same, for a k at or above key(from - 1): gallops from `from`, so a bound a few rows
  // on (a point lookup's end) costs a few comparisons.
  size_t LowerBoundFrom(size_t from, std::string_view k) const;
};

struct ColumnCacheStats {
  uint64_t hits = 0;    // scans answered from an image
  uint64_t misses = 0;  // scans that asked and read RocksDB instead
  uint64_t builds = 0;  // images built
  uint64_t images = 0;  // images held now
  uint64_t bytes = 0;   // their memory
};

class ColumnCache {
 public:
  static constexpr int64_t kIdleMicros = 10'000'000;
  // Reads of part of a quiet segment after which it gets an image anyway (a segment read a
  // range at a time -- the parts of a partitioned join -- is worth one).
  static constexpr int kPartialReadsBeforeImage = 8;
  // Warm builds an image anew once its segment's recording of later commits holds this much
  // (half of what ends a recording: storage::RecentVersions::kMaxBytes).
  static constexpr size_t kRefreshBytes = storage::RecentVersions::kMaxBytes / 2;
  // ... and once its segment is quiet with this much recorded (a trickle of commits to a
  // segment read all the time does not rebuild its image after each).
  static constexpr size_t kQuietRefreshBytes = kRefreshBytes / 16;

  // budget_bytes 0 turns the cache off.
  ColumnCache(size_t budget_bytes, int64_t quiet_micros, const Clock& clock = Clock::Real());

  // An image of `seg` that answers a scan at read_ts; nullptr if none. With `may_build` (a
  // scan of the whole segment, which costs about what a build does), builds it first in the
  // calling thread if the segment is quiet and nobody else is building it; point and short
  // range lookups use images that are there, until kPartialReadsBeforeImage of them found the
  // segment quiet without one.
  Result<std::shared_ptr<const SegmentImage>> Get(storage::SegmentStore& store,
                                                  const storage::SegmentRef& seg, Timestamp read_ts,
                                                  bool may_build);
  ColumnCacheStats stats() const;
  // Builds images for up to `max_builds` segments written, split off or moved in since the
  // node started (Segment::data_version above 0) that are quiet and have none (as a
  // whole-segment scan would, within the budget), and anew for read images whose recording
  // of later commits passed kRefreshBytes, or kQuietRefreshBytes with the segment quiet;
  // observes the others' data versions, so a segment it sees unchanged for quiet_micros is
  // quiet. Counts no hits or misses. Returns the images built.
  Result<int> Warm(storage::SegmentStore& store, int max_builds);
  // Tests: runs at the start of each Get (without the cache's lock).
  void set_before_get_for_test(std::function<void()> f) { before_get_ = std::move(f); }

 private:
  // Get's work; `warm`: for Warm (no hit/miss counted, no use recorded); `*did_build` (optional)
  // tells whether this call built an image.
  Result<std::shared_ptr<const SegmentImage>> Lookup(storage::SegmentStore& store,
                                                     const storage::SegmentRef& seg,
                                                     Timestamp read_ts, bool may_build, bool warm,
                                                     bool* did_build = nullptr);
  struct Entry {
    std::weak_ptr<storage::Segment> seg;  // the segment object the entry is about
    std::shared_ptr<const SegmentImage> image;
    uint64_t seen_version = 0;  // the data version an earlier scan saw, since seen_at
    int64_t seen_at = 0;
    uint64_t failed_version = ~0ull;  // a build at this version found rows it cannot hold
    bool building = false;
    int64_t last_use = 0;   // clock micros
    int partial_reads = 0;  // reads of part of it while quiet at seen_version, without an image
    bool missed = false;    // a read had no image for it, last at last_miss (clock micros)
    int64_t last_miss = 0;
    bool probe = false;  // a miss started a recording at probe_base (Segment::ArmRecent)
    uint64_t probe_base = 0;
    // Notes the segment's data version as seen at `now`; true if it changed since last seen.
    bool See(uint64_t version, int64_t now) {
      if (seen_version == version) return false;
      seen_version = version;
      seen_at = now;
      return true;
    }
  };
  // Builds the image of the newest committed rows; nullptr if the rows do not all have one width.
  static Result<std::shared_ptr<SegmentImage>> Build(storage::SegmentStore& store,
                                                     const storage::SegmentRef& seg);
  // Lookup's steps. LookupLocked answers from the entry (a hit, a miss, or an image to
  // refresh); *build set: the caller builds, having marked the entry building.
  // TakeBuiltLocked takes the built image in (kept if nothing changed and it fits) and
  // answers the read with it if it can.
  std::shared_ptr<const SegmentImage> LookupLocked(const storage::SegmentRef& seg, SegmentId id,
                                                   uint64_t version, Timestamp read_ts,
                                                   bool may_build, bool warm, bool* build)
      REQUIRES(mu_);
  Result<std::shared_ptr<const SegmentImage>> TakeBuiltLocked(
      const storage::SegmentRef& seg, SegmentId id, uint64_t version, Timestamp read_ts, bool warm,
      bool* did_build, Result<std::shared_ptr<SegmentImage>> built) REQUIRES(mu_);
  // REQUIRES mu_ for each:
  // And ends the recording of commits it answers with.
  void DropImageLocked(Entry& e) REQUIRES(mu_);
  void ForgetImageLocked(Entry& e) REQUIRES(mu_);
  // Least recently used images idle for kIdleMicros, while past the budget (but not `keep`'s,
  // just built: the budget may be exceeded by one image).
  void EvictLocked(SegmentId keep) REQUIRES(mu_);
  // Below the budget, or an image idle for kIdleMicros can give way.
  bool RoomLocked() const REQUIRES(mu_);
  void PruneLocked() REQUIRES(mu_);  // entries of segments gone, images of segments changed

  const size_t budget_;
  const int64_t quiet_micros_;
  const Clock& clock_;
  mutable Mutex mu_;
  std::map<SegmentId, Entry> entries_ GUARDED_BY(mu_);
  uint64_t gets_ GUARDED_BY(mu_) = 0;
  ColumnCacheStats stats_ GUARDED_BY(mu_);
  std::function<void()> before_get_;  // set_before_get_for_test
};

}  // namespace wattdb::node
