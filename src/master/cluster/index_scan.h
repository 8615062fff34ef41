// IndexScanSource: the rows of a table whose secondary-index keys lie in [lo, hi), read from
// the index entries every segment keeps for its own rows (storage/mvcc.h).
//
// An index is partitioned like its table, so a lookup visits every segment of the table;
// within a segment rows come in index-key order. Each segment's stream remembers the last
// entry it returned; a segment that moved (NotFound) or split (Stale) is re-resolved in the
// partition map and its successors resume after that entry, so every row comes exactly once.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "master/catalog/catalog.h"
#include "master/nodes/node_registry.h"
#include "master/nodes/node_rpc.h"
#include "query/exec/context.h"

namespace wattdb::master {

class IndexScanSource : public exec::RowSource {
 public:
  // `txn` nonzero: also that transaction's pending writes. `ncols`: the table's width.
  // `catalog` and `registry` are borrowed and outlive the source.
  IndexScanSource(Catalog& catalog, NodeRegistry& registry, TableId table, uint32_t index,
                  std::string lo, std::string hi, Timestamp ts, size_t ncols, uint64_t txn);
  Result<bool> Next(exec::Batch& out) override;

 private:
  struct Part {
    SegmentEntry seg;
    std::string cursor;  // next entry key to read (inclusive)
  };
  Status Open();
  // Replaces the front part by the segments now covering its range, after a failed attempt.
  Status Retry(const Status& st);

  Catalog& catalog_;
  NodeRegistry& registry_;
  TableId table_;
  uint32_t index_;
  std::string lo_, hi_;
  Timestamp ts_;
  size_t ncols_;
  uint64_t txn_;
  bool started_ = false;
  int retries_ = 0;
  std::deque<Part> parts_;
  std::shared_ptr<NodeClient> client_;  // keeps the stream's client alive
  std::unique_ptr<ScanStream> stream_;
  std::vector<std::string> keys_, rows_;
};

}  // namespace wattdb::master
