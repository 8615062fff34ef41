#include "storage/segment_store.h"

#include <algorithm>
#include <filesystem>

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include "common/bytes.h"
#include "common/codec.h"
#include "common/failpoint.h"
#include "common/logging.h"
#include "storage/kv_store.h"
#include "storage/log_prefill_fs.h"
#include "storage/segment_store_util.h"
#include "storage/version_gc.h"

namespace wattdb::storage {

namespace fs = std::filesystem;
using internal::FromRocks;
using internal::kOutcomePrefix;
using internal::kPreparedPrefix;
using internal::OutcomeKey;
using internal::PreparedKey;
using internal::SegmentCfOptions;
using internal::Synced;

namespace {

constexpr char kMetaPrefix[] = "m/seg/";

std::string MetaKey(SegmentId id) {
  std::string k = kMetaPrefix;
  for (int i = 7; i >= 0; i--) k.push_back(static_cast<char>((id >> (i * 8)) & 0xff));
  return k;
}

std::string EncodeMeta(const SegmentMeta& m) {
  std::string out;
  ByteWriter w(&out);
  w.U8(2);
  w.VarU64(m.id);
  w.VarU64(m.table);
  w.Str(m.lo);
  w.Str(m.hi);
  w.VarU64(m.indexes.size());
  for (const auto& ix : m.indexes) {
    w.VarU64(ix.id);
    w.VarU64(ix.columns.size());
    for (size_t i = 0; i < ix.columns.size(); i++) {
      w.VarU64(ix.columns[i]);
      w.U8(ix.desc[i] ? 1 : 0);
    }
  }
  return out;
}

// `*format` receives the metadata's format: 1 (before secondary indexes: row keys without
// their key-space byte, see Open) or 2.
Result<SegmentMeta> DecodeMeta(std::string_view in, int* format = nullptr) {
  ByteReader r(in);
  SegmentMeta m;
  uint8_t v = 0;
  uint64_t id, table;
  auto bad = [] { return Status::Corruption("segment metadata does not decode"); };
  if (!r.U8(&v) || (v != 1 && v != 2) || !r.VarU64(&id) || !r.VarU64(&table) || !r.Str(&m.lo) ||
      !r.Str(&m.hi)) {
    return bad();
  }
  if (format) *format = v;
  m.id = id;
  m.table = static_cast<TableId>(table);
  if (v == 1) return m;
  m.table = static_cast<TableId>(table);
  uint64_t n;
  if (!r.VarU64(&n) || n > in.size()) return bad();
  for (uint64_t i = 0; i < n; i++) {
    IndexKeySpec ix;
    uint64_t ixid, ncols;
    if (!r.VarU64(&ixid) || !r.VarU64(&ncols) || ncols > in.size()) return bad();
    ix.id = static_cast<uint32_t>(ixid);
    for (uint64_t c = 0; c < ncols; c++) {
      uint64_t col;
      uint8_t desc;
      if (!r.VarU64(&col) || !r.U8(&desc)) return bad();
      ix.columns.push_back(static_cast<int>(col));
      ix.desc.push_back(desc != 0);
    }
    m.indexes.push_back(std::move(ix));
  }
  return m;
}

rocksdb::Options BaseOptions(rocksdb::Env* env) {
  rocksdb::Options o;
  // A synced commit overwrites zeros already on disk: fdatasync need not write the log's
  // inode too (log_prefill_fs.h; RocksDB's log recycling is off in point-in-time recovery).
  o.env = env ? env : LogPrefillEnv();
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  o.max_background_jobs = 2;
  o.keep_log_file_num = kKeptInfoLogs;
  // Commits of a write group go into the memtables by the group's leader alone, and the
  // others block at once instead of spinning: with a node's few cores, waking each member
  // to insert its own batch (and spinning while waiting) cost more CPU than it saved.
  o.allow_concurrent_memtable_write = false;
  o.enable_write_thread_adaptive_yield = false;
  return o;
}

}  // namespace

std::string SegmentCfName(SegmentId id) { return fmt::format("seg_{}", id); }

Result<std::unique_ptr<SegmentStore>> SegmentStore::Open(const std::string& dir,
                                                         rocksdb::Env* env) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  std::unique_ptr<SegmentStore> store(new SegmentStore());
  store->dir_ = dir;
  store->gc_factory_ = std::make_shared<VersionGcFactory>(store->gc_horizon_);

  std::vector<std::string> names;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(BaseOptions(env), dir, &names);
  if (!ls.ok()) names = {rocksdb::kDefaultColumnFamilyName};
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  descs.reserve(names.size());
  for (const auto& n : names) {
    descs.emplace_back(n, n == rocksdb::kDefaultColumnFamilyName
                              ? rocksdb::ColumnFamilyOptions()
                              : SegmentCfOptions(store->gc_factory_));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::DB::Open(BaseOptions(env), dir, descs, &handles, &raw),
                          "open segment store " + dir));
  store->db_.reset(raw);

  std::map<std::string, rocksdb::ColumnFamilyHandle*> by_name;
  for (auto* h : handles) {
    if (h->GetName() == rocksdb::kDefaultColumnFamilyName) {
      raw->DestroyColumnFamilyHandle(h);
    } else {
      by_name[h->GetName()] = h;
    }
  }
  std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions()));
  // Handles not yet owned by a Segment must be released before an error return.
  auto fail = [&](Status st) {
    for (auto& [name, h] : by_name) raw->DestroyColumnFamilyHandle(h);
    return st;
  };
  for (it->Seek(kMetaPrefix); it->Valid() && it->key().starts_with(kMetaPrefix); it->Next()) {
    int format = 2;
    auto decoded = DecodeMeta(it->value().ToStringView(), &format);
    if (!decoded.ok()) return fail(decoded.status());
    SegmentMeta m = std::move(decoded).value();
    auto h = by_name.find(SegmentCfName(m.id));
    if (h == by_name.end()) {
      return fail(
          Status::Corruption(fmt::format("segment {} has metadata but no column family", m.id)));
    }
    if (format == 1) {
      // Written before secondary indexes: row keys lack their key-space byte. Rewrite them
      // and the metadata in one batch (an interrupted upgrade is simply redone).
      rocksdb::WriteBatch b;
      std::unique_ptr<rocksdb::Iterator> rows(raw->NewIterator(rocksdb::ReadOptions(), h->second));
      uint64_t n = 0;
      for (rows->SeekToFirst(); rows->Valid(); rows->Next(), n++) {
        std::string k(1, kRowSpace);
        k += rows->key().ToStringView();
        (void)b.Put(h->second, k, rows->value());
        (void)b.Delete(h->second, rows->key());
      }
      if (!rows->status().ok()) return fail(FromRocks(rows->status(), "upgrade segment"));
      std::string meta = EncodeMeta(m);
      (void)b.Put(MetaKey(m.id), meta);
      rocksdb::WriteOptions wo;
      wo.sync = true;
      Status st = FromRocks(raw->Write(wo, &b), "upgrade segment");
      if (!st.ok()) return fail(st);
      Log("storage")->info("segment upgraded to format 2 seg={} versions={}", m.id, n);
    }
    auto seg = std::make_shared<Segment>(raw, h->second, m);
    seg->counters().bytes = store->LogicalBytes(h->second);
    store->segments_[m.id] = seg;
    store->PublishListLocked();
    by_name.erase(h);
  }
  // Column families without metadata are leftovers of an interrupted create or import.
  for (auto& [name, h] : by_name) {
    Log("storage")->warn("dropping orphan column family cf={}", name);
    (void)raw->DropColumnFamily(h);
    raw->DestroyColumnFamilyHandle(h);
  }
  Log("storage")->info("segment store open dir={} segments={}", dir, store->segments_.size());
  return store;
}

SegmentStore::~SegmentStore() {
  segments_.clear();
  list_.reset();  // segments hold column family handles, which must go before the DB
  if (db_) (void)db_->Close();
}

uint64_t SegmentStore::LogicalBytes(rocksdb::ColumnFamilyHandle* cf) const {
  uint64_t size = 0;
  rocksdb::TablePropertiesCollection tables;
  if (db_->GetPropertiesOfAllTables(cf, &tables).ok()) {
    for (const auto& [file, props] : tables) size += props->raw_key_size + props->raw_value_size;
  }
  std::string lo, hi(16, '\xff');
  uint64_t count = 0, mem = 0;
  db_->GetApproximateMemTableStats(cf, rocksdb::Range(lo, hi), &count, &mem);
  return size + mem;
}

Status SegmentStore::PutMeta(const SegmentMeta& m, void* batch) const {
  auto* b = static_cast<rocksdb::WriteBatch*>(batch);
  return FromRocks(b->Put(MetaKey(m.id), EncodeMeta(m)), "segment metadata");
}

Status SegmentStore::CreateSegment(const SegmentMeta& meta) {
  WriterLock l(mu_);
  if (segments_.count(meta.id)) {
    return Status::AlreadyExists(fmt::format("segment {} already exists", meta.id));
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  RETURN_NOT_OK(
      FromRocks(db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), SegmentCfName(meta.id), &h),
                "create segment"));
  rocksdb::WriteBatch b;
  RETURN_NOT_OK(PutMeta(meta, &b));
  RETURN_NOT_OK(FromRocks(db_->Write(Synced(), &b), "create segment metadata"));
  segments_[meta.id] = std::make_shared<Segment>(db_.get(), h, meta);
  PublishListLocked();
  return Status::OK();
}

Status SegmentStore::DropSegment(SegmentId id) {
  SegmentRef seg;
  {
    WriterLock l(mu_);
    auto it = segments_.find(id);
    if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
    seg = it->second;
    RETURN_NOT_OK(FromRocks(db_->Delete(Synced(), MetaKey(id)), "drop metadata"));
    segments_.erase(it);
    PublishListLocked();
  }
  return FromRocks(db_->DropColumnFamily(seg->cf()), "drop segment");
}

Status SegmentStore::CheckLiveLocked(SegmentId id, const SegmentRef& seg) const {
  auto it = segments_.find(id);
  if (it == segments_.end() || it->second != seg)
    return Status::NotFound(fmt::format("segment {} was dropped", id));
  return Status::OK();
}

Result<SegmentRef> SegmentStore::Get(SegmentId id) const {
  ReaderLock l(mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
  return it->second;
}

void SegmentStore::PublishListLocked() {
  auto list = std::make_shared<std::vector<SegmentRef>>();
  for (const auto& [id, seg] : segments_) list->push_back(seg);
  MutexLock l(list_mu_);
  list_ = std::move(list);
}

std::shared_ptr<const std::vector<SegmentRef>> SegmentStore::PublishedList() const {
  MutexLock l(list_mu_);
  return list_;
}

std::vector<SegmentInfo> SegmentStore::List() const {
  auto list = PublishedList();
  std::vector<SegmentInfo> out;
  if (!list) return out;
  for (const auto& s : *list) {
    out.push_back(SegmentInfo{s->meta(), s->counters().bytes.load(), s->counters().rows_read.load(),
                              s->counters().rows_written.load(), s->counters().collections.load(),
                              s->counters().newest_hits.load()});
  }
  return out;
}

void SegmentStore::SetGcHorizon(Timestamp ts) {
  Timestamp cur = gc_horizon_->load();
  while (ts > cur && !gc_horizon_->compare_exchange_weak(cur, ts)) {
  }
}

void SegmentStore::StopCollecting() {
  collect_canceled_ = true;
  db_->DisableManualCompaction();  // ends a running one (and splits' later compactions)
}

Status SegmentStore::CompactSegment(SegmentId id) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  return Compact(*seg, nullptr);
}

Status SegmentStore::Compact(Segment& seg, std::atomic<bool>* canceled) {
  // The memtable goes to a table file, then every table file is rewritten into the bottom
  // level by one compaction, which holds all of the segment's versions (so the GC filter may
  // drop deletions too). CompactRange would carry the newly flushed file down level by level,
  // rewriting it at each (a compaction filter rules out moving files without rewriting).
  auto stopping = [&] {
    return canceled && canceled->load()
               ? Status::Unavailable("segment compaction canceled: the store is stopping")
               : Status::OK();
  };
  RETURN_NOT_OK(FromRocks(db_->Flush(rocksdb::FlushOptions(), seg.cf()), "flush segment"));
  rocksdb::ColumnFamilyMetaData md;
  db_->GetColumnFamilyMetaData(seg.cf(), &md);
  std::vector<std::string> files;
  for (const auto& level : md.levels) {
    for (const auto& f : level.files) files.push_back(f.name);
  }
  RETURN_NOT_OK(stopping());
  if (!files.empty()) {
    rocksdb::CompactionOptions co;
    co.compression = rocksdb::kDisableCompressionOption;  // the column family's
    co.output_file_size_limit = db_->GetOptions(seg.cf()).target_file_size_base;
    rocksdb::Status st =
        db_->CompactFiles(co, seg.cf(), files, static_cast<int>(md.levels.size()) - 1);
    if (!st.ok()) {
      RETURN_NOT_OK(stopping());
      // A background compaction holds some of the files: the slower way, which waits for it.
      rocksdb::CompactRangeOptions o;
      o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
      o.canceled = canceled;
      RETURN_NOT_OK(FromRocks(db_->CompactRange(o, seg.cf(), nullptr, nullptr), "compact segment"));
    }
  }
  seg.counters().bytes = LogicalBytes(seg.cf());
  return Status::OK();
}

Status SegmentStore::FlushSegment(SegmentId id) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  return FromRocks(db_->Flush(rocksdb::FlushOptions(), seg->cf()), "flush segment");
}

Result<uint64_t> SegmentStore::CompactionsOf(SegmentId id) const {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  std::map<std::string, std::string> stats;
  if (!db_->GetMapProperty(seg->cf(), rocksdb::DB::Properties::kCFStats, &stats)) {
    return Status::NotSupported("column family statistics");
  }
  // Flushes count as compactions into level 0; no compaction writes there.
  auto count = [&](const char* key) -> uint64_t {
    auto it = stats.find(key);
    return it == stats.end() ? 0 : static_cast<uint64_t>(std::stod(it->second));
  };
  return count("compaction.Sum.CompCount") - count("compaction.L0.CompCount");
}

Result<int> SegmentStore::CollectGarbage(int max_segments) {
  auto list = PublishedList();
  if (!list) return 0;
  Timestamp horizon = gc_horizon_->load();
  // The segments that waste the most work first.
  std::vector<std::pair<uint64_t, SegmentRef>> due;
  for (const auto& s : *list) {
    uint64_t work = s->counters().old_version_work.load();
    uint64_t bar = std::max(kCollectWorkMin, s->counters().bytes.load() / 1024);
    if (work >= bar && horizon > s->collected_at_horizon_.load()) due.emplace_back(work, s);
  }
  std::sort(due.begin(), due.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  int done = 0;
  for (const auto& [work, seg] : due) {
    if (done >= max_segments || collect_canceled_) break;
    seg->counters().old_version_work = 0;
    seg->collected_at_horizon_ = horizon;
    MaybeFail("node.collect.before_compact");
    Status st = Compact(*seg, &collect_canceled_);
    MaybeFail("node.collect.after_compact");
    if (collect_canceled_) break;  // st is Incomplete: the versions stay for a later compaction
    if (!st.ok()) {
      WriterLock l(mu_);
      if (CheckLiveLocked(seg->meta().id, seg).ok()) return st;
      continue;  // dropped meanwhile (moved away, merged): nothing to collect
    }
    seg->counters().collections++;
    done++;
  }
  return done;
}

Status SegmentStore::PutPrepared(uint64_t txn, const std::string& blob) {
  ASSIGN_OR_RETURN(uint64_t ticket, WritePrepared(txn, blob));
  return log_sync_.Sync(ticket);  // synced with the commits around it
}

Result<uint64_t> SegmentStore::WritePrepared(uint64_t txn, const std::string& blob) {
  RETURN_NOT_OK(
      FromRocks(db_->Put(rocksdb::WriteOptions(), PreparedKey(txn), blob), "prepare record"));
  return log_sync_.Written();
}

Status SegmentStore::ErasePrepared(uint64_t txn) {
  return FromRocks(db_->Delete(rocksdb::WriteOptions(), PreparedKey(txn)), "erase prepare record");
}

Result<std::vector<std::pair<uint64_t, std::string>>> SegmentStore::ListPrepared() const {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(kPreparedPrefix); it->Valid() && it->key().starts_with(kPreparedPrefix);
       it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() != sizeof(kPreparedPrefix) - 1 + 8)
      return Status::Corruption("bad prepare record key");
    uint64_t txn = 0;
    for (size_t i = k.size() - 8; i < k.size(); i++) txn = (txn << 8) | static_cast<uint8_t>(k[i]);
    out.emplace_back(txn, it->value().ToString());
  }
  RETURN_NOT_OK(FromRocks(it->status(), "list prepare records"));
  return out;
}

Result<std::optional<Timestamp>> SegmentStore::CommittedAt(uint64_t txn) const {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), OutcomeKey(txn), &v);
  if (s.IsNotFound()) return std::optional<Timestamp>();
  RETURN_NOT_OK(FromRocks(s, "read outcome record"));
  if (v.size() != 8) return Status::Corruption("bad outcome record");
  Timestamp ts = 0;
  for (char c : v) ts = (ts << 8) | static_cast<uint8_t>(c);
  return std::optional<Timestamp>(ts);
}

Status SegmentStore::ForgetOutcomesBefore(uint64_t txn) {
  rocksdb::WriteBatch b;
  RETURN_NOT_OK(FromRocks(
      b.DeleteRange(db_->DefaultColumnFamily(), kOutcomePrefix, OutcomeKey(txn)), "write batch"));
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &b), "forget outcomes");
}

Result<std::optional<std::string>> SegmentStore::LatestRow(const Segment& seg,
                                                           std::string_view pk) const {
  std::string rk = RowUserKey(pk);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg.cf()));
  it->Seek(MvccKey(rk, ~0ULL));
  if (!it->Valid()) {
    RETURN_NOT_OK(FromRocks(it->status(), "latest row"));
    return std::optional<std::string>();
  }
  std::string_view k = it->key().ToStringView();
  rocksdb::Slice v = it->value();
  if (k.size() < 8 || UserKey(k) != rk || v.empty() ||
      static_cast<VersionKind>(v[0]) != VersionKind::kPut) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::string(v.data() + 1, v.size() - 1));
}

Status SegmentStore::IndexChanges(const Segment& seg, const std::vector<IndexKeySpec>& specs,
                                  std::string_view pk, const std::string* old_row,
                                  const std::string* new_row, Timestamp ts, void* batch) const {
  auto* b = static_cast<rocksdb::WriteBatch*>(batch);
  std::vector<Value> old_vals, new_vals;
  if (old_row) RETURN_NOT_OK(DecodeRow(*old_row, &old_vals));
  if (new_row) RETURN_NOT_OK(DecodeRow(*new_row, &new_vals));
  for (const auto& spec : specs) {
    for (int c : spec.columns) {
      if ((old_row && c >= static_cast<int>(old_vals.size())) ||
          (new_row && c >= static_cast<int>(new_vals.size()))) {
        return Status::Corruption("indexed column beyond the row's width");
      }
    }
    std::optional<std::string> before, after;
    if (old_row)
      before = IndexSpacePrefix(spec.id) + EncodeIndexKey(spec, old_vals) + std::string(pk);
    if (new_row)
      after = IndexSpacePrefix(spec.id) + EncodeIndexKey(spec, new_vals) + std::string(pk);
    if (before == after) continue;
    std::string value;
    if (before) {
      value.assign(1, static_cast<char>(VersionKind::kDelete));
      value += pk;
      RETURN_NOT_OK(FromRocks(b->Put(seg.cf(), MvccKey(*before, ts), value), "index batch"));
    }
    if (after) {
      value.assign(1, static_cast<char>(VersionKind::kPut));
      value += pk;
      RETURN_NOT_OK(FromRocks(b->Put(seg.cf(), MvccKey(*after, ts), value), "index batch"));
    }
  }
  return Status::OK();
}

Result<LatestVersion> SegmentStore::Latest(SegmentId id, std::string_view pk) const {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg->cf()));
  std::string key = RowUserKey(pk);
  std::string start = MvccKey(key, ~0ULL);  // ~max = 0: sorts before every version of key
  it->Seek(start);
  LatestVersion lv;
  if (!it->Valid()) {
    RETURN_NOT_OK(FromRocks(it->status(), "latest version"));
    return lv;
  }
  std::string_view k = it->key().ToStringView();
  if (k.size() < 8 || UserKey(k) != key) return lv;
  rocksdb::Slice v = it->value();
  if (v.empty()) return Status::Corruption("stored value without a version kind");
  lv.found = true;
  lv.ts = VersionTs(k);
  lv.deleted = static_cast<VersionKind>(v[0]) == VersionKind::kDelete;
  return lv;
}

Status SegmentStore::LatestOf(SegmentId id, std::span<const std::string_view> keys,
                              std::vector<LatestVersion>* out) const {
  out->assign(keys.size(), LatestVersion{});
  if (keys.empty()) return Status::OK();
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg->cf()));
  std::string last_start, start, key;
  bool sought = false;
  for (size_t i = 0; i < keys.size(); i++) {
    key = RowUserKey(keys[i]);
    start = MvccKey(key, ~0ULL);  // sorts before every version of key
    // The iterator rests on the first entry at or after last_start; if that entry is at or
    // after `start` too and start > last_start, a seek to `start` would land on it again.
    bool reuse =
        sought && start > last_start && (!it->Valid() || it->key().ToStringView() >= start);
    if (!reuse) {
      it->Seek(start);
      sought = true;
    }
    last_start.swap(start);
    if (!it->Valid()) {
      RETURN_NOT_OK(FromRocks(it->status(), "latest version"));
      continue;
    }
    std::string_view k = it->key().ToStringView();
    if (k.size() < 8 || UserKey(k) != key) continue;
    rocksdb::Slice v = it->value();
    if (v.empty()) return Status::Corruption("stored value without a version kind");
    LatestVersion& lv = (*out)[i];
    lv.found = true;
    lv.ts = VersionTs(k);
    lv.deleted = static_cast<VersionKind>(v[0]) == VersionKind::kDelete;
  }
  return Status::OK();
}

Result<SegmentRef> SegmentStore::GetCovering(SegmentId id, std::string_view lo,
                                             std::string_view hi) const {
  ReaderLock l(mu_);
  return GetCoveringLocked(id, lo, hi);
}

Result<SegmentRef> SegmentStore::GetCoveringLocked(SegmentId id, std::string_view lo,
                                                   std::string_view hi) const {
  auto it = segments_.find(id);
  if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
  if (!it->second->Covers(lo, hi)) {
    return Status::Stale(fmt::format("segment {} no longer covers the requested range", id));
  }
  return it->second;
}

Status SegmentStore::AddIndex(SegmentId id, const IndexKeySpec& spec, Timestamp build_ts) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  SegmentMeta m = seg->meta();
  for (const auto& ix : m.indexes) {
    if (ix.id == spec.id)
      return Status::AlreadyExists(fmt::format("segment {} has index {}", id, spec.id));
  }
  rocksdb::WriteBatch b;
  ASSIGN_OR_RETURN(auto scan, Scan(id, m.lo, m.hi, build_ts));
  std::vector<ScanRow> rows;
  bool more = true;
  while (more) {
    rows.clear();
    ASSIGN_OR_RETURN(more, scan->Next(4096, &rows));
    for (const auto& r : rows)
      RETURN_NOT_OK(IndexChanges(*seg, {spec}, r.key, nullptr, &r.row, build_ts, &b));
  }
  WriterLock l(mu_);
  RETURN_NOT_OK(CheckLiveLocked(id, seg));
  m = seg->meta();
  m.indexes.push_back(spec);
  RETURN_NOT_OK(PutMeta(m, &b));
  rocksdb::WriteOptions wo;
  wo.sync = sync_commits_;
  RETURN_NOT_OK(FromRocks(db_->Write(wo, &b), "add index"));
  MutexLock ml(seg->mu_);
  seg->meta_.indexes = m.indexes;
  return Status::OK();
}

Status SegmentStore::DropIndex(SegmentId id, uint32_t index) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  WriterLock l(mu_);
  RETURN_NOT_OK(CheckLiveLocked(id, seg));
  SegmentMeta m = seg->meta();
  auto it = std::find_if(m.indexes.begin(), m.indexes.end(),
                         [&](const IndexKeySpec& s) { return s.id == index; });
  if (it == m.indexes.end()) return Status::OK();
  m.indexes.erase(it);
  rocksdb::WriteBatch b;
  std::string prefix = IndexSpacePrefix(index);
  RETURN_NOT_OK(FromRocks(b.DeleteRange(seg->cf(), prefix, PrefixSuccessor(prefix)), "drop index"));
  RETURN_NOT_OK(PutMeta(m, &b));
  RETURN_NOT_OK(FromRocks(db_->Write(Synced(), &b), "drop index"));
  MutexLock ml(seg->mu_);
  seg->meta_.indexes = m.indexes;
  return Status::OK();
}

}  // namespace wattdb::storage
