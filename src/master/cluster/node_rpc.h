// Typed calls from the master to a node's data port (see proto/node_service.capnp).
// Every function converts the node's Status back into a wattdb::Status.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "master/cluster/node_client.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"

namespace wattdb::master {

struct RemoteWrite {
  SegmentId segment = 0;
  std::string key;
  bool is_delete = false;
  std::string row;
  enum class Check { kNone, kInsert, kUpdate, kLock } check = Check::kNone;
};

struct PullStats {
  uint64_t bytes = 0;
  uint32_t files = 0;
  uint64_t micros = 0;
};

struct RemoteSegment {
  SegmentId id = 0;
  TableId table = 0;
  std::string lo, hi;
  uint64_t bytes = 0, rows_read = 0, rows_written = 0;
};

Status RpcCreateSegment(NodeClient& c, SegmentId id, TableId table, const std::string& lo,
                        const std::string& hi);
Status RpcDropSegment(NodeClient& c, SegmentId id);
// Asks the node's host OS to power off (suspend = false) or suspend; the node answers first.
Status RpcHostPower(NodeClient& c, bool suspend);
// `expect` nonzero: the node checks that it received exactly that many writes of `txn` in
// all (else it lost some in a restart: the txn aborts there with 40001). `min_commit_ts`
// (durable): the commit timestamp, if any, will exceed it.
Status RpcPrepare(NodeClient& c, uint64_t txn, Timestamp snapshot, const std::vector<RemoteWrite>& w,
                  bool durable = false, uint64_t expect = 0, Timestamp min_commit_ts = 0);
// Prepares and commits a single-node transaction in one round trip; 55P03 if a key is
// locked by another transaction (nothing was done: fall back to prepare + commit).
// `delivered` as in NodeClient::Call: after a failure, whether the node may have committed.
Status RpcPrepareCommit(NodeClient& c, uint64_t txn, Timestamp snapshot, const std::vector<RemoteWrite>& ws,
                        Timestamp commit_ts, std::vector<std::pair<SegmentId, uint64_t>>* sizes,
                        bool* delivered = nullptr);
// Commits; `sizes` (optional) receives (segment, bytes) of the segments written. OK also if
// the node committed `txn` before (a repeated commit applies nothing twice).
Status RpcCommit(NodeClient& c, uint64_t txn, Timestamp commit_ts,
                 std::vector<std::pair<SegmentId, uint64_t>>* sizes = nullptr, uint64_t expect = 0,
                 bool* delivered = nullptr);
// The timestamp at which `txn` committed on the node, or 0 if it did not (or not yet).
Result<Timestamp> RpcOutcome(NodeClient& c, uint64_t txn);
Status RpcAbort(NodeClient& c, uint64_t txn);
// Drops the writes `txn` prepared on the node after its first `keep` (a failed statement's).
Status RpcRollbackTo(NodeClient& c, uint64_t txn, uint64_t keep);
// Ends `txn`'s row-lock wait for `holder` with 40P01 (NotFound if it no longer waits so).
Status RpcBreakWait(NodeClient& c, uint64_t txn, uint64_t holder);
Status RpcGcHorizon(NodeClient& c, Timestamp horizon);
Status RpcCompact(NodeClient& c, SegmentId seg);
// Makes `seg` maintain index `spec`, with entries for the rows visible at `build_ts`.
Status RpcAddIndex(NodeClient& c, SegmentId seg, const IndexKeySpec& spec, Timestamp build_ts);
Status RpcDropIndex(NodeClient& c, SegmentId seg, uint32_t index);

// A scan of a secondary index's entries with index keys in [lo, hi) instead of primary keys.
struct IndexRange {
  uint32_t index = 0;
  std::string lo, hi;
};
Result<std::string> RpcSplit(NodeClient& c, SegmentId seg, SegmentId new_id);
// After a split's reply was lost: its split key if the node did it, NotFound if it did not
// (and then it never will).
Result<std::string> RpcSettleSplit(NodeClient& c, SegmentId seg, SegmentId new_id);
Result<PullStats> RpcPull(NodeClient& target, SegmentId seg, const std::string& src_host, uint16_t src_port);
Result<std::vector<RemoteSegment>> RpcListSegments(NodeClient& c);

// A scan stream over one segment: Open sends the request; each Next reads one batch.
// Destroying it before the last batch drops the connection (the node is still sending).
class ScanStream {
 public:
  // `txn` nonzero: the node overlays that transaction's pending writes. With `index`, the
  // stream yields that index's entries (keys = index key || primary key) and [lo, hi) is
  // the segment's primary-key range as the caller knows it (Stale if it shrank).
  static Result<std::unique_ptr<ScanStream>> Open(NodeClient& c, SegmentId seg, const std::string& lo,
                                                  const std::string& hi, Timestamp read_ts,
                                                  uint32_t batch_rows, uint64_t txn = 0,
                                                  const IndexRange* index = nullptr);
  // The node runs `fragment` (a serialized plan whose leaf Scan reads these rows) and
  // streams its output as column batches (read them with NextColumns).
  static Result<std::unique_ptr<ScanStream>> OpenFragment(NodeClient& c, SegmentId seg, const std::string& lo,
                                                          const std::string& hi, Timestamp read_ts, uint64_t txn,
                                                          const std::string& fragment, int64_t work_mem);
  ~ScanStream();
  // Reads the next batch into keys/rows; sets *last on the final batch. Node-side errors
  // (Stale, NotFound) are returned as is.
  Status Next(std::vector<std::string>* keys, std::vector<std::string>* rows, bool* last);
  // A fragment stream's next reply: its batch (out->rows may be 0), the last primary key the
  // node has read, whether it was the last reply (then `stats`: the fragment's operator
  // counters, in its plan's pre-order), and the node CPU it reported. With `cancel`, the wait
  // for the reply ends with 57014 once it is set, and the stream's connection is closed (the
  // node stops at its next send); the reply deadline holds either way.
  Status NextColumns(exec::Batch* out, std::string* resume_key, bool* last, uint64_t* cpu_nanos,
                     std::vector<exec::OperatorStats>* stats, const std::atomic<bool>* cancel = nullptr);

 private:
  ScanStream(NodeClient& c, NodeClient::Lease lease) : client_(c), lease_(std::move(lease)) {}
  // Sends a scan request on a leased connection; the stream reads its replies.
  static Result<std::unique_ptr<ScanStream>> Start(NodeClient& c, capnp::MessageBuilder& request);
  NodeClient& client_;
  NodeClient::Lease lease_;
  bool finished_ = false;
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

}  // namespace wattdb::master
