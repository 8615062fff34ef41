// Typed calls from the master to a node's data port (see proto/node_service.capnp).
// Every function converts the node's Status back into a wattdb::Status.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "rpc/node_client.h"
#include "rpc/scan_stream.h"

namespace wattdb::master {

using rpc::IndexRange;
using rpc::NodeClient;
using rpc::NodeClientOptions;
using rpc::RpcScan;
using rpc::ScanRetryBackoff;
using rpc::ScanStream;

struct RemoteWrite {
  SegmentId segment = 0;
  std::string key;
  bool is_delete = false;
  std::string row;
  // kNone: a new row under a key the master drew (a hidden row id), which no other version
  // can have: written without the uniqueness read of kInsert.
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
  uint64_t collections = 0;
  uint64_t cached_reads = 0;
};

Status RpcCreateSegment(NodeClient& c, SegmentId id, TableId table, const std::string& lo,
                        const std::string& hi);
Status RpcDropSegment(NodeClient& c, SegmentId id);
// Asks the node's host OS to power off (suspend = false) or suspend; the node answers first.
Status RpcHostPower(NodeClient& c, bool suspend);
// `expect` nonzero: the node checks that it received exactly that many writes of `txn` in
// all (else it lost some in a restart: the txn aborts there with 40001). `min_commit_ts`
// (durable): the commit timestamp, if any, will exceed it.
Status RpcPrepare(NodeClient& c, uint64_t txn, Timestamp snapshot, std::span<const RemoteWrite> w,
                  bool durable = false, uint64_t expect = 0, Timestamp min_commit_ts = 0);
// The final, durable prepare of a transaction over several nodes, sent to all of them at once
// (their syncs overlap): each call carries the writes not sent before (may be empty) and
// the count the node must then hold in all. One status per call, in order.
struct DurablePrepare {
  NodeClient* client;
  std::span<const RemoteWrite> writes;
  uint64_t expect = 0;
};
std::vector<Status> RpcPrepareDurableEach(std::span<const DurablePrepare> calls, uint64_t txn,
                                          Timestamp snapshot, Timestamp min_commit_ts);
// A key-routed UPDATE (or DELETE) of the one row with key in [lo, hi).
struct KeyWriteSpec {
  std::string lo, hi;
  // Serialized Project over Filter over Scan: makes the new row from the row the transaction
  // sees. A DELETE's is the Filter over the Scan, and the row it yields is deleted.
  std::string plan;
  bool is_delete = false;
  std::vector<uint32_t> not_null;            // columns the new row must not have NULL in ...
  std::vector<std::string> not_null_errors;  // ... and 23502's message for each
  // READ COMMITTED: a version committed after the snapshot is not a conflict; the node locks
  // the row and runs the plan again on that version.
  bool read_committed = false;
  // Set: `plan` keeps its parameters ($n, a prepared statement's template) and these are their
  // values, encoded as a row (common/codec.h).
  std::optional<std::string> params;
};
// Runs `w` on segment `segment`'s node as txn's write at `snapshot`. `*updated`: 0 (no such
// row, or the filter failed) or 1 (one write prepared).
Status RpcUpdateKey(NodeClient& c, uint64_t txn, Timestamp snapshot, SegmentId segment,
                    const KeyWriteSpec& w, uint64_t* updated);
// Prepares and commits a single-node transaction in one round trip; 55P03 if a key is
// locked by another transaction (nothing was done: fall back to prepare + commit).
// `delivered` as in NodeClient::Call: after a failure, whether the node may have committed.
// `expect` (0: unchecked): the writes the node must then hold for the transaction, those
// prepared by earlier requests included (as RpcCommit's).
Status RpcPrepareCommit(NodeClient& c, uint64_t txn, Timestamp snapshot,
                        const std::vector<RemoteWrite>& ws, Timestamp commit_ts,
                        std::vector<std::pair<SegmentId, uint64_t>>* sizes,
                        bool* delivered = nullptr, uint64_t expect = 0);
// Commits; `sizes` (optional) receives (segment, bytes) of the segments written. OK also if
// the node committed `txn` before (a repeated commit applies nothing twice).
Status RpcCommit(NodeClient& c, uint64_t txn, Timestamp commit_ts,
                 std::vector<std::pair<SegmentId, uint64_t>>* sizes = nullptr, uint64_t expect = 0,
                 bool* delivered = nullptr);
// RpcCommit of a durably prepared transaction to several nodes at once, applied without a
// sync (the decision stays logged until RpcSyncWal confirms it); one status per client, in
// order. `incarnations[i]`: client i's node process that applied it.
std::vector<Status> RpcCommitEach(std::span<NodeClient* const> clients, uint64_t txn,
                                  Timestamp commit_ts,
                                  std::vector<std::pair<SegmentId, uint64_t>>* sizes,
                                  std::vector<uint64_t>* incarnations);
// Makes every write the node applied so far durable; returns its incarnation (random per
// process start): commits applied by that incarnation before the call are durable now.
Result<uint64_t> RpcSyncWal(NodeClient& c);
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

// Cuts up to `pieces` pieces of about `piece_bytes` off the top of `seg` at once, as segments
// `first_new_id` + i: their low keys, in order (SegmentStore::SplitPieces; without
// `piece_bytes`, one piece at the middle).
Result<std::vector<std::string>> RpcSplitPieces(NodeClient& c, SegmentId seg,
                                                SegmentId first_new_id, uint64_t piece_bytes,
                                                uint32_t pieces);
// After a split's reply was lost: its split key if the node did it, NotFound if it did not
// (and then it never will).
Result<std::string> RpcSettleSplit(NodeClient& c, SegmentId seg, SegmentId new_id);
Result<PullStats> RpcPull(NodeClient& target, SegmentId seg, const std::string& src_host,
                          uint16_t src_port);
Result<std::vector<RemoteSegment>> RpcListSegments(NodeClient& c);

// Replication (docs/design/replication.md). A follower as the leader reaches it.
struct ReplicaAddress {
  NodeId node = 0;
  std::string host;
  uint16_t port = 0;
};
// The node leads `seg` in `epoch`, shipping to `followers`; numbering starts at `next_seq`
// (0: goes on from where it is, in the same epoch). `keep_bytes` > 0: a copy sleeps, and the
// node keeps the records it numbers from now on, up to that many bytes, for RpcCatchUp.
Status RpcLead(NodeClient& c, SegmentId seg, uint64_t epoch,
               const std::vector<ReplicaAddress>& followers, uint64_t next_seq,
               uint64_t keep_bytes = 0);
// The leader sends `follower` its kept records of `seg` from `from_seq` on; NotFound if they
// are not all kept.
Status RpcCatchUp(NodeClient& c, SegmentId seg, const ReplicaAddress& follower, uint64_t from_seq);
// The node follows `seg` in `epoch` from record `next_seq` (0: no longer follows it).
Status RpcFollow(NodeClient& c, SegmentId seg, uint64_t epoch, uint64_t next_seq);

}  // namespace wattdb::master
