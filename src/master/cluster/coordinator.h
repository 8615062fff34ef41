// TxnCoordinator: the master's transaction coordinator. Routes a transaction's writes to the
// segments and nodes they belong to (latching the segments, see segment_latches.h), prepares
// them there, and ends the transaction: one round trip on one node, or two-phase commit at
// one timestamp with the decision logged in the catalog. It also holds the claims on unique
// index keys, and keeps the promises a crash or a lost reply leaves open: in-doubt
// transactions on the nodes, commits a node applied without a sync, deadlocks whose cycle
// spans several nodes (Maintain, called by the cluster's maintenance).
//
// Depends on the catalog, the node registry, the timestamp oracle and the latches, all
// borrowed; not on where segments go (placement.h), which it is told of only through
// `split_wanted`. Thread-safe; a Transaction is used by one thread at a time.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <boost/container/flat_set.hpp>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "master/catalog/catalog.h"
#include "master/cluster/follower_reads.h"
#include "master/cluster/segment_latches.h"
#include "master/cluster/timestamp_oracle.h"
#include "master/cluster/transaction.h"
#include "master/nodes/node_registry.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

class TxnCoordinator {
 public:
  // Told the sizes of segments a commit wrote when one of them outgrew segment_bytes.
  using SplitWanted = std::function<void()>;
  // All borrowed; they outlive the coordinator.
  TxnCoordinator(const ClusterConfig& config, const Clock& clock, Catalog& catalog,
                 NodeRegistry& registry, TimestampOracle& ts, SegmentLatches& latches,
                 FollowerReads& follower_reads, SplitWanted split_wanted);

  // Applies `writes` to `table` atomically across all nodes they touch (prepare everywhere,
  // then commit at one timestamp). Retries transparently when segments moved or split.
  Status ApplyWrites(TableId table, Timestamp snapshot, const std::vector<RowWrite>& writes);

  // Multi-statement transactions: Begin, any number of Write calls (each prepares its
  // writes on the nodes at once: duplicate keys and conflicts surface per statement), then
  // Commit or Rollback. The transaction sees its own writes in scans that pass its id.
  std::unique_ptr<Transaction> Begin(Timestamp snapshot);
  // `defer`: the writes are inserts that cannot conflict (keys the master drew, no unique
  // index); they may be held back and sent with the commit (Transaction::deferred).
  Status Write(Transaction& txn, TableId table, std::vector<RowWrite> writes, bool defer = false);
  // Sends the transaction's deferred writes; called before any statement but COMMIT and
  // ROLLBACK, so that it reads them and fails where they do.
  Status SendDeferred(Transaction& txn);
  // `w`, an UPDATE or DELETE of one row of `table`, evaluated on the row's node in one round
  // trip (coordinator_key_update.cc), as RpcUpdateKey says. The rows written (0 or 1); nullopt
  // if the table does not suit (a unique secondary index, checked here) or the segment moved or
  // split meanwhile: the caller then takes the general path (scan, then Write), nothing having
  // been done.
  Result<std::optional<uint64_t>> KeyWrite(Transaction& txn, TableId table, const KeyWriteSpec& w);
  Status Commit(Transaction& txn);
  void Rollback(Transaction& txn);
  // Undoes what `txn` prepared since `mark` (a failed statement's writes, locks and unique
  // claims) so that it can go on. An error means the nodes could not say: the transaction
  // must end.
  Status RollbackStatement(Transaction& txn, const Transaction::Mark& mark);
  // After `writes` of `t` to `table` were prepared: each new row's key in each unique index
  // of the table is claimed for `t` until it ends (a claim held by another transaction is
  // waited for, as a row lock is) and must not belong to another live row (23505).
  Status CheckUnique(Transaction& t, TableId table, const WritesByNode& writes);

  // Per node: logged commit decisions still waiting for it to confirm the commit durable
  // (applied without a sync, reply lost, or in doubt there; wattdb_nodes.unconfirmed_commits).
  // Maintenance confirms them within a round or two of the node being up.
  std::map<NodeId, size_t> UnconfirmedCommits();

  // One round of the coordinator's upkeep, from the latest heartbeats: breaks deadlocks
  // across nodes, resolves in-doubt transactions, and (`confirm`) asks nodes to confirm
  // commits they applied without a sync. Called by one thread at a time.
  void Maintain(bool confirm = true);
  // The last round of confirmations, for a clean stop.
  void ConfirmUnsyncedCommits();

 private:
  // Write = Route (segments of the writes, latched) + Send (prepare them on their nodes).
  Status Route(Transaction& t, TableId table, std::vector<RowWrite> writes, WritesByNode* by_node);
  Status Send(Transaction& t, const WritesByNode& by_node);
  // Makes `node` a participant of `t`; its client.
  Result<std::shared_ptr<NodeClient>> Join(Transaction& t, NodeId node);
  // Prepares and commits all of `t`'s writes on one node in one round trip; ends `t` if
  // that worked. 55P03: a key was locked and nothing happened.
  Status CommitOnePhase(Transaction& t, NodeId node, const std::vector<RemoteWrite>& ws);
  // Commit's two-phase path over the participants (carrying `carried` writes with the
  // durable prepares).
  Status CommitTwoPhase(Transaction& t, const WritesByNode& carried);
  void RequestSplitsIfOversized(const std::vector<std::pair<SegmentId, uint64_t>>& sizes);
  void EndTxn(Transaction& txn);
  bool HasUniqueIndex(TableId table) const;
  // Releases `t`'s unique-key claims but its first `keep`.
  void ReleaseUniqueClaims(Transaction& t, size_t keep = 0);
  // After a one-phase commit of `txn` at `ts` on `node` failed once the request was handed
  // over: asks the node (waiting briefly for it to come back) whether it committed. OK if it
  // did; 57P03 if it cannot have (the process that got the request is gone); else 40003.
  // At once 40003 if `t` wrote a replicated segment: the node is not the judge then (it may
  // have applied the commit while a follower missed it, and after a failover the copy that
  // counts is a follower's).
  Status SettleUnknownCommit(const Transaction& t, NodeId node, int old_pid, Timestamp ts);
  void ResolveInDoubt();
  // Cycles of row-lock waits through several nodes (from the latest heartbeats): the
  // youngest transaction of each is told 40P01 where it waits.
  void BreakDeadlocks();
  void Confirmed(uint64_t txn, NodeId node);

  static constexpr int kMaxWriteAttempts = 100;  // routings of one write (the map kept changing)
  static constexpr size_t kPrepareChunk = 5000;  // writes per prepare request, at most
  static constexpr size_t kPrepareChunkBytes = 8u << 20;  // and about this many bytes
  // The end of the prepare chunk of `ws` that starts at `off` (at least one write).
  static size_t ChunkEnd(const std::vector<RemoteWrite>& ws, size_t off);
  // The request may have reached the node, but no answer came back.
  static bool IsLinkFailure(const Status& s) {
    return s.code() == Status::Code::kIOError || s.IsTimedOut() || s.IsUnavailable();
  }

  const ClusterConfig& config_;
  Catalog& catalog_;
  NodeRegistry& registry_;
  TimestampOracle& ts_;
  SegmentLatches& latches_;
  FollowerReads& follower_reads_;  // told of commits whose outcome is unknown
  const SplitWanted split_wanted_;
  std::atomic<uint64_t> next_txn_;

  Mutex txn_mu_;
  // Between first prepare and the end of commit/abort.
  boost::container::flat_set<uint64_t> active_txns_ GUARDED_BY(txn_mu_);
  // In-doubt resolutions done: (node, txn) -> the heartbeat (in_doubt_seq) they answered.
  // Used by Maintain only.
  std::map<std::pair<NodeId, uint64_t>, uint64_t> resolved_;
  // Logged commit decisions whose participants have not all confirmed yet.
  Mutex decisions_mu_;
  std::map<uint64_t, std::set<NodeId>> unconfirmed_ GUARDED_BY(decisions_mu_);
  // Distributed commits a node applied without a sync, per node: each confirmed once a
  // later RpcSyncWal answers from the process that applied it.
  struct UnsyncedCommit {
    uint64_t txn;
    Timestamp ts;
    uint64_t incarnation;  // 0: unknown (the reply was lost)
  };
  std::map<NodeId, std::vector<UnsyncedCommit>> unsynced_ GUARDED_BY(decisions_mu_);
  // Unique index keys claimed by transactions: (table, index, key) -> transaction id.
  Mutex unique_mu_;
  CondVar unique_cv_;  // signalled when claims are released
  std::map<std::string, uint64_t> unique_claims_ GUARDED_BY(unique_mu_);
};

}  // namespace wattdb::master
