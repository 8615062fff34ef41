// TxnCoordinator: ending transactions -- statement rollback, commit (one node or two-phase),
// single-statement writes (coordinator.h).
#include <algorithm>
#include <thread>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/coordinator.h"

namespace wattdb::master {

Status TxnCoordinator::RollbackStatement(Transaction& t, const Transaction::Mark& mark) {
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
    if (!s.ok() && result.ok())
      result = s.Prepend(fmt::format("statement rollback on node {}", node));
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

Status TxnCoordinator::Commit(Transaction& t) {
  // Deferred writes travel with the commit's request: a single-node commit's prepare-and-
  // commit (one round trip), or the durable prepares of a commit over several nodes, if they
  // fit one request each; otherwise they are sent first, and the commit goes on as usual.
  std::vector<RemoteWrite> carried;  // single node
  WritesByNode carried_by_node;      // several nodes
  if (!t.deferred.empty()) {
    NodeId node = t.deferred.begin()->first;
    bool one =
        t.deferred.size() == 1 &&
        (t.participants.empty() || (t.participants.size() == 1 && t.participants.count(node)));
    bool fit = std::all_of(t.deferred.begin(), t.deferred.end(),
                           [](const auto& d) { return ChunkEnd(d.second, 0) == d.second.size(); });
    Status s;
    if (one || fit) {
      for (const auto& [n, ws] : t.deferred) {
        if (s.ok()) s = Join(t, n).status();
      }
    } else {
      s = SendDeferred(t);
    }
    if (!s.ok()) {
      Rollback(t);
      return s;
    }
    if (one) {
      carried = std::move(t.deferred.begin()->second);
    } else if (fit) {
      carried_by_node = std::move(t.deferred);
    }
    t.deferred.clear();
  }
  if (t.participants.empty()) {  // read-only
    EndTxn(t);
    return Status::OK();
  }
  if (t.participants.size() > 1) return CommitTwoPhase(t, carried_by_node);
  // One participant, prepared in memory: the commit is the commit point. The node checks
  // that it still holds every write sent before (it may have restarted meanwhile).
  auto ts = ts_.BeginCommit();
  if (!ts.ok()) {
    Rollback(t);
    return ts.status();
  }
  Status commit_status;
  std::vector<std::pair<SegmentId, uint64_t>> sizes;
  auto& [node, c] = *t.participants.begin();
  int pid = registry_.Pid(node);
  bool delivered = false;
  Status s = carried.empty() ? RpcCommit(*c, t.id, *ts, &sizes, t.sent[node], &delivered)
                             : RpcPrepareCommit(*c, t.id, t.snapshot, carried, *ts, &sizes,
                                                &delivered, t.sent[node] + carried.size());
  if (s.ok()) {
    // committed
  } else if (delivered && IsLinkFailure(s)) {
    commit_status = SettleUnknownCommit(t, node, pid, *ts);
  } else if (s.IsNotFound()) {
    commit_status = Status::Aborted(fmt::format(
        "transaction aborted: node {} restarted during the transaction and lost its writes", node));
  } else {
    (void)RpcAbort(*c, t.id);
    commit_status =
        s.code() == Status::Code::kAborted ? s : s.Prepend(fmt::format("commit on node {}", node));
  }
  ts_.EndCommit(*ts);
  EndTxn(t);
  RequestSplitsIfOversized(sizes);
  return commit_status;
}

Status TxnCoordinator::CommitTwoPhase(Transaction& t, const WritesByNode& carried) {
  // The prepares are made durable (each node checking that it still holds every write sent
  // to it) and the decision is logged before any node commits: the logged decision is the
  // commit point. Nodes that miss the commit learn it when they report the transaction in
  // doubt. The prepares, and then the commits, go to every node at once.
  //
  // Every snapshot handed out so far is <= issued, and the commit timestamp will be above
  // it: readers at snapshots <= issued need not wait for this transaction.
  Timestamp issued = ts_.LastIssued();
  std::vector<DurablePrepare> calls;
  for (auto& [node, c] : t.participants) {
    auto it = carried.find(node);
    std::span<const RemoteWrite> ws;
    if (it != carried.end()) ws = it->second;
    // Counted even if the prepare fails: the node may hold them (as Send counts them).
    t.sent[node] += ws.size();
    calls.push_back({c.get(), ws, t.sent[node]});
  }
  std::vector<Status> prepared = RpcPrepareDurableEach(calls, t.id, t.snapshot, issued);
  for (size_t i = 0; i < calls.size(); i++) {
    if (prepared[i].ok()) continue;
    Rollback(t);
    return prepared[i].Prepend(fmt::format("prepare on node {}", calls[i].client->id()));
  }
  MaybeFail("master.commit.before_decision");
  auto ts = ts_.BeginCommit();
  if (!ts.ok()) {
    Rollback(t);
    return ts.status();
  }
  {
    MutexLock l(decisions_mu_);
    for (auto& [node, c] : t.participants) unconfirmed_[t.id].insert(node);
  }
  Status logged = catalog_.LogDecision(t.id, *ts);
  if (!logged.ok()) {
    {
      MutexLock l(decisions_mu_);
      unconfirmed_.erase(t.id);
    }
    ts_.EndCommit(*ts);
    Rollback(t);
    return logged.Prepend("commit decision");
  }
  MaybeFail("master.commit.after_decision");
  // The nodes apply the commit without a sync: the logged decision and their synced
  // prepares make it durable. The decision is kept until each node's log is synced past
  // the commit (ConfirmUnsyncedCommits).
  std::vector<NodeClient*> clients;
  for (auto& [node, c] : t.participants) clients.push_back(c.get());
  std::vector<uint64_t> incarnations;
  std::vector<std::pair<SegmentId, uint64_t>> sizes;
  std::vector<Status> committed = RpcCommitEach(clients, t.id, *ts, &sizes, &incarnations);
  for (size_t i = 0; i < clients.size(); i++) {
    if (!committed[i].ok()) {
      // The decision is durable: the node applies it when it reports the txn in doubt; if
      // it applied it before the reply was lost, maintenance finds its outcome there.
      Log("master")->warn(
          "commit not acknowledged txn={} node=n{} err={} (resolved when the node reports it)",
          t.id, clients[i]->id(), committed[i].ToString());
    }
    MutexLock l(decisions_mu_);
    unsynced_[clients[i]->id()].push_back({t.id, *ts, committed[i].ok() ? incarnations[i] : 0});
  }
  ts_.EndCommit(*ts);
  EndTxn(t);
  RequestSplitsIfOversized(sizes);
  return Status::OK();
}

Status TxnCoordinator::ApplyWrites(TableId table, Timestamp snapshot,
                                   const std::vector<RowWrite>& writes) {
  if (writes.empty()) return Status::OK();
  bool unique = HasUniqueIndex(table);
  for (int attempt = 0;; attempt++) {
    auto t = Begin(snapshot);
    WritesByNode by_node;
    Status s = Route(*t, table, writes, &by_node);
    // A statement writing one node commits in one round trip; if a key is locked by another
    // transaction it takes the usual path, where the prepare waits for the lock. Unique
    // indexes are checked between prepare and commit.
    if (s.ok() && !unique && by_node.size() == 1 &&
        ChunkEnd(by_node.begin()->second, 0) == by_node.begin()->second.size()) {
      s = CommitOnePhase(*t, by_node.begin()->first, by_node.begin()->second);
      if (s.ok()) return s;
      if (s.sqlstate() == sqlstate::kLockNotAvailable) s = Status::OK();
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
