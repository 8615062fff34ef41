// SegmentStore::Split and SplitPieces: a segment's upper rows become new segments on this
// node. The cuts are found (estimated from the table files, or measured by a scan), the rows
// above the lowest cut and their index entries are copied into table files the new segments
// ingest (no log, no memtable, no flush), and one synced write removes them from the old
// segment and records every segment's new range.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/write_batch.h>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "storage/segment_store.h"
#include "storage/segment_store_util.h"

namespace wattdb::storage {

using internal::FromRocks;
using internal::SegmentCfOptions;
using internal::Synced;

namespace {

using SteadyClock = std::chrono::steady_clock;

int64_t MillisSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t).count();
}
// Cuts from the top of the rows of `cf` in [m.lo, m.hi): reading from the end, each cut is
// the lowest user key of the next keys that hold at least `piece_bytes` (all versions).
// Returns up to `max_pieces` cuts in ascending order, each with at least one key below it
// (the lowest piece never takes everything). (Rows outside the segment's range, which no
// read sees, are not counted.)
Result<std::vector<std::string>> TopSplitKeys(rocksdb::Iterator* it, const SegmentMeta& m,
                                              uint64_t piece_bytes, size_t max_pieces) {
  std::vector<std::string> cuts;
  uint64_t bytes = 0;
  std::string key;  // the user key of the versions being counted
  const std::string end = m.hi.empty() ? std::string(1, kIndexSpace) : RowUserKey(m.hi);
  for (it->SeekForPrev(end); it->Valid() && it->key()[0] == kRowSpace && cuts.size() < max_pieces;
       it->Prev()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < 9) return Status::Corruption("stored key shorter than its version suffix");
    std::string_view user = UserKey(k).substr(1);
    if (user < m.lo) break;
    if (user != key) {
      if (!key.empty() && bytes >= piece_bytes) {  // `user` lies below: something stays
        cuts.push_back(key);
        bytes = 0;
      }
      key.assign(user);
    }
    bytes += k.size() + it->value().size();
  }
  RETURN_NOT_OK(FromRocks(it->status(), "split scan"));
  std::reverse(cuts.begin(), cuts.end());
  return cuts;
}

// Where the top `share` of the stored bytes of the rows of `cf` in [m.lo, m.hi) begins,
// estimated without reading a row: the highest start key of a table file above which
// RocksDB's size estimate finds at least that share, with at least one row below it; ""
// if there is none (few files, rows mostly in memtables).
std::string EstimatedTopStart(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                              const SegmentMeta& m, double share, rocksdb::Iterator* it) {
  const std::string lo = RowUserKey(m.lo);
  const std::string end = m.hi.empty() ? std::string(1, kIndexSpace) : RowUserKey(m.hi);
  rocksdb::ColumnFamilyMetaData meta;
  db->GetColumnFamilyMetaData(cf, &meta);
  std::vector<std::string> starts;  // row-space user keys
  for (const auto& level : meta.levels) {
    for (const auto& f : level.files) {
      const std::string& k = f.smallestkey;
      if (k.size() < 9 || k[0] != kRowSpace) continue;
      std::string user(UserKey(k));
      if (user > lo && user < end) starts.push_back(std::move(user));
    }
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  if (starts.empty()) return "";
  std::vector<rocksdb::Range> ranges{{lo, end}};
  for (const auto& st : starts) ranges.emplace_back(st, end);
  std::vector<uint64_t> sizes(ranges.size());
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  if (!db->GetApproximateSizes(o, cf, ranges.data(), static_cast<int>(ranges.size()), sizes.data())
           .ok() ||
      sizes[0] == 0) {
    return "";
  }
  for (size_t i = starts.size(); i-- > 0;) {
    if (static_cast<double>(sizes[i + 1]) < share * static_cast<double>(sizes[0])) continue;
    it->Seek(lo);
    bool below = it->Valid() && it->key()[0] == kRowSpace && it->key().size() >= 9 &&
                 UserKey(it->key().ToStringView()) < std::string_view(starts[i]);
    return below ? starts[i].substr(1) : "";
  }
  return "";
}

// The user key at which about half of the stored bytes (all versions) of the rows of `cf` in
// [m.lo, m.hi) lie below, and those bytes in `*total`; "" if they hold fewer than two keys.
Result<std::string> MiddleSplitKey(rocksdb::Iterator* it, const SegmentMeta& m, uint64_t* total) {
  std::vector<std::pair<std::string, uint64_t>> key_bytes;  // distinct user keys, cumulative
  *total = 0;
  for (it->Seek(RowUserKey(m.lo)); it->Valid() && it->key()[0] == kRowSpace; it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < 9) return Status::Corruption("stored key shorter than its version suffix");
    std::string_view user = UserKey(k).substr(1);
    if (!m.hi.empty() && user >= m.hi) break;
    *total += k.size() + it->value().size();
    if (key_bytes.empty() || key_bytes.back().first != user) key_bytes.emplace_back(user, 0);
    key_bytes.back().second = *total;
  }
  RETURN_NOT_OK(FromRocks(it->status(), "split scan"));
  if (key_bytes.size() < 2) return std::string();
  size_t split_idx = 1;
  while (split_idx + 1 < key_bytes.size() && key_bytes[split_idx - 1].second < *total / 2)
    split_idx++;
  return key_bytes[split_idx].first;
}

// Where a split cuts (SplitPieces): piece i holds [keys[i], keys[i + 1]), the last one up to
// the segment's end.
struct SplitCuts {
  std::vector<std::string> keys;
  // Only the lowest cut is known: the others fall in the copy, where a piece reaches
  // piece_bytes.
  bool in_copy = false;
  uint64_t total = 0;  // the segment's bytes before the split (measured, or its counter)
};

// Split from the top (`piece_bytes` > 0), the lowest cut is estimated from the table files
// (no row read) and the others fall in the copy; without an estimate, a scan from the end
// finds them all first. Otherwise, or if the top holds about everything: at the middle.
Result<SplitCuts> FindCuts(rocksdb::DB* db, Segment& seg, const SegmentMeta& m,
                           rocksdb::Iterator* it, uint64_t piece_bytes, size_t pieces) {
  SplitCuts c;
  if (piece_bytes > 0) {
    const uint64_t counted = seg.counters().bytes.load();
    if (counted > piece_bytes) {
      std::string start =
          EstimatedTopStart(db, seg.cf(), m, double(piece_bytes) * pieces / counted, it);
      if (!start.empty()) {
        c.keys.push_back(std::move(start));
        c.in_copy = true;
      }
    }
    if (!c.in_copy) {
      ASSIGN_OR_RETURN(c.keys, TopSplitKeys(it, m, piece_bytes, pieces));
    }
  }
  if (c.keys.empty()) {
    ASSIGN_OR_RETURN(std::string middle, MiddleSplitKey(it, m, &c.total));
    if (middle.empty())
      return Status::InvalidArgument(fmt::format("segment {} has fewer than two keys", m.id));
    c.keys.push_back(std::move(middle));
  } else {
    c.total = seg.counters().bytes.load();  // not measured: the counter before the split
  }
  return c;
}

// The new segments of a split while it is built: their column families and the table files
// their rows are copied into. Unless kept, the destructor drops the column families (closing
// the handles no new Segment took) and removes the files (ingested, a file lives on under
// RocksDB's name).
class SplitOutput {
 public:
  SplitOutput(rocksdb::DB* db, std::string dir, SegmentId first_id,
              rocksdb::ColumnFamilyOptions options)
      : db_(db), dir_(std::move(dir)), first_id_(first_id), options_(std::move(options)) {}
  ~SplitOutput() {
    writers_.clear();  // unfinished files are abandoned before they are removed
    std::error_code e;
    for (const auto& p : files_) std::filesystem::remove(p, e);
    if (kept_) return;
    for (size_t i = 0; i < handles_.size(); i++) {
      (void)db_->DropColumnFamily(handles_[i]);
      if (i >= fresh_.size()) (void)db_->DestroyColumnFamilyHandle(handles_[i]);
    }
  }

  // Pieces 0..n-1 (the cuts known already), created together: RocksDB rewrites its options
  // file, which lists every column family, once for all of them rather than once for each.
  Status Create(size_t n) {
    std::error_code ec;
    std::filesystem::create_directories(dir_ + "/ingest", ec);
    if (ec) return Status::IOError(fmt::format("create {}/ingest: {}", dir_, ec.message()));
    std::vector<std::string> names;
    for (size_t i = 0; i < n; i++) names.push_back(SegmentCfName(first_id_ + i));
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::Status cs = db_->CreateColumnFamilies(options_, names, &handles);
    handles_.insert(handles_.end(), handles.begin(), handles.end());
    RETURN_NOT_OK(FromRocks(cs, "split: create segments"));
    for (size_t i = 0; i < n; i++) RETURN_NOT_OK(OpenFile(i));
    return Status::OK();
  }
  // One more piece (a cut found in the copy).
  Status Add() {
    rocksdb::ColumnFamilyHandle* h = nullptr;
    RETURN_NOT_OK(
        FromRocks(db_->CreateColumnFamily(options_, SegmentCfName(first_id_ + handles_.size()), &h),
                  "split: create segment"));
    handles_.push_back(h);
    return OpenFile(handles_.size() - 1);
  }
  Status Put(size_t piece, const rocksdb::Iterator& it) {
    moved_[piece] += it.key().size() + it.value().size();
    return FromRocks(writers_[piece]->Put(it.key(), it.value()), "split: write table file");
  }
  // Every piece got something; their files are complete.
  Status Finish(SegmentId old_id) {
    for (size_t i = 0; i < writers_.size(); i++) {
      if (moved_[i] == 0)
        return Status::Corruption(
            fmt::format("segment {}: nothing in piece {} of its split", old_id, i));
      RETURN_NOT_OK(FromRocks(writers_[i]->Finish(), "split: finish table file"));
    }
    return Status::OK();
  }
  // The new segments, over `keys` (up to `m.hi`), made to ingest their files.
  Status Ingest(const SegmentMeta& m, const std::vector<std::string>& keys) {
    const size_t n = keys.size();
    for (size_t i = 0; i < n; i++) {
      fresh_.push_back(std::make_shared<Segment>(
          db_, handles_[i],
          SegmentMeta{first_id_ + i, m.table, keys[i], i + 1 < n ? keys[i + 1] : m.hi, m.indexes}));
    }
    rocksdb::IngestExternalFileOptions io;
    io.move_files = true;
    for (size_t i = 0; i < n; i++) {
      RETURN_NOT_OK(
          FromRocks(db_->IngestExternalFile(handles_[i], {files_[i]}, io), "split: ingest"));
    }
    return Status::OK();
  }
  void Keep() { kept_ = true; }

  const std::vector<std::shared_ptr<Segment>>& fresh() const { return fresh_; }
  // Bytes copied into each piece.
  const std::vector<uint64_t>& moved() const { return moved_; }
  uint64_t moved_total() const {
    return std::accumulate(moved_.begin(), moved_.end(), uint64_t{0});
  }

 private:
  Status OpenFile(size_t i) {  // piece i's table file
    files_.push_back(fmt::format("{}/ingest/split-{}.sst", dir_, first_id_ + i));
    writers_.push_back(std::make_unique<rocksdb::SstFileWriter>(
        rocksdb::EnvOptions(), db_->GetOptions(handles_[i]), handles_[i]));
    moved_.push_back(0);
    return FromRocks(writers_.back()->Open(files_.back()), "split: open table file");
  }

  rocksdb::DB* const db_;
  const std::string dir_;
  const SegmentId first_id_;
  const rocksdb::ColumnFamilyOptions options_;
  std::vector<std::shared_ptr<Segment>> fresh_;        // destroyed after the destructor's body
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;  // of pieces 0, 1, ...
  std::vector<std::string> files_;
  std::vector<std::unique_ptr<rocksdb::SstFileWriter>> writers_;
  std::vector<uint64_t> moved_;
  bool kept_ = false;
};

// Copies the rows at or above the lowest cut into `out`'s pieces (cutting anew, if
// `cuts->in_copy`, where a piece reaches `piece_bytes`, up to `pieces`), then the index entries
// of those rows, each deleted from the old segment (`old_cf`) in `b`. `*moved_rows`: the
// bytes of the rows alone.
Status CopyPieces(rocksdb::Iterator* it, rocksdb::ColumnFamilyHandle* old_cf, uint64_t piece_bytes,
                  size_t pieces, SplitCuts* cuts, SplitOutput* out, rocksdb::WriteBatch* b,
                  uint64_t* moved_rows) {
  std::vector<std::string>& keys = cuts->keys;
  size_t piece = 0;
  std::string last_user;  // cutting in the copy: the key whose versions are being moved
  for (it->Seek(RowUserKey(keys[0])); it->Valid() && it->key()[0] == kRowSpace; it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() < 9) return Status::Corruption("stored key shorter than its version suffix");
    std::string_view user = UserKey(k).substr(1);
    if (cuts->in_copy) {
      if (user != last_user) {
        if (out->moved()[piece] >= piece_bytes && keys.size() < pieces) {
          keys.emplace_back(user);
          RETURN_NOT_OK(out->Add());
          piece++;
        }
        last_user.assign(user);
      }
    } else {
      while (piece + 1 < keys.size() && user >= keys[piece + 1]) piece++;
    }
    RETURN_NOT_OK(out->Put(piece, *it));
  }
  *moved_rows = out->moved_total();
  // Index entries follow their rows (the value of an entry is its row's primary key), so
  // they come after all rows: every writer stays open until then.
  auto piece_of = [&](std::string_view user_key) {  // REQUIRES user_key >= keys[0]
    return static_cast<size_t>(std::upper_bound(keys.begin(), keys.end(), user_key) -
                               keys.begin()) -
           1;
  };
  for (it->Seek(std::string(1, kIndexSpace)); it->Valid() && it->key()[0] == kIndexSpace;
       it->Next()) {
    rocksdb::Slice v = it->value();
    if (v.empty()) return Status::Corruption("index entry without a version kind");
    std::string_view pk(v.data() + 1, v.size() - 1);
    if (pk >= keys[0]) {
      RETURN_NOT_OK(out->Put(piece_of(pk), *it));
      RETURN_NOT_OK(FromRocks(b->Delete(old_cf, it->key()), "split batch"));
    }
  }
  return FromRocks(it->status(), "split copy");
}

// Compacts the range a split moved out of `cf` (segment `id`), so that the size read back
// after a restart is the live size too; a larger one would split the segment again and again.
void CompactMoved(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, SegmentId id,
                  const std::string& from) {
  MaybeFail("node.split.before_compact");
  const auto t = SteadyClock::now();
  rocksdb::CompactRangeOptions o;
  o.exclusive_manual_compaction = false;  // other splits' compactions may run meanwhile
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Slice begin(from);
  rocksdb::Status cs = db->CompactRange(o, cf, &begin, nullptr);
  if (!cs.ok()) {
    Log("storage")->warn("segment {}: compaction after split: {}", id, cs.ToString());
  } else {
    Log("storage")->debug("segment {}: moved range compacted in {} ms", id, MillisSince(t));
  }
}

}  // namespace

Result<std::string> SegmentStore::Split(SegmentId id, SegmentId new_id, uint64_t top_bytes,
                                        std::function<void()>* compact_later) {
  ASSIGN_OR_RETURN(auto keys, SplitPieces(id, new_id, top_bytes, 1, compact_later));
  return keys.front();
}

Result<std::vector<std::string>> SegmentStore::SplitPieces(SegmentId id, SegmentId first_new_id,
                                                           uint64_t piece_bytes, size_t pieces,
                                                           std::function<void()>* compact_later) {
  // The store's map lock is not held while the split reads and batches up to a segment's
  // size: heartbeats, scans and commits of other segments go on meanwhile. (The master
  // keeps writers of this segment out.)
  MutexLock serial(split_mu_);
  const auto t_start = SteadyClock::now();
  pieces = std::max<size_t>(pieces, 1);
  ASSIGN_OR_RETURN(SegmentRef seg, SplitSource(id, first_new_id, pieces));
  SegmentMeta m = seg->meta();
  // Finding the cuts and copying read one state, through one iterator: old versions the
  // upkeep collects meanwhile would leave the pieces smaller than measured, or one empty.
  std::unique_ptr<rocksdb::Iterator> it;
  {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;  // what moves is read once; the hot blocks of other segments stay
    it.reset(db_->NewIterator(ro, seg->cf()));
  }
  ASSIGN_OR_RETURN(SplitCuts cuts, FindCuts(db_.get(), *seg, m, it.get(), piece_bytes, pieces));
  // The moved rows and index entries are written into table files that the new segments
  // ingest; the old segment loses the moved rows by one range deletion and the moved index
  // entries one by one, in the final write.
  SplitOutput out(db_.get(), dir_, first_new_id, SegmentCfOptions(gc_factory_));
  RETURN_NOT_OK(out.Create(cuts.keys.size()));
  MaybeFail("node.split.after_create");
  if (after_split_find_) after_split_find_();
  const int64_t find_ms = MillisSince(t_start);
  const auto t_copy = SteadyClock::now();
  rocksdb::WriteBatch b;
  uint64_t moved_rows = 0;
  RETURN_NOT_OK(CopyPieces(it.get(), seg->cf(), piece_bytes, pieces, &cuts, &out, &b, &moved_rows));
  RETURN_NOT_OK(out.Finish(id));
  it.reset();  // the state it pinned is copied
  const std::vector<std::string>& keys = cuts.keys;
  const size_t n = keys.size();
  RETURN_NOT_OK(out.Ingest(m, keys));
  MaybeFail("node.split.after_ingest");
  // Every stored row key of a user key at or above the lowest cut sorts at or above this one.
  RETURN_NOT_OK(FromRocks(
      b.DeleteRange(seg->cf(), RowUserKey(keys[0]), std::string(1, kIndexSpace)), "split batch"));
  SegmentMeta lower = m;
  lower.hi = keys[0];
  RETURN_NOT_OK(PutMeta(lower, &b));
  for (const auto& f : out.fresh()) RETURN_NOT_OK(PutMeta(f->meta(), &b));
  if (before_split_write_) before_split_write_();
  {
    // The write and the range change happen together under mu_, so a scan checks its range
    // either before both or after both.
    WriterLock l(mu_);
    // Dropped meanwhile (its table dropped): writing would bring its metadata back without
    // its column family, and the store would refuse to open.
    auto still = segments_.find(id);
    if (still == segments_.end() || still->second != seg) {
      return Status::NotFound(fmt::format("segment {} was dropped during its split", id));
    }
    {
      Segment* changing = seg.get();
      WriteWindow window(std::span(&changing, 1));
      RETURN_NOT_OK(FromRocks(db_->Write(Synced(), &b), "split write"));
      seg->newest().Clear();  // its keys above the split key are gone
    }
    out.Keep();
    {
      MutexLock ml(seg->mu_);
      seg->meta_.hi = keys[0];
    }
    seg->Changed();
    for (size_t i = 0; i < n; i++) {
      // New here: its rows are as fresh as the ones it left (column images).
      out.fresh()[i]->Changed();
      segments_[first_new_id + i] = out.fresh()[i];
    }
    PublishListLocked();
  }
  // The rows that stay: as measured above (the counter before the split may count versions
  // and deletions that compaction has not dropped yet), or, split from the top, the counter
  // less what moved (a later split at the middle measures it again). The moved range is
  // compacted away (CompactMoved).
  seg->counters().bytes = cuts.total > moved_rows ? cuts.total - moved_rows : 0;
  for (size_t i = 0; i < n; i++) out.fresh()[i]->counters().bytes = out.moved()[i];
  Log("storage")->info(
      "segment split seg={} new={}..{} moved_bytes={} piece_bytes={} asked={} estimated={} "
      "find_ms={} copy_ms={}",
      id, first_new_id, first_new_id + n - 1, out.moved_total(), piece_bytes, pieces, cuts.in_copy,
      find_ms, MillisSince(t_copy));
  auto compact = [db = db_.get(), seg, id, from = RowUserKey(keys[0])] {
    CompactMoved(db, seg->cf(), id, from);
  };
  if (compact_later) {
    *compact_later = std::move(compact);
  } else {
    compact();
  }
  MaybeFail("node.split.after_write");
  return keys;
}

Result<SegmentRef> SegmentStore::SplitSource(SegmentId id, SegmentId first_new_id, size_t pieces) {
  for (size_t i = 0; i < pieces; i++) {
    if (cancelled_splits_.count(first_new_id + i)) {
      return Status::Aborted(
          fmt::format("split of segment {} into {} was given up", id, first_new_id + i),
          sqlstate::kObjectNotInPrerequisiteState);
    }
  }
  ReaderLock l(mu_);
  auto found = segments_.find(id);
  if (found == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
  for (size_t i = 0; i < pieces; i++) {
    if (segments_.count(first_new_id + i))
      return Status::AlreadyExists(fmt::format("segment {} exists", first_new_id + i));
  }
  return found->second;
}

Result<std::string> SegmentStore::SettleSplit(SegmentId seg, SegmentId new_id) {
  MutexLock serial(split_mu_);
  auto fresh = Get(new_id);
  if (fresh.ok()) return (*fresh)->meta().lo;
  cancelled_splits_.insert(new_id);
  return Status::NotFound(fmt::format("segment {} was not split into {}", seg, new_id));
}

}  // namespace wattdb::storage
