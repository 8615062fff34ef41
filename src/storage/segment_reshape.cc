// SegmentStore, the operations that move a segment between nodes: Export and Import (its
// split within a node: segment_split.cc).
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
