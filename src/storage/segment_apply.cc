// SegmentStore's commits: Apply writes a transaction's rows (and index entries) in one
// write batch, or ingests a large commit as table files.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <thread>

#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>

#include "common/failpoint.h"
#include "common/logging.h"
#include "storage/mvcc.h"
#include "storage/segment_store.h"
#include "storage/segment_store_util.h"

namespace wattdb::storage {

using internal::BigEndian64;
using internal::FromRocks;
using internal::OutcomeKey;
using internal::PreparedKey;

Status SegmentStore::Apply(Timestamp ts, const std::vector<WriteOp>& ops, uint64_t prepared_txn,
                           uint64_t txn, bool sync,
                           const std::function<void(uint64_t ticket)>& on_written) {
  // The segments are looked up under mu_; the batch (which may hold millions of rows) is
  // built without it, so heartbeats and other segments' work go on meanwhile.
  CommitSegments refs;
  {
    ReaderLock l(mu_);  // a lookup: commits share the lock
    for (size_t i = 0; i < ops.size(); i++) {
      const WriteOp& op = ops[i];
      if ((i > 0 && op.segment == ops[i - 1].segment) || refs.count(op.segment)) continue;
      auto it = segments_.find(op.segment);
      if (it == segments_.end()) {
        return Status::NotFound(fmt::format("segment {} is not here", op.segment));
      }
      refs.emplace(op.segment, it->second);
    }
  }
  SmallVector<Segment*> changing;
  for (auto& [id, ref] : refs) changing.push_back(ref.get());
  // Closed once the rows are readable, before the log sync: a writer let go by an early lock
  // release must find the segment changed since any read made while this write was open.
  std::optional<WriteWindow> window(std::in_place, std::span(changing.data(), changing.size()));
  WrittenCounts written;  // segment -> (rows, bytes)
  // Inside the write window: the data version grows once the rows are visible; a recording
  // of recent versions takes a commit's rows, and ends at an ingested one.
  auto count_written = [&](bool ingested) {
    for (auto& [id, rb] : written) {
      if (ingested) {
        refs.at(id)->Changed();
      } else {
        refs.at(id)->Committed(ts, ops);
      }
      refs.at(id)->counters().rows_written += rb.first;
      refs.at(id)->counters().bytes += rb.second;
    }
  };
  if (!prepared_txn) {
    ASSIGN_OR_RETURN(bool ingested, TryIngest(ts, ops, refs, txn, &written));
    if (ingested) {
      count_written(true);
      return Status::OK();
    }
  }
  // Each row's entry is put from its pieces (no key or value is built apart), into a batch
  // sized up front.
  size_t batch_bytes = 64;
  for (const auto& op : ops) batch_bytes += op.key.size() + op.row.size() + 24;
  rocksdb::WriteBatch b(batch_bytes);
  if (prepared_txn) RETURN_NOT_OK(FromRocks(b.Delete(PreparedKey(prepared_txn)), "write batch"));
  if (txn) RETURN_NOT_OK(FromRocks(b.Put(OutcomeKey(txn), BigEndian64(ts)), "write batch"));
  IndexedWrites indexed;
  RETURN_NOT_OK(BatchVersions(ts, ops, refs, &b, &written, &indexed));
  RETURN_NOT_OK(BatchIndexChanges(ts, indexed, refs, &b));
  // Written unsynced and synced with the commits around it (group_sync.h); the versions are
  // visible to no snapshot before Apply returns (the commit is still in flight at the master).
  RETURN_NOT_OK(FromRocks(db_->Write(rocksdb::WriteOptions(), &b), "apply writes"));
  const bool synced = sync_commits_ && (sync || !prepared_txn);
  const uint64_t ticket = synced ? log_sync_.Written() : 0;
  // Inside the write window: a reader that waited for this commit finds its versions.
  for (const auto& op : ops) {
    bool del = op.kind == VersionKind::kDelete;
    refs.at(op.segment)->newest().Update(op.key, NewestRow{ts, del, del ? std::string() : op.row});
  }
  count_written(false);
  window.reset();
  if (!synced) return Status::OK();
  if (on_written) on_written(ticket);
  return log_sync_.Sync(ticket);
}

Result<bool> SegmentStore::TryIngest(Timestamp ts, const std::vector<WriteOp>& ops,
                                     const CommitSegments& refs, uint64_t txn,
                                     WrittenCounts* written) {
  if (ops.size() < kIngestAbove || std::any_of(refs.begin(), refs.end(), [](const auto& r) {
        return !r.second->meta().indexes.empty();
      })) {
    return false;
  }
  // Ingested files are durable without the log: every commit the log holds is made durable
  // first, since this one may have been written over a commit whose sync was still due.
  if (sync_commits_) RETURN_NOT_OK(log_sync_.Sync(log_sync_.Written()));
  ASSIGN_OR_RETURN(bool ingested, ApplyByIngesting(ts, ops, refs, txn, written));
  if (!ingested) return false;
  for (auto& [id, ref] : refs) ref->newest().Clear();
  ingested_commits_++;
  return true;
}

Status SegmentStore::BatchVersions(Timestamp ts, const std::vector<WriteOp>& ops,
                                   const CommitSegments& refs, rocksdb::WriteBatch* b,
                                   WrittenCounts* written, IndexedWrites* indexed) const {
  const std::string inv_ts = BigEndian64(~ts);  // a version key's suffix (see MvccKey)
  const char row_space = kRowSpace;
  const SegmentRef* seg = nullptr;  // of op.segment
  SegmentId seg_id = 0;
  std::pair<uint64_t, uint64_t>* counts = nullptr;
  bool seg_indexed = false;
  for (const auto& op : ops) {
    if (!seg || op.segment != seg_id) {
      seg = &refs.at(op.segment);
      seg_id = op.segment;
      counts = &(*written)[op.segment];
      auto sp = indexed->specs.find(op.segment);
      if (sp == indexed->specs.end())
        sp = indexed->specs.emplace(op.segment, (*seg)->meta().indexes).first;
      seg_indexed = !sp->second.empty();
    }
    const char kind = static_cast<char>(op.kind);
    rocksdb::Slice key_parts[3] = {{&row_space, 1}, op.key, inv_ts};
    rocksdb::Slice value_parts[2] = {{&kind, 1}, op.row};
    RETURN_NOT_OK(FromRocks(b->Put((*seg)->cf(), rocksdb::SliceParts(key_parts, 3),
                                   rocksdb::SliceParts(value_parts, 2)),
                            "write batch"));
    counts->first++;
    counts->second += op.key.size() + 9 + op.row.size() + 1;
    if (seg_indexed) {
      IndexedWrite& e = indexed->keys[{op.segment, op.key}];
      e.last = &op;
      if (!e.prior && op.prior != Prior::kUnknown) e.prior = &op;
    }
  }
  return Status::OK();
}

Status SegmentStore::BatchIndexChanges(Timestamp ts, const IndexedWrites& indexed,
                                       const CommitSegments& refs, rocksdb::WriteBatch* b) const {
  for (const auto& [k, e] : indexed.keys) {
    const SegmentRef& seg = refs.at(k.first);
    const std::string* old_row = nullptr;
    std::optional<std::string> read;
    if (e.prior) {
      if (e.prior->prior == Prior::kRow) old_row = &e.prior->prior_row;
    } else {
      ASSIGN_OR_RETURN(read, LatestRow(*seg, e.last->key));
      seg->counters().prior_reads++;
      if (read) old_row = &*read;
    }
    RETURN_NOT_OK(IndexChanges(*seg, indexed.specs.at(k.first), e.last->key, old_row,
                               e.last->kind == VersionKind::kPut ? &e.last->row : nullptr, ts, b));
  }
  return Status::OK();
}

Status SegmentStore::SyncWal() {
  if (before_log_sync_) before_log_sync_();
  Status s = FromRocks(db_->SyncWAL(), "sync log");
  if (!s.ok()) {
    // Synced commits are written before their group's sync, so their batches are in the log
    // (perhaps not on disk) and already in the memtables, where reads would find them once
    // the commits leave the master's in-flight set; and a sync retried after a failure may
    // report success for pages the kernel dropped. No answer this store gives can be trusted,
    // and whether those commits happened is for the disk to tell. As PostgreSQL does when a
    // WAL flush fails, the process ends; recovery reads back what the log holds, and the
    // master settles the commits that were in flight as after any crash of the node (a node
    // hosted in the master ends it with it).
    Log("storage")->critical(
        "log sync failed in {}: {}; ending the process so that recovery reads the log back", dir_,
        s.ToString());
    spdlog::shutdown();
    std::_Exit(kLogSyncFailedExit);
  }
  return s;
}

namespace {

// One table file of an ingested commit, written by one thread.
struct IngestPart {
  IngestPart(const rocksdb::Options& o, rocksdb::ColumnFamilyHandle* cf)
      : writer(rocksdb::EnvOptions(), o, cf) {}
  rocksdb::SstFileWriter writer;
  Status status;
  bool in_order = true;
  uint64_t rows = 0, bytes = 0;
};

// Where a segment's ops (indices `idx`, in key order) are cut into about `parts` files: the
// first op of each part, then idx.size(). A cut falls between two keys whose stored forms
// (key + version suffix) are in order too, so that the files' ranges do not overlap.
std::vector<size_t> IngestCuts(const std::vector<WriteOp>& ops, const std::vector<uint32_t>& idx,
                               const std::string& inv_ts, size_t parts) {
  auto cut_between = [&](size_t c) {
    const std::string& a = ops[idx[c - 1]].key;
    const std::string& b = ops[idx[c]].key;
    return a != b && a + inv_ts < b + inv_ts;
  };
  std::vector<size_t> cuts = {0};
  for (size_t p = 1; p < parts; p++) {
    size_t c = std::max(cuts.back() + 1, idx.size() * p / parts);
    while (c < idx.size() && !cut_between(c)) c++;
    if (c < idx.size()) cuts.push_back(c);
  }
  cuts.push_back(idx.size());
  return cuts;
}

// Writes part p of `out` (ops idx[cuts[p]..cuts[p+1])) on up to `threads` threads; each
// part's status, order and counts are in its IngestPart.
void WriteIngestParts(const std::vector<WriteOp>& ops, const std::vector<uint32_t>& idx,
                      const std::vector<size_t>& cuts, const std::string& inv_ts, size_t threads,
                      std::vector<std::unique_ptr<IngestPart>>& out) {
  auto write = [&](size_t p) {
    IngestPart& part = *out[p];
    std::string key, value;
    for (size_t j = cuts[p]; j < cuts[p + 1]; j++) {
      if (j + 1 < idx.size() && ops[idx[j + 1]].key == ops[idx[j]].key)
        continue;  // the key's last write wins
      const WriteOp& op = ops[idx[j]];
      key.assign(1, kRowSpace);
      key += op.key;
      key += inv_ts;
      value.assign(1, static_cast<char>(op.kind));
      value += op.row;
      if (!part.writer.Put(key, value).ok()) {  // out of order: a key that prefixes another
        part.in_order = false;
        return;
      }
      part.rows++;
      part.bytes += key.size() + value.size();
    }
    part.status = FromRocks(part.writer.Finish(), "write table file for ingestion");
  };
  std::atomic<size_t> next_part{0};
  auto worker = [&] {
    for (size_t p; (p = next_part.fetch_add(1)) < out.size();) write(p);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < std::min(threads, out.size()); t++) helpers.emplace_back(worker);
  worker();
  for (auto& t : helpers) t.join();
}

}  // namespace

Result<bool> SegmentStore::ApplyByIngesting(Timestamp ts, const std::vector<WriteOp>& ops,
                                            const CommitSegments& refs, uint64_t txn,
                                            WrittenCounts* written) {
  std::map<SegmentId, std::vector<uint32_t>> by_segment;  // op indices
  std::vector<uint32_t>* current = nullptr;
  for (uint32_t i = 0; i < ops.size(); i++) {
    if (i == 0 || ops[i].segment != ops[i - 1].segment) current = &by_segment[ops[i].segment];
    current->push_back(i);
  }
  std::string dir = dir_ + "/ingest";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("create {}: {}", dir, ec.message()));
  std::vector<std::string> files;
  struct Cleanup {  // the files' names go; ingested files live on under RocksDB's names
    std::vector<std::string>* files;
    ~Cleanup() {
      std::error_code e;
      for (const auto& f : *files) std::filesystem::remove(f, e);
    }
  } cleanup{&files};
  rocksdb::IngestExternalFileOptions io;
  io.move_files = true;
  std::vector<rocksdb::IngestExternalFileArg> args;
  // `open` starts a table file under a fresh name; `add` finishes it and queues it for `cf`.
  auto open = [&](const std::string& name, rocksdb::SstFileWriter* w) {
    files.push_back(fmt::format("{}/{}-{}.sst", dir, ts, name));
    return FromRocks(w->Open(files.back()), "open table file for ingestion");
  };
  auto add = [&](rocksdb::ColumnFamilyHandle* cf, rocksdb::SstFileWriter* w) {
    RETURN_NOT_OK(FromRocks(w->Finish(), "write table file for ingestion"));
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = cf;
    arg.external_files = {files.back()};
    arg.options = io;
    args.push_back(std::move(arg));
    return Status::OK();
  };
  WrittenCounts counts;
  const std::string inv_ts = BigEndian64(~ts);
  // A segment's rows, in key order, are cut into parts (at a change of key) of at least
  // ingest_file_rows_ rows for each of up to `threads` threads, and of at most about
  // kIngestFileBytes each, written to table files of their own by those threads: the files
  // cover disjoint key ranges and are ingested together. Small files keep the compactions of
  // the segment's later splits small (each rewrites the file its split key falls in).
  const size_t threads = std::max(1u, std::min(4u, std::thread::hardware_concurrency()));
  for (auto& [id, idx] : by_segment) {
    auto by_key = [&](uint32_t a, uint32_t b) { return ops[a].key < ops[b].key; };
    if (!std::is_sorted(idx.begin(), idx.end(), by_key))
      std::stable_sort(idx.begin(), idx.end(), by_key);
    const SegmentRef& seg = refs.at(id);
    uint64_t segment_bytes = 0;
    for (uint32_t i : idx) segment_bytes += ops[i].key.size() + ops[i].row.size();
    size_t parts =
        std::max<size_t>({1, std::min(threads, idx.size() / ingest_file_rows_),
                          std::min<uint64_t>(idx.size(), segment_bytes / kIngestFileBytes)});
    std::vector<size_t> cuts = IngestCuts(ops, idx, inv_ts, parts);
    std::vector<std::unique_ptr<IngestPart>> out;
    for (size_t p = 0; p + 1 < cuts.size(); p++) {
      out.push_back(std::make_unique<IngestPart>(db_->GetOptions(seg->cf()), seg->cf()));
      RETURN_NOT_OK(open(fmt::format("{}-{}", id, p), &out.back()->writer));
    }
    WriteIngestParts(ops, idx, cuts, inv_ts, threads, out);
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = seg->cf();
    arg.options = io;
    auto& [rows, bytes] = counts[id];
    for (size_t p = 0; p < out.size(); p++) {
      if (!out[p]->in_order) return false;
      RETURN_NOT_OK(out[p]->status);
      rows += out[p]->rows;
      bytes += out[p]->bytes;
      arg.external_files.push_back(files[files.size() - out.size() + p]);
    }
    args.push_back(std::move(arg));
  }
  if (txn) {  // the outcome record, ingested with the rows
    rocksdb::ColumnFamilyHandle* cf = db_->DefaultColumnFamily();
    rocksdb::SstFileWriter w(rocksdb::EnvOptions(), db_->GetOptions(cf), cf);
    RETURN_NOT_OK(open("outcome", &w));
    RETURN_NOT_OK(FromRocks(w.Put(OutcomeKey(txn), BigEndian64(ts)), "write outcome record"));
    RETURN_NOT_OK(add(cf, &w));
  }
  MaybeFail("node.ingest.before");
  RETURN_NOT_OK(FromRocks(db_->IngestExternalFiles(args), "ingest committed rows"));
  *written = std::move(counts);
  return true;
}

}  // namespace wattdb::storage
