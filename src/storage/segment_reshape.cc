// SegmentStore, the operations that change where a segment's rows live: Split (within this
// node) and Export/Import (between nodes).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/utilities/checkpoint.h>
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
  using SteadyClock = std::chrono::steady_clock;
  auto ms_since = [](SteadyClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t).count();
  };
  const auto t_start = SteadyClock::now();
  pieces = std::max<size_t>(pieces, 1);
  for (size_t i = 0; i < pieces; i++) {
    if (cancelled_splits_.count(first_new_id + i)) {
      return Status::Aborted(
          fmt::format("split of segment {} into {} was given up", id, first_new_id + i),
          sqlstate::kObjectNotInPrerequisiteState);
    }
  }
  SegmentRef seg;
  {
    WriterLock l(mu_);
    auto found = segments_.find(id);
    if (found == segments_.end())
      return Status::NotFound(fmt::format("segment {} is not here", id));
    for (size_t i = 0; i < pieces; i++) {
      if (segments_.count(first_new_id + i))
        return Status::AlreadyExists(fmt::format("segment {} exists", first_new_id + i));
    }
    seg = found->second;
  }
  SegmentMeta m = seg->meta();
  // Finding the cuts and copying read one state, through one iterator: old versions the
  // upkeep collects meanwhile would leave the pieces smaller than measured, or one empty.
  std::unique_ptr<rocksdb::Iterator> it;
  {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;  // what moves is read once; the hot blocks of other segments stay
    it.reset(db_->NewIterator(ro, seg->cf()));
  }

  // Piece i holds [keys[i], keys[i + 1]) (the last one up to m.hi). Split from the top, the
  // lowest cut is estimated from the table files (no row read) and the others fall where a
  // piece reaches `piece_bytes` in the copy; without an estimate, a scan from the end finds
  // them all first.
  std::vector<std::string> keys;
  bool cut_in_copy = false;
  if (piece_bytes > 0) {
    const uint64_t counted = seg->counters().bytes.load();
    if (counted > piece_bytes) {
      std::string start = EstimatedTopStart(db_.get(), seg->cf(), m,
                                            double(piece_bytes) * pieces / counted, it.get());
      if (!start.empty()) {
        keys.push_back(std::move(start));
        cut_in_copy = true;
      }
    }
    if (!cut_in_copy) {
      ASSIGN_OR_RETURN(keys, TopSplitKeys(it.get(), m, piece_bytes, pieces));
    }
  }
  // Otherwise (or if the top holds about everything): at the middle.
  uint64_t total = 0;
  if (keys.empty()) {
    ASSIGN_OR_RETURN(std::string middle, MiddleSplitKey(it.get(), m, &total));
    if (middle.empty())
      return Status::InvalidArgument(fmt::format("segment {} has fewer than two keys", id));
    keys.push_back(std::move(middle));
  } else {
    total = seg->counters().bytes.load();  // not measured: the counter before the split
  }
  auto piece_of = [&](std::string_view user_key) {  // REQUIRES user_key >= keys[0]
    return static_cast<size_t>(std::upper_bound(keys.begin(), keys.end(), user_key) -
                               keys.begin()) -
           1;
  };

  // A split that fails leaves no column family behind: `created` drops them and closes the
  // handles no new segment has taken yet (`fresh`, destroyed after it, closes the others).
  std::vector<std::shared_ptr<Segment>> fresh;
  struct DropUnlessKept {
    rocksdb::DB* db;
    const std::vector<std::shared_ptr<Segment>>& owners;
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    bool keep = false;
    ~DropUnlessKept() {
      if (keep) return;
      for (size_t i = 0; i < handles.size(); i++) {
        (void)db->DropColumnFamily(handles[i]);
        if (i >= owners.size()) (void)db->DestroyColumnFamilyHandle(handles[i]);
      }
    }
  } created{db_.get(), fresh, {}};
  // The moved rows and index entries are written into table files that the new segments
  // ingest (no log, no memtable, no flush); the old segment loses the moved rows by one range
  // deletion and the moved index entries one by one, in the final write.
  std::vector<std::string> files;
  struct RemoveFiles {  // ingested, a file lives on under RocksDB's name
    const std::vector<std::string>& paths;
    ~RemoveFiles() {
      std::error_code e;
      for (const auto& p : paths) std::filesystem::remove(p, e);
    }
  } remove_files{files};
  {
    std::error_code ec;
    std::filesystem::create_directories(dir_ + "/ingest", ec);
    if (ec) return Status::IOError(fmt::format("create {}/ingest: {}", dir_, ec.message()));
  }
  std::vector<std::unique_ptr<rocksdb::SstFileWriter>> writers;
  auto open_file = [&](rocksdb::ColumnFamilyHandle* h,
                       size_t i) -> Status {  // piece i's table file
    files.push_back(fmt::format("{}/ingest/split-{}.sst", dir_, first_new_id + i));
    writers.push_back(
        std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(), db_->GetOptions(h), h));
    return FromRocks(writers.back()->Open(files.back()), "split: open table file");
  };
  auto open_piece = [&](size_t i) -> Status {  // segment first_new_id + i and its table file
    rocksdb::ColumnFamilyHandle* h = nullptr;
    RETURN_NOT_OK(FromRocks(
        db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), SegmentCfName(first_new_id + i), &h),
        "split: create segment"));
    created.handles.push_back(h);
    return open_file(h, i);
  };
  {
    // The pieces known already are created together: RocksDB rewrites its options file, which
    // lists every column family, once for all of them rather than once for each.
    std::vector<std::string> names;
    for (size_t i = 0; i < keys.size(); i++) names.push_back(SegmentCfName(first_new_id + i));
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::Status cs = db_->CreateColumnFamilies(SegmentCfOptions(gc_factory_), names, &handles);
    created.handles.insert(created.handles.end(), handles.begin(), handles.end());
    RETURN_NOT_OK(FromRocks(cs, "split: create segments"));
    for (size_t i = 0; i < keys.size(); i++) RETURN_NOT_OK(open_file(created.handles[i], i));
  }
  MaybeFail("node.split.after_create");
  if (after_split_find_) after_split_find_();
  const int64_t find_ms = ms_since(t_start);
  const auto t_copy = SteadyClock::now();
  rocksdb::WriteBatch b;
  uint64_t moved_rows = 0;  // of the rows alone (before the index entries follow)
  std::vector<uint64_t> moved(keys.size(), 0);
  {
    auto move = [&](size_t piece, const rocksdb::Iterator& it) -> Status {
      moved[piece] += it.key().size() + it.value().size();
      return FromRocks(writers[piece]->Put(it.key(), it.value()), "split: write table file");
    };
    size_t piece = 0;
    std::string last_user;  // cutting in the copy: the key whose versions are being moved
    for (it->Seek(RowUserKey(keys[0])); it->Valid() && it->key()[0] == kRowSpace; it->Next()) {
      std::string_view k = it->key().ToStringView();
      if (k.size() < 9) return Status::Corruption("stored key shorter than its version suffix");
      std::string_view user = UserKey(k).substr(1);
      if (cut_in_copy) {
        if (user != last_user) {
          if (moved[piece] >= piece_bytes && keys.size() < pieces) {
            keys.emplace_back(user);
            moved.push_back(0);
            RETURN_NOT_OK(open_piece(keys.size() - 1));
            piece++;
          }
          last_user.assign(user);
        }
      } else {
        while (piece + 1 < keys.size() && user >= keys[piece + 1]) piece++;
      }
      RETURN_NOT_OK(move(piece, *it));
    }
    moved_rows = std::accumulate(moved.begin(), moved.end(), uint64_t{0});
    // Index entries follow their rows (the value of an entry is its row's primary key), so
    // they come after all rows: every writer stays open until then.
    for (it->Seek(std::string(1, kIndexSpace)); it->Valid() && it->key()[0] == kIndexSpace;
         it->Next()) {
      rocksdb::Slice v = it->value();
      if (v.empty()) return Status::Corruption("index entry without a version kind");
      std::string_view pk(v.data() + 1, v.size() - 1);
      if (pk >= keys[0]) {
        RETURN_NOT_OK(move(piece_of(pk), *it));
        RETURN_NOT_OK(FromRocks(b.Delete(seg->cf(), it->key()), "split batch"));
      }
    }
    RETURN_NOT_OK(FromRocks(it->status(), "split copy"));
    for (size_t i = 0; i < keys.size(); i++) {
      if (moved[i] == 0)
        return Status::Corruption(
            fmt::format("segment {}: nothing in piece {} of its split", id, i));
      RETURN_NOT_OK(FromRocks(writers[i]->Finish(), "split: finish table file"));
    }
  }
  it.reset();  // the state it pinned is copied
  const size_t n = keys.size();
  for (size_t i = 0; i < n; i++) {
    fresh.push_back(
        std::make_shared<Segment>(db_.get(), created.handles[i],
                                  SegmentMeta{first_new_id + i, m.table, keys[i],
                                              i + 1 < n ? keys[i + 1] : m.hi, m.indexes}));
  }
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  for (size_t i = 0; i < n; i++) {
    RETURN_NOT_OK(
        FromRocks(db_->IngestExternalFile(created.handles[i], {files[i]}, io), "split: ingest"));
  }
  MaybeFail("node.split.after_ingest");
  // Every stored row key of a user key at or above the lowest cut sorts at or above this one.
  RETURN_NOT_OK(FromRocks(
      b.DeleteRange(seg->cf(), RowUserKey(keys[0]), std::string(1, kIndexSpace)), "split batch"));
  SegmentMeta lower = m;
  lower.hi = keys[0];
  RETURN_NOT_OK(PutMeta(lower, &b));
  for (const auto& f : fresh) RETURN_NOT_OK(PutMeta(f->meta(), &b));
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
    created.keep = true;
    {
      MutexLock ml(seg->mu_);
      seg->meta_.hi = keys[0];
    }
    seg->Changed();
    for (size_t i = 0; i < n; i++) {
      fresh[i]->Changed();  // new here: its rows are as fresh as the ones it left (column images)
      segments_[first_new_id + i] = fresh[i];
    }
    PublishListLocked();
  }
  // The rows that stay: as measured above (the counter before the split may count versions
  // and deletions that compaction has not dropped yet), or, split from the top, the counter
  // less what moved (a later split at the middle measures it again). The moved range is
  // compacted away, so that the size read back after a restart is the live size too; a larger
  // one would split the segment again and again.
  seg->counters().bytes = total > moved_rows ? total - moved_rows : 0;
  for (size_t i = 0; i < n; i++) fresh[i]->counters().bytes = moved[i];
  Log("storage")->info(
      "segment split seg={} new={}..{} moved_bytes={} piece_bytes={} asked={} estimated={} "
      "find_ms={} copy_ms={}",
      id, first_new_id, first_new_id + n - 1,
      std::accumulate(moved.begin(), moved.end(), uint64_t{0}), piece_bytes, pieces, cut_in_copy,
      find_ms, ms_since(t_copy));
  auto compact = [this, seg, id, ms_since, from = RowUserKey(keys[0])] {
    MaybeFail("node.split.before_compact");
    const auto t = SteadyClock::now();
    rocksdb::CompactRangeOptions o;
    o.exclusive_manual_compaction = false;  // other splits' compactions may run meanwhile
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    rocksdb::Slice begin(from);
    rocksdb::Status cs = db_->CompactRange(o, seg->cf(), &begin, nullptr);
    if (!cs.ok()) {
      Log("storage")->warn("segment {}: compaction after split: {}", id, cs.ToString());
    } else {
      Log("storage")->debug("segment {}: moved range compacted in {} ms", id, ms_since(t));
    }
  };
  if (compact_later) {
    *compact_later = std::move(compact);
  } else {
    compact();
  }
  MaybeFail("node.split.after_write");
  return keys;
}

Result<std::string> SegmentStore::SettleSplit(SegmentId seg, SegmentId new_id) {
  MutexLock serial(split_mu_);
  auto fresh = Get(new_id);
  if (fresh.ok()) return (*fresh)->meta().lo;
  cancelled_splits_.insert(new_id);
  return Status::NotFound(fmt::format("segment {} was not split into {}", seg, new_id));
}

Result<SegmentExport> SegmentStore::Export(SegmentId id, const std::string& export_dir) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  // Two kinds of table file cannot be imported by another store, so a segment holding one is
  // compacted into ordinary files first: files a bulk commit ingested (their sequence number
  // is kept in this store's manifest, not in the file), and files holding range deletions (a
  // split's removal of the moved keys, a dropped index's entries, flushed before a compaction
  // applied them): RocksDB 7.8 bounds an imported file by its point keys, so a deletion that
  // reaches past them would be cut off there and the rows it removed would come back.
  RETURN_NOT_OK(FromRocks(db_->Flush(rocksdb::FlushOptions(), seg->cf()), "flush segment"));
  for (int pass = 0;; pass++) {
    rocksdb::TablePropertiesCollection props;
    RETURN_NOT_OK(FromRocks(db_->GetPropertiesOfAllTables(seg->cf(), &props), "table properties"));
    bool unfit = std::any_of(props.begin(), props.end(), [](const auto& fp) {
      const rocksdb::TableProperties& p = *fp.second;
      return p.user_collected_properties.count("rocksdb.external_sst_file.version") ||
             p.num_range_deletions > 0;
    });
    if (!unfit) break;
    // An index scan's snapshot may keep a deletion through a compaction: tried again, then
    // refused (the move fails and is asked for again later).
    if (pass > 2)
      return Status::Unavailable(
          fmt::format("segment {} keeps a table file no store can import", id));
    RETURN_NOT_OK(CompactSegment(id));
  }
  rocksdb::Checkpoint* cp_raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::Checkpoint::Create(db_.get(), &cp_raw), "checkpoint"));
  std::unique_ptr<rocksdb::Checkpoint> cp(cp_raw);
  rocksdb::ExportImportFilesMetaData* md = nullptr;
  RETURN_NOT_OK(FromRocks(cp->ExportColumnFamily(seg->cf(), export_dir, &md), "export segment"));
  std::unique_ptr<rocksdb::ExportImportFilesMetaData> owned(md);
  SegmentExport exp;
  exp.meta = seg->meta();
  exp.dir = export_dir;
  exp.comparator = md->db_comparator_name;
  for (const auto& f : md->files) {
    ExportedFile e;
    e.name = f.relative_filename.empty() ? f.name.substr(f.name.find_first_not_of('/'))
                                         : f.relative_filename;
    e.level = f.level;
    e.size = f.size;
    e.smallest_seqno = f.smallest_seqno;
    e.largest_seqno = f.largest_seqno;
    e.smallest_key = f.smallestkey;
    e.largest_key = f.largestkey;
    e.num_entries = f.num_entries;
    e.num_deletions = f.num_deletions;
    exp.files.push_back(std::move(e));
  }
  return exp;
}

Status SegmentStore::CheckImportable(const SegmentExport& exp) const {
  rocksdb::Options o(rocksdb::DBOptions(), SegmentCfOptions(gc_factory_));
  for (const auto& e : exp.files) {
    rocksdb::SstFileReader reader(o);
    const std::string path = exp.dir + "/" + e.name;
    RETURN_NOT_OK(FromRocks(reader.Open(path), "open imported file"));
    std::unique_ptr<rocksdb::Iterator> it(reader.NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    RETURN_NOT_OK(FromRocks(it->status(), "read imported file"));
    if (!it->Valid()) {
      return Status::InvalidArgument(
          fmt::format("segment {}: table file {} holds no rows", exp.meta.id, e.name));
    }
  }
  return Status::OK();
}

Status SegmentStore::Import(const SegmentExport& exp) {
  WriterLock l(mu_);
  if (segments_.count(exp.meta.id)) {
    return Status::AlreadyExists(fmt::format("segment {} already exists", exp.meta.id));
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  const std::string name = SegmentCfName(exp.meta.id);
  if (exp.files.empty()) {
    RETURN_NOT_OK(FromRocks(db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), name, &h),
                            "import empty"));
  } else {
    rocksdb::ExportImportFilesMetaData md;
    md.db_comparator_name = exp.comparator;
    for (const auto& e : exp.files) {
      rocksdb::LiveFileMetaData f;
      f.name = "/" + e.name;
      f.relative_filename = e.name;
      f.db_path = exp.dir;
      f.directory = exp.dir;
      f.level = e.level;
      f.size = e.size;
      f.smallest_seqno = e.smallest_seqno;
      f.largest_seqno = e.largest_seqno;
      f.smallestkey = e.smallest_key;
      f.largestkey = e.largest_key;
      f.num_entries = e.num_entries;
      f.num_deletions = e.num_deletions;
      f.column_family_name = name;
      md.files.push_back(std::move(f));
    }
    RETURN_NOT_OK(CheckImportable(exp));
    rocksdb::ImportColumnFamilyOptions io;
    io.move_files = true;
    RETURN_NOT_OK(FromRocks(
        db_->CreateColumnFamilyWithImport(SegmentCfOptions(gc_factory_), name, io, md, &h),
        fmt::format("import segment {}", exp.meta.id)));
  }
  rocksdb::WriteBatch b;
  RETURN_NOT_OK(PutMeta(exp.meta, &b));
  rocksdb::Status ws = db_->Write(Synced(), &b);
  if (!ws.ok()) {
    (void)db_->DropColumnFamily(h);
    db_->DestroyColumnFamilyHandle(h);
    return FromRocks(ws, "import metadata");
  }
  auto seg = std::make_shared<Segment>(db_.get(), h, exp.meta);
  seg->counters().bytes = LogicalBytes(h);
  seg->Changed();  // new here (column images are built for segments new since the start)
  segments_[exp.meta.id] = seg;
  PublishListLocked();
  return Status::OK();
}

}  // namespace wattdb::storage
