// Streams of a node's scan replies: the rows of a segment, the column batches of a plan
// fragment run over them, or those of a plan a helper node runs (operator offloading).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <capnp/message.h>

#include "common/schema.h"
#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "rpc/node_client.h"

namespace wattdb::rpc {

// A scan of a secondary index's entries with index keys in [lo, hi) instead of primary keys.
struct IndexRange {
  uint32_t index = 0;
  std::string lo, hi;
};
// A scan stream over one segment: Open sends the request; each Next reads one batch.
// Destroying it before the last batch drops the connection (the node is still sending).
class ScanStream {
 public:
  // `txn` nonzero: the node overlays that transaction's pending writes. With `index`, the
  // stream yields that index's entries (keys = index key || primary key) and [lo, hi) is
  // the segment's primary-key range as the caller knows it (Stale if it shrank).
  static Result<std::unique_ptr<ScanStream>> Open(NodeClient& c, SegmentId seg,
                                                  const std::string& lo, const std::string& hi,
                                                  Timestamp read_ts, uint32_t batch_rows,
                                                  uint64_t txn = 0,
                                                  const IndexRange* index = nullptr);
  // The node runs `fragment` (a serialized plan whose leaf Scan reads these rows) and
  // streams its output as column batches (read them with NextColumns); with `analyze`, the
  // last batch comes with the fragment's operator counters.
  static Result<std::unique_ptr<ScanStream>> OpenFragment(
      NodeClient& c, SegmentId seg, const std::string& lo, const std::string& hi, Timestamp read_ts,
      uint64_t txn, const std::string& fragment, int64_t work_mem,
      const std::vector<Value>* params = nullptr, bool analyze = false,
      uint64_t follower_epoch = 0);
  // Sends `request` (any request answered with scanBatch replies) on a leased connection.
  static Result<std::unique_ptr<ScanStream>> Start(NodeClient& c, capnp::MessageBuilder& request);
  ~ScanStream();
  // Reads the next batch into keys/rows; sets *last on the final batch. Node-side errors
  // (Stale, NotFound) are returned as is.
  Status Next(std::vector<std::string>* keys, std::vector<std::string>* rows, bool* last);
  // A fragment stream's next batch (out->rows may be 0), and with a reply's first batch the
  // node CPU it reported (0 for the others); with a reply's last batch, the last primary key
  // the node has read (empty for the others) and whether it was the last reply (then `stats`:
  // the fragment's operator counters, in its plan's pre-order). A reply carries one batch or
  // several (scanBatch.columnSizes). With `cancel`, the wait
  // for the reply ends with 57014 once it is set, and the stream's connection is closed (the
  // node stops at its next send); the reply deadline holds either way.
  // `node_cpu` (optional), on the last reply of a runPlan: the CPU other nodes spent for it;
  // `owner_stats` (optional), there too: per owner, the counters of the fragments below the
  // plan's Exchanges, in the plan's pre-order (runPlan with analyze).
  using OwnerStats = std::vector<std::pair<NodeId, std::vector<exec::OperatorStats>>>;
  Status NextColumns(exec::Batch* out, std::string* resume_key, bool* last, uint64_t* cpu_nanos,
                     std::vector<exec::OperatorStats>* stats,
                     const std::atomic<bool>* cancel = nullptr,
                     std::vector<std::pair<NodeId, uint64_t>>* node_cpu = nullptr,
                     OwnerStats* owner_stats = nullptr);

 private:
  ScanStream(NodeClient& c, NodeClient::Lease lease) : client_(c), lease_(std::move(lease)) {}
  // Sends a scan request on a leased connection; the stream reads its replies.
  // Receives the next reply into pending_ and its CPU into *cpu_nanos; a node's error is
  // returned as is (pending_ stays empty, *last tells whether the stream ended).
  Status ReceiveFrame(uint64_t* cpu_nanos, bool* last, const std::atomic<bool>* cancel);

  NodeClient& client_;
  NodeClient::Lease lease_;
  bool finished_ = false;  // the last reply was received (the connection is idle again)
  // A reply frame whose batches are being read: its message, its batches' sizes and the
  // next one's index and offset in its columns.
  struct Pending {
    std::shared_ptr<net::ReceivedMessage> raw;
    std::shared_ptr<const exec::TextArena> msg;  // keeps raw alive: texts point into it
    std::string_view columns;
    std::vector<uint32_t> sizes;
    size_t next = 0, offset = 0;
    bool last = false;       // the frame was the stream's last reply
    std::string resume_key;  // told with its last batch
  } pending_;
};

// After a failed scan request: OK (having slept a growing backoff) if `st` is worth retrying
// once the partition map is read again (a segment moved or split: up to 200 tries; its node
// is unreachable: up to 12 tries, about 1 s); `st` itself if not.
Status ScanRetryBackoff(const Status& st, int* retries);

// Streams the visible rows of [lo, hi) of a segment; `on_batch` receives (keys, rows) and
// may return an error to stop. Errors from the node (Stale, NotFound) are returned as is.
Status RpcScan(NodeClient& c, SegmentId seg, const std::string& lo, const std::string& hi,
               Timestamp read_ts, uint32_t batch_rows,
               const std::function<Status(std::vector<std::string>& keys,
                                          std::vector<std::string>& rows)>& on_batch);

}  // namespace wattdb::rpc
