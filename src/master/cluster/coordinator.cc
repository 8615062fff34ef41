// TxnCoordinator: beginning transactions, routing and preparing their writes, one-phase
// commits, rollback (coordinator.h).
#include "master/cluster/coordinator.h"

#include <algorithm>
#include <thread>
#include <unordered_map>

#include "common/logging.h"
#include "common/sqlstate.h"

namespace wattdb::master {

TxnCoordinator::TxnCoordinator(const ClusterConfig& config, const Clock& clock, Catalog& catalog,
                               NodeRegistry& registry, TimestampOracle& ts, SegmentLatches& latches,
                               FollowerReads& follower_reads, SplitWanted split_wanted)
    : config_(config),
      catalog_(catalog),
      registry_(registry),
      ts_(ts),
      latches_(latches),
      follower_reads_(follower_reads),
      split_wanted_(std::move(split_wanted)),
      next_txn_(static_cast<uint64_t>(clock.WallMicros()) << 8) {}  // unique across restarts

std::unique_ptr<Transaction> TxnCoordinator::Begin(Timestamp snapshot) {
  auto t = std::make_unique<Transaction>();
  t->id = next_txn_++;
  t->snapshot = snapshot;
  MutexLock l(txn_mu_);
  active_txns_.insert(t->id);
  return t;
}

void TxnCoordinator::EndTxn(Transaction& t) {
  ReleaseUniqueClaims(t);
  for (auto& [seg, latch] : t.latches) latch->unlock_shared();
  t.latches.clear();
  t.participants.clear();
  t.deferred.clear();
  MutexLock l(txn_mu_);
  active_txns_.erase(t.id);
}

Status TxnCoordinator::Write(Transaction& t, TableId table, std::vector<RowWrite> writes,
                             bool defer) {
  if (writes.empty()) return Status::OK();
  WritesByNode by_node;
  RETURN_NOT_OK(Route(t, table, std::move(writes), &by_node));
  bool unique = HasUniqueIndex(table);
  if (defer && !unique) {
    for (auto& [node, ws] : by_node) {
      auto& held = t.deferred[node];
      held.insert(held.end(), std::make_move_iterator(ws.begin()),
                  std::make_move_iterator(ws.end()));
    }
    return Status::OK();
  }
  RETURN_NOT_OK(Send(t, by_node));
  return unique ? CheckUnique(t, table, by_node) : Status::OK();
}

Status TxnCoordinator::Route(Transaction& t, TableId table, std::vector<RowWrite> writes,
                             WritesByNode* by_node) {
  for (int attempt = 0;; attempt++) {
    // Route every write to its segment, then latch the segments not latched yet (in id
    // order) and check that no move or split finished between routing and latching.
    SmallVector<SegmentEntry, 2> segs;  // distinct; a statement's writes meet few segments
    SmallVector<uint32_t, 4> seg_of(writes.size());  // per write: its segment's index in segs
    uint32_t last = UINT32_MAX;  // most writes (a COPY's) fall in the segment of the one before
    std::unordered_map<SegmentId, uint32_t> index;  // of segs, once a linear search is too long
    constexpr size_t kLinear = 8;
    for (size_t i = 0; i < writes.size(); i++) {
      const std::string& key = writes[i].key;
      if (last == UINT32_MAX || key < segs[last].lo ||
          (!segs[last].hi.empty() && key >= segs[last].hi)) {
        ASSIGN_OR_RETURN(SegmentEntry e, catalog_.SegmentForKey(table, key));
        if (segs.size() < kLinear) {
          auto known = std::find_if(segs.begin(), segs.end(),
                                    [&](const SegmentEntry& s) { return s.id == e.id; });
          last = static_cast<uint32_t>(known - segs.begin());
        } else {
          if (index.empty()) {
            for (uint32_t k = 0; k < segs.size(); k++) index.emplace(segs[k].id, k);
          }
          auto known = index.find(e.id);
          last = known == index.end() ? static_cast<uint32_t>(segs.size()) : known->second;
        }
        if (last == segs.size()) {
          if (!index.empty()) index.emplace(e.id, last);
          segs.push_back(std::move(e));
        }
      }
      seg_of[i] = last;
    }
    SmallVector<SegmentId, 4> fresh;
    for (const auto& e : segs) {
      if (!t.latches.count(e.id)) fresh.push_back(e.id);
    }
    std::sort(fresh.begin(), fresh.end());
    for (SegmentId id : fresh) {
      auto latch = latches_.Get(id);
      latch->lock_shared();
      t.latches[id] = std::move(latch);
    }
    bool changed = false;
    for (const auto& e : segs) {
      if (!catalog_.SegmentIs(e)) changed = true;
    }
    if (changed) {
      for (SegmentId id : fresh) {
        t.latches[id]->unlock_shared();
        t.latches.erase(id);
      }
      if (attempt >= kMaxWriteAttempts) return Status::Aborted("partition map kept changing");
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(50, 1 + attempt)));
      continue;
    }
    by_node->clear();
    for (size_t i = 0; i < writes.size(); i++) {
      RemoteWrite w;
      w.segment = segs[seg_of[i]].id;
      w.key = std::move(writes[i].key);
      w.is_delete = writes[i].is_delete;
      w.row = std::move(writes[i].row);
      w.check = writes[i].check;
      (*by_node)[segs[seg_of[i]].node].push_back(std::move(w));
    }
    return Status::OK();
  }
}

Result<std::shared_ptr<NodeClient>> TxnCoordinator::Join(Transaction& t, NodeId node) {
  ASSIGN_OR_RETURN(auto client, registry_.Client(node));
  t.participants[node] = client;
  return client;
}

Status TxnCoordinator::SendDeferred(Transaction& t) {
  if (t.deferred.empty()) return Status::OK();
  auto held = std::move(t.deferred);
  t.deferred.clear();
  return Send(t, held);
}

size_t TxnCoordinator::ChunkEnd(const std::vector<RemoteWrite>& ws, size_t off) {
  size_t bytes = 0, end = off;
  while (end < ws.size() && end - off < kPrepareChunk &&
         (end == off || bytes < kPrepareChunkBytes)) {
    bytes += ws[end].key.size() + ws[end].row.size() + 16;
    end++;
  }
  return end;
}

Status TxnCoordinator::Send(Transaction& t, const WritesByNode& by_node) {
  for (const auto& [node, ws] : by_node) {
    ASSIGN_OR_RETURN(auto client, Join(t, node));
    for (size_t off = 0, end; off < ws.size(); off = end) {
      end = ChunkEnd(ws, off);
      Status s = RpcPrepare(*client, t.id, t.snapshot,
                            std::span<const RemoteWrite>(ws).subspan(off, end - off));
      // Counted even when it failed: the node may hold part of the chunk, and the
      // transaction cannot commit after a failed prepare anyway.
      t.sent[node] += end - off;
      RETURN_NOT_OK(s);
    }
  }
  return Status::OK();
}

Status TxnCoordinator::CommitOnePhase(Transaction& t, NodeId node,
                                      const std::vector<RemoteWrite>& ws) {
  ASSIGN_OR_RETURN(auto client, registry_.Client(node));
  int pid = registry_.Pid(node);
  ASSIGN_OR_RETURN(Timestamp ts, ts_.BeginCommit());
  std::vector<std::pair<SegmentId, uint64_t>> sizes;
  bool delivered = false;
  Status s = RpcPrepareCommit(*client, t.id, t.snapshot, ws, ts, &sizes, &delivered);
  ts_.EndCommit(ts);
  if (!s.ok() && delivered && IsLinkFailure(s)) {
    s = SettleUnknownCommit(t, node, pid, ts);
    if (s.ok() || s.sqlstate() == sqlstate::kStatementCompletionUnknown) EndTxn(t);
    return s;
  }
  if (s.ok()) {
    EndTxn(t);
    RequestSplitsIfOversized(sizes);
  }
  return s;
}

Status TxnCoordinator::SettleUnknownCommit(const Transaction& t, NodeId node, int old_pid,
                                           Timestamp ts) {
  const uint64_t txn = t.id;
  auto unknown = [&] {
    Log("master")->warn("commit outcome unknown txn={} node=n{}", txn, node);
    return Status(Status::Code::kIOError,
                  fmt::format("connection to node {} lost during commit; the transaction may or "
                              "may not have committed",
                              node),
                  sqlstate::kStatementCompletionUnknown);
  };
  for (const auto& [seg, latch] : t.latches) {
    auto e = catalog_.GetSegment(seg);
    if (e.ok() && (!e->followers.empty() || e->node != node)) {
      // The leader may hold the commit and a follower not: follower reads wait for them.
      for (const auto& [s, l] : t.latches) follower_reads_.Fence(s);
      return unknown();
    }
  }
  // A node that died comes back within a few seconds (the master restarts it); one that
  // froze is declared down after heartbeat_timeout_ms. Wait for either, but not longer.
  // The node's answer is final: a commit it has not applied by then never will be.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(config_.heartbeat_timeout_ms + 2000);
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = registry_.Client(node);
    if (c.ok()) {
      int pid = registry_.Pid(node);
      auto done = RpcOutcome(**c, txn);
      if (done.ok() && *done == ts) return Status::OK();
      if (done.ok() && *done == 0) {
        return Status(Status::Code::kUnavailable,
                      fmt::format("node {} {} before the commit reached it; nothing was written",
                                  node, pid != old_pid ? "restarted" : "stopped answering"),
                      sqlstate::kCannotConnectNow);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return unknown();
}

void TxnCoordinator::RequestSplitsIfOversized(
    const std::vector<std::pair<SegmentId, uint64_t>>& sizes) {
  bool oversized = std::any_of(sizes.begin(), sizes.end(),
                               [&](const auto& p) { return p.second > config_.segment_bytes; });
  if (oversized && split_wanted_) split_wanted_();
}

void TxnCoordinator::Rollback(Transaction& t) {
  for (auto& [node, c] : t.participants) (void)RpcAbort(*c, t.id);
  EndTxn(t);
}

}  // namespace wattdb::master
