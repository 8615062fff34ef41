// TxnCoordinator's upkeep: in-doubt transactions, commits awaiting a node's sync, deadlocks
// across nodes (coordinator.h).
#include <functional>
#include <map>
#include <set>

#include "common/logging.h"
#include "master/cluster/coordinator.h"

namespace wattdb::master {

void TxnCoordinator::Maintain(bool confirm) {
  BreakDeadlocks();
  ResolveInDoubt();
  if (confirm) ConfirmUnsyncedCommits();
}

void TxnCoordinator::ResolveInDoubt() {
  std::map<std::pair<NodeId, uint64_t>, uint64_t>
      still;  // resolutions the latest heartbeats still list
  for (const auto& n : registry_.Snapshot()) {
    if (!n.up) continue;
    for (uint64_t txn : n.in_doubt) {
      auto key = std::make_pair(n.id, txn);
      auto done = resolved_.find(key);
      if (done != resolved_.end() && done->second == n.in_doubt_seq) {
        still[key] = done->second;  // answered already; this heartbeat predates the answer
        continue;
      }
      {
        MutexLock l(txn_mu_);
        if (active_txns_.count(txn)) continue;  // still being decided
      }
      auto client = registry_.Client(n.id);
      if (!client.ok()) break;
      auto decision = catalog_.Decision(txn);
      // No logged decision means the master never decided to commit: presumed abort.
      Status s = decision ? RpcCommit(**client, txn, *decision) : RpcAbort(**client, txn);
      if (s.ok()) {
        still[key] = n.in_doubt_seq;
        if (decision) Confirmed(txn, n.id);
      }
      Log("master")->info("in-doubt txn resolved txn={} node=n{} outcome={} status={}", txn, n.id,
                          decision ? "commit" : "abort", s.ToString());
    }
  }
  resolved_ = std::move(still);
}

void TxnCoordinator::BreakDeadlocks() {
  struct Wait {
    uint64_t holder;
    NodeId node;
  };
  std::multimap<uint64_t, Wait> waits;  // a statement may wait on several nodes at once
  for (const auto& n : registry_.Snapshot()) {
    if (!n.up) continue;
    for (auto [txn, holder] : n.lock_waits) waits.emplace(txn, Wait{holder, n.id});
  }
  // Depth-first search; a wait leading back into the current path closes a cycle.
  std::map<uint64_t, int> state;  // 1 on the path, 2 done
  std::vector<std::pair<uint64_t, Wait>> path;
  std::function<void(uint64_t)> visit = [&](uint64_t txn) {
    state[txn] = 1;
    auto [b, e] = waits.equal_range(txn);
    for (auto it = b; it != e; ++it) {
      path.emplace_back(txn, it->second);
      uint64_t next = it->second.holder;
      if (state[next] == 1) {
        auto from =
            std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == next; });
        std::set<NodeId> nodes;
        for (auto p = from; p != path.end(); ++p) nodes.insert(p->second.node);
        auto victim = std::max_element(
            from, path.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
        if (nodes.size() > 1) {  // one node's cycles are its own to break
          auto c = registry_.Client(victim->second.node);
          Status s = c.ok() ? RpcBreakWait(**c, victim->first, victim->second.holder) : c.status();
          Log("master")->info(
              "deadlock across nodes txn={} waits_for={} node=n{} nodes={} status={}",
              victim->first, victim->second.holder, victim->second.node, nodes.size(),
              s.ToString());
        }
      } else if (state[next] == 0) {
        visit(next);
      }
      path.pop_back();
    }
    state[txn] = 2;
  };
  for (const auto& [txn, w] : waits) {
    if (state[txn] == 0) visit(txn);
  }
}

void TxnCoordinator::Confirmed(uint64_t txn, NodeId node) {
  bool all = false;
  {
    MutexLock l(decisions_mu_);
    auto it = unconfirmed_.find(txn);
    if (it == unconfirmed_.end()) return;
    it->second.erase(node);
    if (it->second.empty()) {
      unconfirmed_.erase(it);
      all = true;
    }
  }
  if (all) (void)catalog_.EraseDecision(txn);
}

void TxnCoordinator::ConfirmUnsyncedCommits() {
  std::map<NodeId, std::vector<UnsyncedCommit>> round;
  {
    MutexLock l(decisions_mu_);
    round.swap(unsynced_);
  }
  for (auto& [node, commits] : round) {
    // Every commit listed was acknowledged before this sync was sent.
    auto c = registry_.Client(node);
    Result<uint64_t> incarnation = c.ok() ? RpcSyncWal(**c) : c.status();
    if (!incarnation.ok()) {  // the node is away: next round
      MutexLock l(decisions_mu_);
      auto& back = unsynced_[node];
      back.insert(back.begin(), commits.begin(), commits.end());
      continue;
    }
    for (const auto& u : commits) {
      if (u.incarnation == *incarnation) {
        Confirmed(u.txn, node);
        continue;
      }
      // The node restarted since it applied the commit (or its reply was lost). If the commit
      // is there (a process crash keeps what the OS holds), the outcome it reports now is
      // durable (it synced above); if not (a power cut, or it never arrived), the transaction
      // is in doubt there and its resolution, from the kept decision, confirms it.
      auto outcome = RpcOutcome(**c, u.txn);
      if (outcome.ok() && *outcome == u.ts) Confirmed(u.txn, node);
    }
  }
}

std::map<NodeId, size_t> TxnCoordinator::UnconfirmedCommits() {
  MutexLock l(decisions_mu_);
  std::map<NodeId, size_t> out;
  for (const auto& [txn, nodes] : unconfirmed_) {
    for (NodeId n : nodes) out[n]++;
  }
  return out;
}

}  // namespace wattdb::master
