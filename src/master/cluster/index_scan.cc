#include "master/cluster/index_scan.h"

#include "common/codec.h"

namespace wattdb::master {

IndexScanSource::IndexScanSource(Catalog& catalog, NodeRegistry& registry, TableId table,
                                 uint32_t index, std::string lo, std::string hi, Timestamp ts,
                                 size_t ncols, uint64_t txn)
    : catalog_(catalog),
      registry_(registry),
      table_(table),
      index_(index),
      lo_(std::move(lo)),
      hi_(std::move(hi)),
      ts_(ts),
      ncols_(ncols),
      txn_(txn) {}

Status IndexScanSource::Open() {
  const Part& p = parts_.front();
  ASSIGN_OR_RETURN(auto client, registry_.Client(p.seg.node));
  IndexRange range{index_, p.cursor, hi_};
  ASSIGN_OR_RETURN(stream_, ScanStream::Open(*client, p.seg.id, p.seg.lo, p.seg.hi, ts_,
                                             exec::kBatchRows, txn_, &range));
  client_ = client;
  return Status::OK();
}

Status IndexScanSource::Retry(const Status& st) {
  RETURN_NOT_OK(ScanRetryBackoff(st, &retries_));
  Part old = std::move(parts_.front());
  parts_.pop_front();
  auto now = catalog_.SegmentsOverlapping(table_, old.seg.lo, old.seg.hi);
  for (auto it = now.rbegin(); it != now.rend(); ++it) parts_.push_front(Part{*it, old.cursor});
  return Status::OK();
}

Result<bool> IndexScanSource::Next(exec::Batch& out) {
  if (!started_) {
    for (auto& s : catalog_.SegmentsOverlapping(table_, "", "")) parts_.push_back(Part{s, lo_});
    started_ = true;
  }
  while (out.rows == 0) {
    if (!stream_) {
      if (parts_.empty()) return false;
      Status st = Open();
      if (!st.ok()) {
        RETURN_NOT_OK(Retry(st));
        continue;
      }
    }
    bool last = false;
    Status st = stream_->Next(&keys_, &rows_, &last);
    if (!st.ok()) {
      stream_.reset();
      RETURN_NOT_OK(Retry(st));
      continue;
    }
    std::vector<Value> row;
    for (auto& r : rows_) {
      RETURN_NOT_OK(DecodeRow(r, &row));
      if (row.size() != ncols_) return Status::Corruption("row width does not match the table");
      out.AppendRow(std::move(row));
    }
    // Entry keys (index key || primary key) are prefix-free: key + "\0" follows the key.
    if (!keys_.empty()) parts_.front().cursor = keys_.back() + std::string(1, '\0');
    if (last) {
      stream_.reset();
      parts_.pop_front();
    }
  }
  return true;
}

}  // namespace wattdb::master
