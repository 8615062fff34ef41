// SegmentRows: the rows a scan request sees in one segment: committed versions at the read
// timestamp, with the reading transaction's own pending writes merged in by key (for index
// scans: index entries, the transaction's rows keyed by their entries). Waits first for
// transactions whose commit the read must see (Participant::AwaitReadable).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "node/column_cache.h"
#include "node/participant.h"
#include "storage/segment_store.h"

namespace wattdb::node {

struct ScanRequest {
  SegmentId segment = 0;
  std::string lo, hi;  // primary-key range ("" = unbounded)
  Timestamp read_ts = 0;
  uint64_t txn = 0;    // nonzero: overlay its pending writes
  uint32_t index = 0;  // nonzero: that index's entries with index keys in [index_lo, index_hi)
  std::string index_lo, index_hi;
  // The reader's transaction holds the lock of the range's one key, so no prepared write can
  // land there and its newest version is final: read without waiting for in-doubt commits
  // (and without recording a read at read_ts, which may be above the snapshots handed out).
  bool locked = false;
};

class SegmentRows {
 public:
  // Stale/NotFound if the segment does not cover the range (it split or moved). With `cache`,
  // a range scan whose transaction has no pending writes in the segment reads the segment's
  // column image if one answers it (columnar() then; read with NextBatch).
  static Result<std::unique_ptr<SegmentRows>> Open(storage::SegmentStore& store,
                                                   Participant& participant, const ScanRequest& req,
                                                   ColumnCache* cache = nullptr);
  bool columnar() const { return image_ != nullptr; }
  // REQUIRES columnar(). Replaces `out`'s rows with the next up to exec::kBatchRows rows; the
  // columns `used` marks false (if given) are NULL. Sets *last_key to the last row's key.
  // False once none are left. Corruption if `out` is not as wide as the table's rows.
  Result<bool> NextBatch(const std::vector<bool>* used, exec::Batch* out, std::string* last_key);
  // Replaces `out` with up to `max_rows` rows (about `max_bytes`) in key order; false once
  // none are left (out is then empty).
  Result<bool> Next(size_t max_rows, size_t max_bytes, std::vector<storage::ScanRow>* out);
  // Like Next, handing each row to `fn` (views valid during the call); read from storage
  // without pending writes to merge, straight from the storage's buffers.
  Result<bool> Visit(size_t max_rows, size_t max_bytes,
                     const storage::SegmentScanner::RowVisitor& fn);
  // The newest committed version of the first key met (SegmentScanner::first_seen; for
  // point lookups from NewestRows or an image, that key's), pending writes not merged.
  std::optional<storage::SeenLatest> first_seen() const;

 private:
  SegmentRows() = default;
  bool Hidden(const storage::ScanRow& r) const;
  // Columnar: reads the versions committed since image_ was built that the request sees
  // (Segment::RecentAt) into recent_. False if the image cannot answer with them (their
  // recording ended, or a row of another width). `lo_alone`: the request's range holds the
  // stored key req.lo alone.
  bool ReadRecent(const ScanRequest& req, bool lo_alone);
  // Columnar point lookups: seen_ from the recording or the image (`seq`: the segment's
  // write_seq() from before either was read).
  void SeeImageRow(const std::string& key, uint64_t seq);
  // NextBatch while recent_ has rows left: image rows and recent rows merged by key.
  Result<bool> NextMergedBatch(const std::vector<bool>* used, exec::Batch* out,
                               std::string* last_key);
  void EmitPendingBefore(const std::string* key, std::vector<storage::ScanRow>* out);

  std::unique_ptr<storage::SegmentScanner>
      scanner_;                                // null: columnar, or a cached or own point lookup
  storage::SegmentRef seg_;                    // columnar or cached: the segment read
  std::optional<storage::ScanRow> cached_;     // cached or own: the row, until read
  std::optional<storage::SeenLatest> seen_;    // cached or columnar point: its key's newest version
  size_t seen_image_row_ = SIZE_MAX;           // ... whose row is image_'s row at this position
  std::shared_ptr<const SegmentImage> image_;  // columnar: its image, rows [pos_, end_)
  size_t pos_ = 0, end_ = 0;
  std::vector<storage::RecentRow> recent_;  // columnar: replace or add to the image's rows
  size_t next_recent_ = 0;
  std::vector<uint32_t> sel_;
  std::map<std::string, storage::WriteOp> pending_;
  std::map<std::string, storage::WriteOp>::iterator next_pending_;
  std::set<std::string> hidden_pks_;  // index scans: rows the transaction rewrote
  IndexKeySpec spec_;
  bool exhausted_ = false;
  std::vector<storage::ScanRow> rows_;
  std::vector<storage::ScanRow> visit_buf_;
};

}  // namespace wattdb::node
