// SegmentRows: the rows a scan request sees in one segment: committed versions at the read
// timestamp, with the reading transaction's own pending writes merged in by key (for index
// scans: index entries, the transaction's rows keyed by their entries). Waits first for
// transactions whose commit the read must see (Participant::AwaitReadable).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
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
};

class SegmentRows {
 public:
  // Stale/NotFound if the segment does not cover the range (it split or moved).
  static Result<std::unique_ptr<SegmentRows>> Open(storage::SegmentStore& store, Participant& participant,
                                                   const ScanRequest& req);
  // Replaces `out` with up to `max_rows` rows (about `max_bytes`) in key order; false once
  // none are left (out is then empty).
  Result<bool> Next(size_t max_rows, size_t max_bytes, std::vector<storage::ScanRow>* out);
  // Like Next, handing each row to `fn` (views valid during the call); without pending writes
  // to merge, straight from the storage's buffers.
  Result<bool> Visit(size_t max_rows, size_t max_bytes, const storage::SegmentScanner::RowVisitor& fn);

 private:
  SegmentRows() = default;
  bool Hidden(const storage::ScanRow& r) const;
  void EmitPendingBefore(const std::string* key, std::vector<storage::ScanRow>* out);

  std::unique_ptr<storage::SegmentScanner> scanner_;
  std::map<std::string, storage::WriteOp> pending_;
  std::map<std::string, storage::WriteOp>::iterator next_pending_;
  std::set<std::string> hidden_pks_;  // index scans: rows the transaction rewrote
  IndexKeySpec spec_;
  bool exhausted_ = false;
  std::vector<storage::ScanRow> rows_;
  std::vector<storage::ScanRow> visit_buf_;
};

}  // namespace wattdb::node
