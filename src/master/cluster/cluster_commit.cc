// Ending transactions: statement rollback, commit (one node or two-phase), single-statement writes.
#include "master/cluster/cluster.h"

#include <algorithm>

#include "common/failpoint.h"
#include "common/logging.h"

namespace wattdb::master {

Status Cluster::RollbackStatement(Transaction& t, const Transaction::Mark& mark) {
  Status result;
  for (auto it = t.sent.begin(); it != t.sent.end();) {
    auto [node, sent] = *it;
    auto m = mark.sent.find(node);
    uint64_t keep = m == mark.sent.end() ? 0 : m->second;
    if (sent == keep) {
      ++it;
      continue;
    }
    Status s = RpcRollbackTo(*t.participants.at(node), t.id, keep);
    if (!s.ok() && result.ok()) result = s.Prepend(fmt::format("statement rollback on node {}", node));
    if (keep == 0 && s.ok()) {  // nothing of the transaction is left there
      t.participants.erase(node);
      it = t.sent.erase(it);
    } else {
      it->second = keep;
      ++it;
    }
  }
  ReleaseUniqueClaims(t, mark.unique_locks);
  for (auto it = t.deferred.begin(); it != t.deferred.end();) {
    auto m = mark.deferred.find(it->first);
    it->second.resize(m == mark.deferred.end() ? 0 : std::min(m->second, it->second.size()));
    it = it->second.empty() ? t.deferred.erase(it) : std::next(it);
  }
  return result;
}

Status Cluster::Commit(Transaction& t) {
  // Deferred writes for the only node the transaction writes travel with its commit (one
  // round trip); otherwise they are sent first, and the commit goes on as usual.
  std::vector<RemoteWrite> carried;
  if (!t.deferred.empty()) {
    NodeId node = t.deferred.begin()->first;
    bool one = t.deferred.size() == 1 &&
               (t.participants.empty() || (t.participants.size() == 1 && t.participants.count(node)));
    Status s = one ? Join(t, node).status() : SendDeferred(t);
    if (s.ok() && one) {
      carried = std::move(t.deferred.begin()->second);
      t.deferred.clear();
    }
    if (!s.ok()) {
      Rollback(t);
      return s;
    }
  }
  if (t.participants.empty()) {  // read-only
    EndTxn(t);
    return Status::OK();
  }
  // A transaction spanning several nodes makes its prepares durable (each node checking
  // that it still holds every write sent to it) and logs its decision before any node
  // commits: the logged decision is the commit point. Nodes that miss the commit learn it
  // when they report the transaction in doubt.
  bool distributed = t.participants.size() > 1;
  if (distributed) {
    // Every snapshot handed out so far is <= issued, and the commit timestamp will be
    // above it: readers at snapshots <= issued need not wait for this transaction.
    Timestamp issued;
    {
      std::lock_guard<std::mutex> l(ts_mu_);
      issued = last_ts_;
    }
    for (auto& [node, c] : t.participants) {
      Status s = RpcPrepare(*c, t.id, t.snapshot, {}, /*durable=*/true, t.sent[node], issued);
      if (!s.ok()) {
        Rollback(t);
        return s.Prepend(fmt::format("prepare on node {}", node));
      }
    }
    MaybeFail("master.commit.before_decision");
  }
  auto ts = BeginCommit();
  if (!ts.ok()) {
    Rollback(t);
    return ts.status();
  }
  if (distributed) {
    {
      std::lock_guard<std::mutex> l(decisions_mu_);
      for (auto& [node, c] : t.participants) unconfirmed_[t.id].insert(node);
    }
    Status logged = catalog_->LogDecision(t.id, *ts);
    if (!logged.ok()) {
      {
        std::lock_guard<std::mutex> l(decisions_mu_);
        unconfirmed_.erase(t.id);
      }
      EndCommit(*ts);
      Rollback(t);
      return logged.Prepend("commit decision");
    }
    MaybeFail("master.commit.after_decision");
  }
  Status commit_status;
  std::vector<std::pair<SegmentId, uint64_t>> sizes;
  for (auto& [node, c] : t.participants) {
    if (distributed) {
      Status s = RpcCommit(*c, t.id, *ts, &sizes);
      if (s.ok()) {
        Confirmed(t.id, node);
      } else {
        // The decision is durable: the node applies it when it reports the txn in doubt.
        Log("master")->warn("commit not acknowledged txn={} node=n{} err={} (resolved when the node reports it)",
                            t.id, node, s.ToString());
      }
      continue;
    }
    // One participant, prepared in memory: the commit is the commit point. The node checks
    // that it still holds every write sent before (it may have restarted meanwhile).
    int pid = NodePid(node);
    bool delivered = false;
    Status s = carried.empty()
                   ? RpcCommit(*c, t.id, *ts, &sizes, t.sent[node], &delivered)
                   : RpcPrepareCommit(*c, t.id, t.snapshot, carried, *ts, &sizes, &delivered,
                                      t.sent[node] + carried.size());
    if (s.ok()) continue;
    if (delivered && IsLinkFailure(s)) {
      commit_status = SettleUnknownCommit(node, pid, t.id, *ts);
    } else if (s.IsNotFound()) {
      commit_status = Status::Aborted(fmt::format(
          "transaction aborted: node {} restarted during the transaction and lost its writes", node));
    } else {
      (void)RpcAbort(*c, t.id);
      commit_status = s.code() == Status::Code::kAborted ? s : s.Prepend(fmt::format("commit on node {}", node));
    }
  }
  EndCommit(*ts);
  EndTxn(t);
  RequestSplitsIfOversized(sizes);
  return commit_status;
}

void Cluster::Confirmed(uint64_t txn, NodeId node) {
  bool all = false;
  {
    std::lock_guard<std::mutex> l(decisions_mu_);
    auto it = unconfirmed_.find(txn);
    if (it == unconfirmed_.end()) return;
    it->second.erase(node);
    if (it->second.empty()) {
      unconfirmed_.erase(it);
      all = true;
    }
  }
  if (all) (void)catalog_->EraseDecision(txn);
}

Status Cluster::ApplyWrites(TableId table, Timestamp snapshot, std::vector<RowWrite> writes) {
  if (writes.empty()) return Status::OK();
  bool unique = HasUniqueIndex(table);
  for (int attempt = 0;; attempt++) {
    auto t = Begin(snapshot);
    std::map<NodeId, std::vector<RemoteWrite>> by_node;
    Status s = Route(*t, table, writes, &by_node);
    // A statement writing one node commits in one round trip; if a key is locked by another
    // transaction it takes the usual path, where the prepare waits for the lock. Unique
    // indexes are checked between prepare and commit.
    if (s.ok() && !unique && by_node.size() == 1 && ChunkEnd(by_node.begin()->second, 0) == by_node.begin()->second.size()) {
      s = CommitOnePhase(*t, by_node.begin()->first, by_node.begin()->second);
      if (s.ok()) return s;
      if (s.sqlstate() == "55P03") s = Status::OK();
    }
    if (s.ok()) s = Send(*t, by_node);
    if (s.ok() && unique) s = CheckUnique(*t, table, by_node);
    if (s.ok()) return Commit(*t);
    Rollback(*t);
    // A segment that moved or split between routing and the node's check: route again.
    bool retry = (s.IsStale() || s.IsNotFound()) && attempt < kMaxWriteAttempts;
    if (!retry) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 1 + attempt)));
  }
}

}  // namespace wattdb::master
