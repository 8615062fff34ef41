// SegmentStore: the node's storage. One RocksDB instance; one column family per segment.
//
// A segment holds a contiguous primary-key range [lo, hi) of one table ("" = unbounded) with
// every MVCC version of every row in it, and the entries of the table's secondary indexes
// for those rows (storage/mvcc.h), and nothing else: moving it means exporting its column
// family and importing it elsewhere. Segment metadata (table, range, the index key specs it
// maintains) lives in the default column family and changes atomically with the data it
// describes. Apply maintains the index entries of every row it writes.
//
// Thread-safe. Readers hold a SegmentRef (shared ownership of the column family handle), so a
// dropped segment stays readable by scans already running on it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "common/codec.h"
#include "common/mutex.h"
#include "common/schema.h"
#include "common/small_containers.h"
#include "common/status.h"
#include "storage/group_sync.h"
#include "storage/mvcc.h"
#include "storage/newest_rows.h"
#include "storage/recent_versions.h"

namespace rocksdb {
class CompactionFilterFactory;
class DB;
class Env;
class ColumnFamilyHandle;
class Iterator;
class Snapshot;
class WriteBatch;
}  // namespace rocksdb

namespace wattdb::storage {

// True if the key range [a, b) lies inside [lo, hi) ("" = unbounded, at either end).
inline bool RangeCovers(std::string_view lo, std::string_view hi, std::string_view a,
                        std::string_view b) {
  return a >= lo && (hi.empty() || (!b.empty() && b <= hi));
}

struct SegmentMeta {
  SegmentId id = 0;
  TableId table = 0;
  std::string lo;                     // inclusive, "" = -infinity
  std::string hi;                     // exclusive, "" = +infinity
  std::vector<IndexKeySpec> indexes;  // secondary indexes whose entries this segment keeps

  bool Contains(std::string_view key) const { return key >= lo && (hi.empty() || key < hi); }
  // True if [a, b) lies inside [lo, hi).
  bool Covers(std::string_view a, std::string_view b) const { return RangeCovers(lo, hi, a, b); }
};

struct SegmentCounters {
  std::atomic<uint64_t> rows_read{0};
  std::atomic<uint64_t> rows_written{0};
  // Approximate uncompressed bytes of keys and values, all versions (what commits add; a
  // compaction or an open measures it again from table properties).
  std::atomic<uint64_t> bytes{0};
  // Work scans spent stepping over versions older than a key's newest one they saw, since
  // the last garbage collection (a step 1, a seek kSeekWork): what collecting would save.
  std::atomic<uint64_t> old_version_work{0};
  std::atomic<uint64_t> collections{0};  // garbage collections of the segment (CollectGarbage)
  std::atomic<uint64_t> newest_hits{0};  // point lookups answered from newest() (no storage read)
  // Rows commits read to replace their secondary-index entries (writes without WriteOp::prior).
  std::atomic<uint64_t> prior_reads{0};
};

// The newest committed version of a key, whatever its timestamp.
struct LatestVersion {
  bool found = false;
  Timestamp ts = 0;
  bool deleted = false;
};

struct WriteOp;

class Segment {
 public:
  Segment(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, SegmentMeta meta)
      : db_(db), cf_(cf), id_(meta.id), meta_(std::move(meta)) {}
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  rocksdb::ColumnFamilyHandle* cf() const { return cf_; }
  SegmentMeta meta() const {
    MutexLock l(mu_);
    return meta_;
  }
  // meta().Covers(lo, hi), meta().Contains(key) and whether meta() has index `id`, without
  // copying the metadata.
  bool Covers(std::string_view lo, std::string_view hi) const {
    MutexLock l(mu_);
    return meta_.Covers(lo, hi);
  }
  bool Contains(std::string_view key) const {
    MutexLock l(mu_);
    return meta_.Contains(key);
  }
  bool HasIndex(uint32_t id) const {
    MutexLock l(mu_);
    for (const auto& ix : meta_.indexes) {
      if (ix.id == id) return true;
    }
    return false;
  }
  SegmentCounters& counters() { return counters_; }
  // Grows after every change to the segment's rows or range, once the change is visible to
  // new scans: state derived from the rows (a column image) is current while it is unchanged.
  // 0 for a segment this process opened and has not changed since; a segment a split or an
  // import created here starts above 0.
  uint64_t data_version() const { return data_version_.load(std::memory_order_acquire); }
  // Bumped as a write to the segment's rows begins (a commit, a split) and again once it is
  // done: a value read before a scan's view was taken and unchanged later means that no row
  // of the segment changed meanwhile.
  uint64_t write_seq() const { return write_seq_.load(); }
  // write_seq(), and whether no write was in flight on the segment as it was read.
  uint64_t QuietWriteSeq(bool* quiet) const {
    uint64_t before = write_seq_.load();
    bool idle = writes_in_flight_.load() == 0;
    uint64_t after = write_seq_.load();
    *quiet = idle && before == after;
    return before;
  }
  // The newest versions of keys point reads met and commits wrote (newest_rows.h).
  NewestRows& newest() { return newest_; }

  // The versions commits write from now on (recent_versions.h): starts recording at the
  // current data version, which it returns (what was recorded before is dropped).
  uint64_t ArmRecent();
  // Whether the recording holds every commit since data version `base`.
  bool RecentCovers(uint64_t base) const;
  // If RecentCovers(base): appends the recorded keys of [lo, hi) as a reader at read_ts sees
  // them (RecentVersions::VisibleAt) and returns true; false otherwise (nothing appended).
  // `lo_alone`: the caller knows lo to be a stored key, so the range holds it alone.
  bool RecentAt(uint64_t base, std::string_view lo, std::string_view hi, Timestamp read_ts,
                std::vector<RecentRow>* out, bool lo_alone = false) const;
  // If RecentCovers(base): the newest recorded version of `key` (found false if none; *row,
  // unless null, its row if live) and true; false otherwise.
  bool RecentLatest(uint64_t base, std::string_view key, LatestVersion* latest,
                    std::string* row) const;
  // Ends the recording if it started at `base`.
  void DisarmRecent(uint64_t base);
  // Bytes the recording holds (0 if not recording).
  size_t recent_bytes() const;

 private:
  friend class SegmentStore;
  friend class WriteWindow;
  // The data version grows: after a commit of `ts` whose writes are `ops` (those of this
  // segment are recorded), or after any other change of rows or range (ends the recording).
  void Committed(Timestamp ts, const std::vector<WriteOp>& ops);
  void Changed();
  rocksdb::DB* db_;                  // borrowed; the SegmentStore's DB outlives every Segment
  rocksdb::ColumnFamilyHandle* cf_;  // owned; destroyed with the Segment
  const SegmentId id_;               // meta_.id, which never changes
  mutable Mutex mu_;
  SegmentMeta meta_ GUARDED_BY(mu_);
  SegmentCounters counters_;
  mutable Mutex change_mu_;  // also held while data_version_ grows
  RecentVersions recent_ GUARDED_BY(change_mu_);
  std::atomic<uint64_t> data_version_{0};
  std::atomic<uint64_t> write_seq_{0};
  std::atomic<uint64_t> writes_in_flight_{0};
  NewestRows newest_;
  std::atomic<uint64_t> collected_at_horizon_{0};  // the GC horizon of the last CollectGarbage
};
using SegmentRef = std::shared_ptr<Segment>;

// Brackets a write to segments' rows: bumps each one's write_seq() now and again when it ends.
class WriteWindow {
 public:
  explicit WriteWindow(std::span<Segment* const> segments)
      : segments_(segments.begin(), segments.end()) {
    for (Segment* s : segments_) {
      s->writes_in_flight_.fetch_add(1);
      s->write_seq_.fetch_add(1);
    }
  }
  ~WriteWindow() {
    for (Segment* s : segments_) {
      s->write_seq_.fetch_add(1);
      s->writes_in_flight_.fetch_sub(1);
    }
  }
  WriteWindow(const WriteWindow&) = delete;
  WriteWindow& operator=(const WriteWindow&) = delete;

 private:
  SmallVector<Segment*> segments_;
};

// What a write knows of its key's newest committed row from before its transaction.
enum class Prior : uint8_t {
  kUnknown,  // Apply reads it (secondary indexes need it)
  kAbsent,   // no live row: never written, or deleted
  kRow,      // WriteOp::prior_row
};

// One write of a committed transaction.
struct WriteOp {
  SegmentId segment = 0;
  std::string key;  // encoded primary key
  VersionKind kind = VersionKind::kPut;
  std::string row;  // encoded row; empty for deletes
  // Set only if nothing can commit on the key between the read that learned it and Apply
  // (the key locked since): then it is what Apply would read. In memory only.
  Prior prior = Prior::kUnknown;
  std::string prior_row;
};

// Whether every key in [lo, hi) starts with `lo` (hi <= lo's successor): the range of one whole
// key (stored keys are prefix-free), or of the keys under a partial one. Keys of one key space.
inline bool NarrowRange(std::string_view lo, std::string_view hi) {
  return !hi.empty() && hi <= PrefixSuccessor(lo);
}

// The newest version of a key as a row scan met it, and the segment's write_seq() from
// before the scan's view was taken: while the segment (the same object) still shows that
// write_seq(), `latest` is what LatestOf would answer for `key`.
struct SeenLatest {
  const Segment* segment = nullptr;
  uint64_t write_seq = 0;
  std::string key;  // primary key
  LatestVersion latest;
  bool has_row = false;  // `row` is the encoded row of `latest` (a live version)
  std::string row;
  // Set if the segment's recording from this data version held every commit since `latest`
  // was the newest: while it still does (Segment::RecentLatest answers), the newest version
  // is the recorded one, or `latest` if none is recorded (per key, whatever other keys of
  // the segment were written since).
  std::optional<uint64_t> recent_base;
  bool Current(const Segment& seg) const { return &seg == segment && seg.write_seq() == write_seq; }
};

// A visible row produced by a scan.
struct ScanRow {
  std::string key;  // the primary key; for index scans the index key || primary key
  std::string row;
};

// Streams the rows of one segment visible at a snapshot, in key order, from [lo, hi).
// Holds its segment and a RocksDB snapshot alive. Not thread-safe; one reader.
class SegmentScanner {
 public:
  ~SegmentScanner();
  // Appends up to `max_rows` rows to `out`, stopping early once they hold `max_bytes` (at
  // least one row); returns false once exhausted.
  Result<bool> Next(size_t max_rows, std::vector<ScanRow>* out, size_t max_bytes = SIZE_MAX);
  // Like Next, but hands each row to `fn` as views into the storage's buffers, valid only
  // during the call: no copies.
  using RowVisitor = std::function<Status(std::string_view key, std::string_view row)>;
  Result<bool> Visit(size_t max_rows, size_t max_bytes, const RowVisitor& fn);
  // The scanned segment's metadata now.
  SegmentMeta meta() const { return seg_->meta(); }
  // The newest commit timestamp among the versions the scan has decided on so far, deletions
  // included: a reader at or above it sees the same rows.
  Timestamp newest_ts() const { return newest_ts_; }
  const Segment* segment() const { return seg_.get(); }
  // Row scans, inside a Visit callback: the commit timestamp of the row's version.
  Timestamp visit_ts() const { return visit_ts_; }
  // Row scans: the newest version of the first key met (whatever the read timestamp), once
  // the scan has met one.
  const std::optional<SeenLatest>& first_seen() const { return first_seen_; }

 private:
  friend class SegmentStore;
  SegmentScanner() = default;
  static constexpr int kNextBeforeSeek = 16;  // = kSeekWork: never more than twice the cheaper way
  static constexpr uint64_t kSeekWork = 16;   // a seek costs about this many steps
  // From a version of last_key_: to the first entry of the next key.
  void SkipOlderVersions();
  // From a version of `user_key` newer than read_ts_: to its newest version at read_ts_, or
  // past the key.
  void SkipNewerVersions(std::string_view user_key);
  rocksdb::DB* db_ = nullptr;
  SegmentRef seg_;
  const rocksdb::Snapshot* snap_ = nullptr;
  std::unique_ptr<rocksdb::Iterator> it_;
  std::unique_ptr<rocksdb::Iterator> rows_;  // index scans: fetches the rows of entries
  std::string hi_;                           // user key bound (with its key-space prefix)
  // Row scans whose range holds only keys that start with the low bound (a point lookup):
  // once a key is decided, the scan ends if its successor reaches hi_, without stepping over
  // the key's older versions (stored keys are prefix-free: no other key lies in between).
  bool narrow_ = false;
  bool record_first_ = false;      // row scans: fill first_seen_
  uint64_t write_seq_ = 0;         // the segment's, before snap_ was taken
  bool quiet_ = false;             // no write was in flight then
  bool several_versions_ = false;  // narrow scans: the key has versions older than its newest
  // Narrow scans also keep the version's row (has_row), offered to the segment's NewestRows
  // when the scanner is destroyed.
  std::optional<SeenLatest> first_seen_;
  size_t strip_ = 0;  // user-key prefix length not returned to callers
  Timestamp read_ts_ = 0;
  Timestamp newest_ts_ = 0;
  Timestamp visit_ts_ = 0;
  std::string last_key_;
  bool have_last_ = false;
  bool done_ = false;
  uint64_t old_version_work_ = 0;  // added to the segment's counter as Visit returns
};

// Files and metadata of an exported segment, ready to ship.
struct ExportedFile {
  std::string name;  // relative file name, e.g. "000012.sst"
  int level = 0;
  uint64_t size = 0;
  uint64_t smallest_seqno = 0, largest_seqno = 0;
  std::string smallest_key, largest_key;
  uint64_t num_entries = 0, num_deletions = 0;
};
struct SegmentExport {
  SegmentMeta meta;
  std::string dir;         // directory holding the files
  std::string comparator;  // db_comparator_name
  std::vector<ExportedFile> files;
};

struct SegmentInfo {
  SegmentMeta meta;
  uint64_t bytes = 0;
  uint64_t rows_read = 0;
  uint64_t rows_written = 0;
  uint64_t collections = 0;
  uint64_t cached_reads = 0;  // SegmentCounters::newest_hits
};

class SegmentStore {
 public:
  // Opens or creates the store at `dir` (parents are created), reopening every segment.
  // `env` (tests): the RocksDB environment to use instead of the default; it must outlive
  // the store.
  // (Fills the new store's state before anyone else has it: no locks.)
  static Result<std::unique_ptr<SegmentStore>> Open(
      const std::string& dir, rocksdb::Env* env = nullptr) NO_THREAD_SAFETY_ANALYSIS;
  ~SegmentStore();

  Status CreateSegment(const SegmentMeta& meta);
  // Drops the column family and its metadata; running scanners finish on their snapshot.
  Status DropSegment(SegmentId id);
  // Returns the segment or NotFound.
  Result<SegmentRef> Get(SegmentId id) const;
  // The segment if it still covers [lo, hi) ("" = unbounded): NotFound if it is not here,
  // Stale if it split or moved since.
  Result<SegmentRef> GetCovering(SegmentId id, std::string_view lo, std::string_view hi) const;
  std::vector<SegmentInfo> List() const;

  // Applies committed writes at `ts` atomically (one RocksDB WriteBatch, WAL on; fsynced
  // when the store was opened with sync_commits). If `prepared_txn` is nonzero its prepared
  // record is erased in the same batch. If `txn` is nonzero the batch also records that txn
  // committed at `ts` (CommittedAt), so a repeated commit can be recognised as done.
  // A large commit (kIngestAbove rows or more, no secondary index in its segments, not a
  // durable prepare) goes around the memtables and the log: each segment's rows are written
  // in key order into table files (a large segment's into several, on as many threads; see
  // set_ingest_file_rows), and the files, with the outcome record, are ingested in one atomic
  // step. `sync` false (a durable prepare's commit only): not fsynced even with
  // sync_commits; the prepared record stays on disk until a later sync (SyncWal, or any
  // synced write) covers the batch.
  // `on_written`, if set, is called when the commit is in the log and readable at `ts` but its
  // log sync is still due (never for an unsynced or ingested commit), with the ticket that
  // WaitDurable takes; the sync follows when it returns.
  Status Apply(Timestamp ts, const std::vector<WriteOp>& ops, uint64_t prepared_txn = 0,
               uint64_t txn = 0, bool sync = true,
               const std::function<void(uint64_t ticket)>& on_written = nullptr);
  // Returns once the commit `on_written` was told `ticket` for is durable (a sync of the log may
  // run here).
  Status WaitDurable(uint64_t ticket) { return log_sync_.Sync(ticket); }
  // Makes every write applied so far durable (one fsync of the log). A failed sync ends the
  // process with kLogSyncFailedExit (see the definition): it never returns an error.
  Status SyncWal();
  static constexpr int kLogSyncFailedExit = 75;
  static constexpr size_t kIngestAbove = 100000;
  // An ingested segment's rows are cut into table files of at least `rows` rows for each
  // thread (at most 4, and the machine's cores), and of at most about kIngestFileBytes each,
  // written by those threads and ingested together.
  static constexpr uint64_t kIngestFileBytes = 16ull << 20;
  void set_ingest_file_rows(size_t rows) { ingest_file_rows_ = std::max<size_t>(1, rows); }
  // Commits Apply made by ingesting files.
  uint64_t ingested_commits() const { return ingested_commits_.load(); }
  // The commit timestamp Apply recorded for `txn`, if any.
  Result<std::optional<Timestamp>> CommittedAt(uint64_t txn) const;
  // Drops the outcome records of transaction ids below `txn`.
  Status ForgetOutcomesBefore(uint64_t txn);
  // Whether Apply fsyncs the log (concurrent commits share one fsync).
  void set_sync_commits(bool on) { sync_commits_ = on; }
  // Tests: `hook` runs before each sync of the log (set before the store is shared), and
  // the callers of WaitDurable or synced commits sleeping until a running sync ends.
  void set_before_log_sync_for_test(std::function<void()> hook) {
    before_log_sync_ = std::move(hook);
  }
  uint32_t log_sync_sleepers() const { return log_sync_.sleepers(); }

  // Durable records of prepared transactions (opaque blobs owned by the caller); written
  // with a synced WAL so that a prepared transaction survives a crash. WritePrepared leaves
  // the sync to the caller: it returns the ticket to pass to WaitDurable.
  Status PutPrepared(uint64_t txn, const std::string& blob);
  Result<uint64_t> WritePrepared(uint64_t txn, const std::string& blob);
  Status ErasePrepared(uint64_t txn);
  Result<std::vector<std::pair<uint64_t, std::string>>> ListPrepared() const;
  // A follower's copies of the prepare records its leader shipped for `segment` (one per
  // transaction, the newest replacing the older; docs/design/replication.md): put synced,
  // erased when the leader ships the outcome, listed when this node takes the lead, and
  // all of a segment's erased when it stops following it. Kept apart from this node's own
  // prepare records, which may hold the same transaction's writes on other segments.
  Status PutReplicaPrepared(SegmentId segment, uint64_t txn, const std::string& blob);
  Status EraseReplicaPrepared(SegmentId segment, uint64_t txn);
  Result<std::vector<std::pair<uint64_t, std::string>>> ListReplicaPrepared(
      SegmentId segment) const;
  Status EraseReplicaPreparedOf(SegmentId segment);
  Result<LatestVersion> Latest(SegmentId seg, std::string_view key) const;
  // Latest for each of `keys` of `seg`, into (*out)[i], through one iterator: keys in
  // ascending order cost one seek for a run of them with no stored version between them.
  Status LatestOf(SegmentId seg, std::span<const std::string_view> keys,
                  std::vector<LatestVersion>* out) const;
  // Opens a scan of [lo, hi) at snapshot `read_ts`. Fails with Stale if the segment's range
  // no longer covers [lo, hi) (it split or shrank), NotFound if it is not here.
  Result<std::unique_ptr<SegmentScanner>> Scan(SegmentId seg, std::string_view lo,
                                               std::string_view hi, Timestamp read_ts) const;
  // Opens a scan of index `index`'s entries with index keys in [lo, hi) at `read_ts`,
  // yielding each entry's row (key = index key || primary key, in that order). Stale if the
  // segment no longer covers the primary-key range [seg_lo, seg_hi) the caller expects.
  Result<std::unique_ptr<SegmentScanner>> ScanIndex(SegmentId seg, std::string_view seg_lo,
                                                    std::string_view seg_hi, uint32_t index,
                                                    std::string_view lo, std::string_view hi,
                                                    Timestamp read_ts) const;
  // Starts maintaining `spec` in `seg` and writes the entries of the rows visible at
  // `build_ts`, at that timestamp, atomically. REQUIRES: no write to the segment commits
  // between build_ts and this call (the caller blocks writers). AlreadyExists if present.
  Status AddIndex(SegmentId seg, const IndexKeySpec& spec, Timestamp build_ts);
  // Stops maintaining index `index` in `seg` and deletes its entries. Idempotent.
  Status DropIndex(SegmentId seg, uint32_t index);

  // Splits `seg`: keys >= the split key (all versions) move to the new segment `new_id`.
  // The split key is the approximate middle key (a scan of the whole segment) or, with
  // `top_bytes` > 0, the lowest key of the highest keys holding about `top_bytes` (a scan
  // from the end: a segment many times its size, after a bulk load, is cut into pieces of
  // that size one by one instead of halved again and again, each halving reading it all).
  // Atomic. Returns the split key, or NotFound-free InvalidArgument if the segment has fewer
  // than two distinct keys; NotFound if `seg` is dropped before the split's final write
  // (nothing of the split stays). The moved range is then compacted out of `seg` before Split
  // returns, or, given `compact_later`, by the function stored there, for the caller to run
  // once it has answered (it must run before the store is destroyed).
  Result<std::string> Split(SegmentId seg, SegmentId new_id, uint64_t top_bytes = 0,
                            std::function<void()>* compact_later = nullptr);
  // The same cutting up to `pieces` pieces of about `piece_bytes` from the top at once (one
  // read of the moved range, one final write): the new segments are `first_new_id` + i, in
  // ascending key order, and their low keys are returned in that order (fewer than `pieces`
  // when the segment holds less, at least one key always staying). Ids past the last piece
  // are not used. Without `piece_bytes`, or if the top holds about everything: one piece at
  // the middle.
  Result<std::vector<std::string>> SplitPieces(SegmentId seg, SegmentId first_new_id,
                                               uint64_t piece_bytes, size_t pieces,
                                               std::function<void()>* compact_later = nullptr);
  // Tests: runs in Split after the copy, before the final write (without the store's locks).
  void set_before_split_write_for_test(std::function<void()> f) {
    before_split_write_ = std::move(f);
  }
  // Tests: runs in Split once the cuts are found, before the copy (without the store's locks).
  void set_after_split_find_for_test(std::function<void()> f) { after_split_find_ = std::move(f); }
  // Whether Split(seg, new_id) happened: its split key (the new segment's low key), after
  // waiting for a split in progress; NotFound if it did not, and then it never will (a late
  // request to do it is refused).
  Result<std::string> SettleSplit(SegmentId seg, SegmentId new_id);

  // Exports `seg` into `export_dir` (must not exist). The segment stays readable.
  Result<SegmentExport> Export(SegmentId seg, const std::string& export_dir);
  // Imports files (already in `exp.dir`) as a new segment with metadata `exp.meta`. Files are
  // moved (hard-linked) into the store.
  Status Import(const SegmentExport& exp);

  // Versions shadowed at or below `ts` may be dropped by later compactions. REQUIRES: no
  // snapshot below `ts` is or will be used. Monotonic: a lower value is ignored.
  void SetGcHorizon(Timestamp ts);
  Timestamp gc_horizon() const { return gc_horizon_->load(); }
  // Compacts one segment now (tests, and to reclaim space at once).
  Status CompactSegment(SegmentId id);
  // Compacts up to `max_segments` segments whose scans stepped over old versions for more
  // work than about a tenth of rewriting them (SegmentCounters::old_version_work, at least
  // kCollectWorkMin), and whose versions the horizon has passed since their last collection:
  // a hot row's versions pile up in the memtable and the upper levels until compactions
  // reach them, and every scan over it pays for them. Returns how many were compacted.
  Result<int> CollectGarbage(int max_segments);
  // Ends a running CollectGarbage's compaction early and makes later calls do nothing (a
  // stopping node does not wait for a large segment's rewrite); other compactions of
  // segments (CompactSegment, a split's) fail from then on.
  void StopCollecting();
  // Writes the segment's memtable to a table file now (tests).
  Status FlushSegment(SegmentId id);
  // Compactions RocksDB has run on the segment since the store opened, flushes not counted
  // (tests).
  Result<uint64_t> CompactionsOf(SegmentId id) const;
  static constexpr uint64_t kCollectWorkMin = 50000;

  const std::string& dir() const { return dir_; }

 private:
  SegmentStore() = default;
  Status PutMeta(const SegmentMeta& m, void* batch /* rocksdb::WriteBatch* */) const;
  // SplitPieces' checks: the segment `id` to split, if it is here and the new ids
  // first_new_id.. (`pieces` of them) are neither taken nor given up (SettleSplit).
  Result<SegmentRef> SplitSource(SegmentId id, SegmentId first_new_id, size_t pieces)
      REQUIRES(split_mu_);
  // InvalidArgument unless RocksDB can import every file of `exp` (a file without a point
  // entry fails an assertion inside the import).
  Status CheckImportable(const SegmentExport& exp) const;
  Result<SegmentRef> GetCoveringLocked(SegmentId id, std::string_view lo, std::string_view hi) const
      REQUIRES_SHARED(mu_);
  // NotFound unless `seg` is still segment `id` (not dropped while a caller worked on it:
  // its metadata must not be written again).
  Status CheckLiveLocked(SegmentId id, const SegmentRef& seg) const REQUIRES_SHARED(mu_);
  // A scanner on `id` (Stale unless it covers [seg_lo, seg_hi); `index` nonzero: it must keep
  // that index) with its snapshot and iterators, not yet positioned.
  Result<std::unique_ptr<SegmentScanner>> OpenScanner(SegmentId id, std::string_view seg_lo,
                                                      std::string_view seg_hi, uint32_t index,
                                                      Timestamp read_ts) const;
  // Adds to `batch` the index entry changes of one row going from `old_row` to `new_row`
  // (either null = absent) at `ts`.
  Status IndexChanges(const Segment& seg, const std::vector<IndexKeySpec>& specs,
                      std::string_view pk, const std::string* old_row, const std::string* new_row,
                      Timestamp ts, void* batch /* rocksdb::WriteBatch* */) const;
  // The newest committed version of row `pk` if it is live.
  Result<std::optional<std::string>> LatestRow(const Segment& seg, std::string_view pk) const;
  // Uncompressed key and value bytes in `cf`'s table files plus its memtables' size: the
  // unit of SegmentCounters::bytes, whatever the compression.
  uint64_t LogicalBytes(rocksdb::ColumnFamilyHandle* cf) const;
  // Compacts all of `seg` into the bottom level (the GC filter drops what no snapshot sees)
  // and refreshes its byte count; `canceled` (may be null) ends the compaction early.
  Status Compact(Segment& seg, std::atomic<bool>* canceled);
  // Apply's ingesting path; false (nothing done, *written untouched) if the rows cannot go
  // that way (keys that do not sort as their versions do).
  // A commit's segments, and the rows and bytes it wrote to each.
  using CommitSegments = SmallFlatMap<SegmentId, SegmentRef>;
  using WrittenCounts = SmallFlatMap<SegmentId, std::pair<uint64_t, uint64_t>>;
  Result<bool> ApplyByIngesting(Timestamp ts, const std::vector<WriteOp>& ops,
                                const CommitSegments& refs, uint64_t txn, WrittenCounts* written);
  // Ingests the commit if it is large and touches no indexed segment; false if it did not.
  Result<bool> TryIngest(Timestamp ts, const std::vector<WriteOp>& ops, const CommitSegments& refs,
                         uint64_t txn, WrittenCounts* written);
  // Apply's write-batch path. The writes of indexed segments: per (segment, key) the last
  // write, whose index entries change, and the first write that knows the row before the
  // transaction, if one does; and each segment's index specs as the commit saw them.
  struct IndexedWrite {
    const WriteOp* last = nullptr;
    const WriteOp* prior = nullptr;
  };
  struct IndexedWrites {
    std::map<std::pair<SegmentId, std::string>, IndexedWrite> keys;
    SmallFlatMap<SegmentId, std::vector<IndexKeySpec>> specs;
  };
  // Puts each op's version into `b`, counts rows and bytes per segment in `written`, and
  // collects the writes of indexed segments.
  Status BatchVersions(Timestamp ts, const std::vector<WriteOp>& ops, const CommitSegments& refs,
                       rocksdb::WriteBatch* b, WrittenCounts* written,
                       IndexedWrites* indexed) const;
  // Puts the index entry changes of `indexed` into `b` (reading a row's prior version where
  // no write of the commit knows it).
  Status BatchIndexChanges(Timestamp ts, const IndexedWrites& indexed, const CommitSegments& refs,
                           rocksdb::WriteBatch* b) const;
  std::atomic<uint64_t> ingested_commits_{0};

  std::string dir_;
  std::unique_ptr<rocksdb::DB> db_;
  bool sync_commits_ = false;
  std::function<void()> before_log_sync_;
  // Apply's synced commits and PutPrepared: written unsynced, then synced in groups
  // (group_sync.h) by SyncWal.
  GroupSync log_sync_{[this] { return SyncWal(); }};
  size_t ingest_file_rows_ = 250000;
  std::shared_ptr<std::atomic<uint64_t>> gc_horizon_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<rocksdb::CompactionFilterFactory> gc_factory_;
  std::atomic<bool> collect_canceled_{false};  // StopCollecting
  // Guards segments_ and serializes structural changes (create/drop/split/import, held
  // exclusively) against Scan's range check (shared), so a scan never sees a half-split
  // segment.
  mutable SharedMutex mu_;
  // List() reads a copy of the segment list published on every change, so heartbeats never
  // wait for mu_ (held across a split's or an import's final write).
  void PublishListLocked() REQUIRES(mu_);
  std::shared_ptr<const std::vector<SegmentRef>> PublishedList() const;  // the copy, or null
  mutable Mutex list_mu_;
  std::shared_ptr<const std::vector<SegmentRef>> list_ GUARDED_BY(list_mu_);
  std::function<void()> before_split_write_;  // set_before_split_write_for_test
  std::function<void()> after_split_find_;    // set_after_split_find_for_test
  Mutex split_mu_;                            // serializes splits (which hold mu_ only briefly)
  std::set<SegmentId> cancelled_splits_ GUARDED_BY(split_mu_);  // new ids SettleSplit found unused
  std::map<SegmentId, SegmentRef> segments_ GUARDED_BY(mu_);
};

std::string SegmentCfName(SegmentId id);

}  // namespace wattdb::storage
