#include "storage/segment_store.h"

#include <filesystem>

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include "common/bytes.h"
#include "common/logging.h"
#include "storage/version_gc.h"

namespace wattdb::storage {

namespace fs = std::filesystem;

namespace {

constexpr char kMetaPrefix[] = "m/seg/";
constexpr char kPreparedPrefix[] = "p/txn/";

std::string PreparedKey(uint64_t txn) {
  std::string k = kPreparedPrefix;
  for (int i = 7; i >= 0; i--) k.push_back(static_cast<char>((txn >> (i * 8)) & 0xff));
  return k;
}

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return Status::NotFound(what + ": " + s.ToString());
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  if (s.IsInvalidArgument()) return Status::InvalidArgument(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

std::string MetaKey(SegmentId id) {
  std::string k = kMetaPrefix;
  for (int i = 7; i >= 0; i--) k.push_back(static_cast<char>((id >> (i * 8)) & 0xff));
  return k;
}

std::string EncodeMeta(const SegmentMeta& m) {
  std::string out;
  ByteWriter w(&out);
  w.U8(1);
  w.VarU64(m.id);
  w.VarU64(m.table);
  w.Str(m.lo);
  w.Str(m.hi);
  return out;
}

Result<SegmentMeta> DecodeMeta(std::string_view in) {
  ByteReader r(in);
  SegmentMeta m;
  uint8_t v;
  uint64_t id, table;
  if (!r.U8(&v) || v != 1 || !r.VarU64(&id) || !r.VarU64(&table) || !r.Str(&m.lo) ||
      !r.Str(&m.hi)) {
    return Status::Corruption("segment metadata does not decode");
  }
  m.id = id;
  m.table = static_cast<TableId>(table);
  return m;
}

rocksdb::Options BaseOptions() {
  rocksdb::Options o;
  o.create_if_missing = true;
  o.create_missing_column_families = true;
  o.max_background_jobs = 2;
  return o;
}

rocksdb::ColumnFamilyOptions SegmentCfOptions(const std::shared_ptr<rocksdb::CompactionFilterFactory>& gc) {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = 8 << 20;
  o.compaction_filter_factory = gc;
  return o;
}

}  // namespace

std::string SegmentCfName(SegmentId id) { return fmt::format("seg_{}", id); }

bool SegmentMeta::Covers(std::string_view a, std::string_view b) const {
  if (a < lo) return false;
  if (hi.empty()) return true;
  return !b.empty() && b <= hi;
}

Segment::~Segment() { db_->DestroyColumnFamilyHandle(cf_); }

SegmentScanner::~SegmentScanner() {
  it_.reset();
  if (snap_) db_->ReleaseSnapshot(snap_);
}

Result<bool> SegmentScanner::Next(size_t max_rows, std::vector<ScanRow>* out) {
  size_t produced = 0;
  while (!done_ && produced < max_rows) {
    if (!it_->Valid()) {
      RETURN_NOT_OK(FromRocks(it_->status(), "scan"));
      done_ = true;
      break;
    }
    rocksdb::Slice k = it_->key();
    if (k.size() < 8) return Status::Corruption("stored key shorter than its version suffix");
    std::string_view sk(k.data(), k.size());
    std::string_view user = UserKey(sk);
    if (!hi_.empty() && user >= hi_) {
      done_ = true;
      break;
    }
    if (have_last_ && user == last_key_) {  // an older version of a key already decided
      it_->Next();
      continue;
    }
    if (VersionTs(sk) > read_ts_) {  // too new for this snapshot; an older version may follow
      it_->Next();
      continue;
    }
    last_key_.assign(user);
    have_last_ = true;
    rocksdb::Slice v = it_->value();
    if (v.empty()) return Status::Corruption("stored value without a version kind");
    if (static_cast<VersionKind>(v[0]) == VersionKind::kPut) {
      out->push_back(ScanRow{last_key_, std::string(v.data() + 1, v.size() - 1)});
      produced++;
    }
    it_->Next();
  }
  seg_->counters().rows_read += produced;
  return !done_ || produced > 0;
}

Result<std::unique_ptr<SegmentStore>> SegmentStore::Open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  std::unique_ptr<SegmentStore> store(new SegmentStore());
  store->dir_ = dir;
  store->gc_factory_ = std::make_shared<VersionGcFactory>(store->gc_horizon_);

  std::vector<std::string> names;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(BaseOptions(), dir, &names);
  if (!ls.ok()) names = {rocksdb::kDefaultColumnFamilyName};
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) {
    descs.emplace_back(n, n == rocksdb::kDefaultColumnFamilyName ? rocksdb::ColumnFamilyOptions()
                                                                 : SegmentCfOptions(store->gc_factory_));
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  RETURN_NOT_OK(FromRocks(rocksdb::DB::Open(BaseOptions(), dir, descs, &handles, &raw),
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
  for (it->Seek(kMetaPrefix); it->Valid() && it->key().starts_with(kMetaPrefix); it->Next()) {
    ASSIGN_OR_RETURN(SegmentMeta m, DecodeMeta(it->value().ToStringView()));
    auto h = by_name.find(SegmentCfName(m.id));
    if (h == by_name.end()) {
      return Status::Corruption(fmt::format("segment {} has metadata but no column family", m.id));
    }
    auto seg = std::make_shared<Segment>(raw, h->second, m);
    seg->counters().bytes = store->ApproximateBytes(h->second);
    store->segments_[m.id] = seg;
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
  if (db_) (void)db_->Close();
}

uint64_t SegmentStore::ApproximateBytes(rocksdb::ColumnFamilyHandle* cf) const {
  rocksdb::SizeApproximationOptions o;
  o.include_memtables = true;
  o.include_files = true;
  std::string lo, hi(16, '\xff');
  rocksdb::Range r(lo, hi);
  uint64_t size = 0;
  (void)db_->GetApproximateSizes(o, cf, &r, 1, &size);
  return size;
}

Status SegmentStore::PutMeta(const SegmentMeta& m, void* batch) const {
  auto* b = static_cast<rocksdb::WriteBatch*>(batch);
  return FromRocks(b->Put(MetaKey(m.id), EncodeMeta(m)), "segment metadata");
}

Status SegmentStore::CreateSegment(const SegmentMeta& meta) {
  std::lock_guard<std::mutex> l(mu_);
  if (segments_.count(meta.id)) {
    return Status::AlreadyExists(fmt::format("segment {} already exists", meta.id));
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  RETURN_NOT_OK(FromRocks(db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), SegmentCfName(meta.id), &h),
                          "create segment"));
  rocksdb::WriteBatch b;
  RETURN_NOT_OK(PutMeta(meta, &b));
  RETURN_NOT_OK(FromRocks(db_->Write(rocksdb::WriteOptions(), &b), "create segment metadata"));
  segments_[meta.id] = std::make_shared<Segment>(db_.get(), h, meta);
  return Status::OK();
}

Status SegmentStore::DropSegment(SegmentId id) {
  SegmentRef seg;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = segments_.find(id);
    if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
    seg = it->second;
    RETURN_NOT_OK(FromRocks(db_->Delete(rocksdb::WriteOptions(), MetaKey(id)), "drop metadata"));
    segments_.erase(it);
  }
  return FromRocks(db_->DropColumnFamily(seg->cf()), "drop segment");
}

Result<SegmentRef> SegmentStore::Get(SegmentId id) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
  return it->second;
}

std::vector<SegmentInfo> SegmentStore::List() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<SegmentInfo> out;
  for (const auto& [id, s] : segments_) {
    out.push_back(SegmentInfo{s->meta(), s->counters().bytes.load(), s->counters().rows_read.load(),
                              s->counters().rows_written.load()});
  }
  return out;
}

void SegmentStore::SetGcHorizon(Timestamp ts) {
  Timestamp cur = gc_horizon_->load();
  while (ts > cur && !gc_horizon_->compare_exchange_weak(cur, ts)) {
  }
}

Status SegmentStore::CompactSegment(SegmentId id) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  rocksdb::CompactRangeOptions o;
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  RETURN_NOT_OK(FromRocks(db_->CompactRange(o, seg->cf(), nullptr, nullptr), "compact segment"));
  seg->counters().bytes = ApproximateBytes(seg->cf());
  return Status::OK();
}

Status SegmentStore::PutPrepared(uint64_t txn, const std::string& blob) {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Put(wo, PreparedKey(txn), blob), "prepare record");
}

Status SegmentStore::ErasePrepared(uint64_t txn) {
  return FromRocks(db_->Delete(rocksdb::WriteOptions(), PreparedKey(txn)), "erase prepare record");
}

Result<std::vector<std::pair<uint64_t, std::string>>> SegmentStore::ListPrepared() const {
  std::vector<std::pair<uint64_t, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(kPreparedPrefix); it->Valid() && it->key().starts_with(kPreparedPrefix); it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() != sizeof(kPreparedPrefix) - 1 + 8) return Status::Corruption("bad prepare record key");
    uint64_t txn = 0;
    for (size_t i = k.size() - 8; i < k.size(); i++) txn = (txn << 8) | static_cast<uint8_t>(k[i]);
    out.emplace_back(txn, it->value().ToString());
  }
  RETURN_NOT_OK(FromRocks(it->status(), "list prepare records"));
  return out;
}

Status SegmentStore::Apply(Timestamp ts, const std::vector<WriteOp>& ops, uint64_t prepared_txn) {
  rocksdb::WriteBatch b;
  if (prepared_txn) RETURN_NOT_OK(FromRocks(b.Delete(PreparedKey(prepared_txn)), "write batch"));
  std::vector<std::pair<SegmentRef, size_t>> touched;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& op : ops) {
      auto it = segments_.find(op.segment);
      if (it == segments_.end()) {
        return Status::NotFound(fmt::format("segment {} is not here", op.segment));
      }
      std::string value(1, static_cast<char>(op.kind));
      value += op.row;
      std::string key = MvccKey(op.key, ts);
      RETURN_NOT_OK(FromRocks(b.Put(it->second->cf(), key, value), "write batch"));
      touched.emplace_back(it->second, key.size() + value.size());
    }
  }
  rocksdb::WriteOptions wo;
  wo.sync = sync_commits_;
  RETURN_NOT_OK(FromRocks(db_->Write(wo, &b), "apply writes"));
  for (auto& [seg, bytes] : touched) {
    seg->counters().rows_written++;
    seg->counters().bytes += bytes;
  }
  return Status::OK();
}

Result<LatestVersion> SegmentStore::Latest(SegmentId id, std::string_view key) const {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg->cf()));
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

Result<std::unique_ptr<SegmentScanner>> SegmentStore::Scan(SegmentId id, std::string_view lo,
                                                           std::string_view hi,
                                                           Timestamp read_ts) const {
  std::unique_ptr<SegmentScanner> sc(new SegmentScanner());
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = segments_.find(id);
    if (it == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
    SegmentMeta m = it->second->meta();
    if (!m.Covers(lo, hi)) {
      return Status::Stale(fmt::format("segment {} no longer covers the requested range", id));
    }
    sc->db_ = db_.get();
    sc->seg_ = it->second;
    sc->snap_ = db_->GetSnapshot();  // taken under mu_: consistent with the range check
  }
  rocksdb::ReadOptions ro;
  ro.snapshot = sc->snap_;
  ro.fill_cache = true;
  sc->it_.reset(db_->NewIterator(ro, sc->seg_->cf()));
  sc->hi_.assign(hi);
  sc->read_ts_ = read_ts;
  sc->it_->Seek(std::string(lo));
  return sc;
}

Result<std::string> SegmentStore::Split(SegmentId id, SegmentId new_id) {
  std::lock_guard<std::mutex> l(mu_);
  auto found = segments_.find(id);
  if (found == segments_.end()) return Status::NotFound(fmt::format("segment {} is not here", id));
  if (segments_.count(new_id)) return Status::AlreadyExists(fmt::format("segment {} exists", new_id));
  SegmentRef seg = found->second;
  SegmentMeta m = seg->meta();

  // Find the user key at which half of the stored bytes lie below.
  uint64_t total = 0;
  std::vector<std::pair<std::string, uint64_t>> key_bytes;  // distinct user keys, cumulative
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg->cf()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      std::string_view k = it->key().ToStringView();
      if (k.size() < 8) return Status::Corruption("stored key shorter than its version suffix");
      total += k.size() + it->value().size();
      std::string_view user = UserKey(k);
      if (key_bytes.empty() || key_bytes.back().first != user) key_bytes.emplace_back(user, 0);
      key_bytes.back().second = total;
    }
    RETURN_NOT_OK(FromRocks(it->status(), "split scan"));
  }
  if (key_bytes.size() < 2) {
    return Status::InvalidArgument(fmt::format("segment {} has fewer than two keys", id));
  }
  size_t split_idx = 1;
  while (split_idx + 1 < key_bytes.size() && key_bytes[split_idx - 1].second < total / 2) {
    split_idx++;
  }
  std::string split_key = key_bytes[split_idx].first;

  rocksdb::ColumnFamilyHandle* h = nullptr;
  RETURN_NOT_OK(FromRocks(db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), SegmentCfName(new_id), &h),
                          "split: create segment"));
  auto fresh = std::make_shared<Segment>(db_.get(), h, SegmentMeta{new_id, m.table, split_key, m.hi});
  rocksdb::WriteBatch b;
  uint64_t moved = 0;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), seg->cf()));
    for (it->Seek(split_key); it->Valid(); it->Next()) {
      moved += it->key().size() + it->value().size();
      RETURN_NOT_OK(FromRocks(b.Put(h, it->key(), it->value()), "split batch"));
      RETURN_NOT_OK(FromRocks(b.Delete(seg->cf(), it->key()), "split batch"));
    }
    RETURN_NOT_OK(FromRocks(it->status(), "split copy"));
  }
  SegmentMeta lower = m;
  lower.hi = split_key;
  RETURN_NOT_OK(PutMeta(lower, &b));
  RETURN_NOT_OK(PutMeta(fresh->meta(), &b));
  rocksdb::Status ws = db_->Write(rocksdb::WriteOptions(), &b);
  if (!ws.ok()) {
    (void)db_->DropColumnFamily(h);
    return FromRocks(ws, "split write");
  }
  {
    std::lock_guard<std::mutex> ml(seg->mu_);
    seg->meta_.hi = split_key;
  }
  uint64_t old_bytes = seg->counters().bytes.load();
  seg->counters().bytes = old_bytes > moved ? old_bytes - moved : 0;
  fresh->counters().bytes = moved;
  segments_[new_id] = fresh;
  Log("storage")->info("segment split seg={} new={} moved_bytes={}", id, new_id, moved);
  return split_key;
}

Result<SegmentExport> SegmentStore::Export(SegmentId id, const std::string& export_dir) {
  ASSIGN_OR_RETURN(SegmentRef seg, Get(id));
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

Status SegmentStore::Import(const SegmentExport& exp) {
  std::lock_guard<std::mutex> l(mu_);
  if (segments_.count(exp.meta.id)) {
    return Status::AlreadyExists(fmt::format("segment {} already exists", exp.meta.id));
  }
  rocksdb::ColumnFamilyHandle* h = nullptr;
  const std::string name = SegmentCfName(exp.meta.id);
  if (exp.files.empty()) {
    RETURN_NOT_OK(FromRocks(db_->CreateColumnFamily(SegmentCfOptions(gc_factory_), name, &h), "import empty"));
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
    rocksdb::ImportColumnFamilyOptions io;
    io.move_files = true;
    RETURN_NOT_OK(FromRocks(db_->CreateColumnFamilyWithImport(SegmentCfOptions(gc_factory_), name, io, md, &h),
                            fmt::format("import segment {}", exp.meta.id)));
  }
  rocksdb::WriteBatch b;
  RETURN_NOT_OK(PutMeta(exp.meta, &b));
  rocksdb::Status ws = db_->Write(rocksdb::WriteOptions(), &b);
  if (!ws.ok()) {
    (void)db_->DropColumnFamily(h);
    db_->DestroyColumnFamilyHandle(h);
    return FromRocks(ws, "import metadata");
  }
  auto seg = std::make_shared<Segment>(db_.get(), h, exp.meta);
  seg->counters().bytes = ApproximateBytes(h);
  segments_[exp.meta.id] = seg;
  return Status::OK();
}

}  // namespace wattdb::storage
