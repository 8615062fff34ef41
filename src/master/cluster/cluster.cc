#include "master/cluster/cluster.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"

namespace wattdb::master {

Status Cluster::InUse(SegmentId seg, int waited_ms) {
  return Status(
      Status::Code::kUnavailable,
      fmt::format(
          "segment {} is in use by a transaction that did not finish within {} ms; try again", seg,
          waited_ms),
      sqlstate::kObjectInUse);
}

Cluster::Cluster(const ClusterConfig& config, ClusterOptions opts, const Clock& clock)
    : config_(config), opts_(std::move(opts)), clock_(clock) {}

Cluster::~Cluster() { Stop(); }

Status Cluster::Start() {
  ASSIGN_OR_RETURN(catalog_, Catalog::Open(config_.data_dir + "/master"));
  ASSIGN_OR_RETURN(Timestamp ts, catalog_->NextTimestamp());
  ts_.Reset(ts);  // everything committed before this run has a smaller timestamp
  next_txn_ = static_cast<uint64_t>(clock_.WallMicros()) << 8;  // unique across restarts
  ASSIGN_OR_RETURN(net::ClusterKey key, net::ClusterKey::LoadOrCreate(config_.KeyPath()));
  // The node CPU a statement's calls cost counts toward its energy.
  registry_ =
      std::make_unique<NodeRegistry>(config_, clock_, std::move(key), &StatementCpuScope::AddNode);
  RETURN_NOT_OK(registry_->Start());
  power_ = std::make_unique<NodePower>(config_, *registry_, clock_);
  power::DriverContext ctx;
  ctx.node_binary = opts_.node_binary;
  ctx.config_path = opts_.config_path;
  ctx.data_dir = config_.data_dir;
  ctx.os_request = [this](NodeId id, power::PowerAction a) -> Status {
    ASSIGN_OR_RETURN(auto client, registry_->Client(id));
    return RpcHostPower(*client, a == power::PowerAction::kSuspend);
  };
  RETURN_NOT_OK(power_->Init(ctx));
  monitor_ = std::make_unique<PowerMonitor>(config_, *registry_, *power_, clock_);
  RETURN_NOT_OK(monitor_->Init());
  auto sleeping = [this](NodeId id) {
    NodeAdminState s = catalog_->GetNodeState(id);
    return s == NodeAdminState::kOff || s == NodeAdminState::kSuspended;
  };
  if (opts_.manage_nodes) {
    std::set<NodeId> failed;
    for (const auto& n : config_.nodes) {
      // The node this process hosts starts once the master serves (master/main.cc).
      if (sleeping(n.id) || n.InMaster()) continue;
      MutexLock l(power_->mu());
      // A node that cannot be powered on (BMC unreachable, ...) is reported; the rest serve.
      Status on = power_->Act(n.id, power::PowerAction::kOn);
      if (!on.ok()) {
        Log("master")->error("cannot power on node {}: {}", n.id, on.ToString());
        failed.insert(n.id);
      }
    }
    for (const auto& n : config_.nodes) {
      if (sleeping(n.id) || failed.count(n.id) || n.InMaster()) continue;
      int wait_ms = config_.Profile(n).boot_ms + config_.wake_timeout_ms;
      if (!AwaitRegistration(n, wait_ms)) {
        power_->RecordFailure(
            n.id, fmt::format("node {} did not register within {} ms of power on; see {}/n{}.log",
                              n.id, wait_ms, config_.data_dir, n.id));
      }
    }
  }
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
  monitor_->Start();
  if (opts_.manage_nodes) {
    supervisor_ = std::make_unique<NodeSupervisor>(config_, *registry_, *catalog_, *power_);
    supervisor_->Start();
  }
  return Status::OK();
}

void Cluster::Stop() {
  {
    MutexLock l(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.SignalAll();
  if (supervisor_) supervisor_->Stop();
  if (monitor_) monitor_->Stop();
  if (maintenance_.joinable()) maintenance_.join();
  if (opts_.manage_nodes && power_) {
    for (const auto& n : config_.nodes) {
      MutexLock l(power_->mu());
      if (power_->Driver(n.id).Supports(power::PowerAction::kOff))
        (void)power_->Act(n.id, power::PowerAction::kOff);
    }
  }
  if (registry_) registry_->Stop();
}

std::shared_ptr<std::shared_timed_mutex> Cluster::Latch(SegmentId seg) {
  MutexLock l(latch_mu_);
  auto& p = latches_[seg];
  if (!p) p = std::make_shared<std::shared_timed_mutex>();
  return p;
}

Transaction::Mark Transaction::mark() const {
  Mark m{sent, unique_locks.size(), {}};
  for (const auto& [node, ws] : deferred) m.deferred[node] = ws.size();
  return m;
}

Transaction::~Transaction() {
  for (auto& [seg, latch] : latches) latch->unlock_shared();
}

std::unique_ptr<Transaction> Cluster::Begin(Timestamp snapshot) {
  auto t = std::make_unique<Transaction>();
  t->id = next_txn_++;
  t->snapshot = snapshot;
  MutexLock l(txn_mu_);
  active_txns_.insert(t->id);
  return t;
}

void Cluster::EndTxn(Transaction& t) {
  ReleaseUniqueClaims(t);
  for (auto& [seg, latch] : t.latches) latch->unlock_shared();
  t.latches.clear();
  t.participants.clear();
  t.deferred.clear();
  MutexLock l(txn_mu_);
  active_txns_.erase(t.id);
}

Status Cluster::Write(Transaction& t, TableId table, std::vector<RowWrite> writes, bool defer) {
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

Status Cluster::Route(Transaction& t, TableId table, std::vector<RowWrite> writes,
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
        ASSIGN_OR_RETURN(SegmentEntry e, catalog_->SegmentForKey(table, key));
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
      auto latch = Latch(id);
      latch->lock_shared();
      t.latches[id] = std::move(latch);
    }
    bool changed = false;
    for (const auto& e : segs) {
      if (!catalog_->SegmentIs(e)) changed = true;
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

Result<std::shared_ptr<NodeClient>> Cluster::Join(Transaction& t, NodeId node) {
  ASSIGN_OR_RETURN(auto client, registry_->Client(node));
  t.participants[node] = client;
  return client;
}

Status Cluster::SendDeferred(Transaction& t) {
  if (t.deferred.empty()) return Status::OK();
  auto held = std::move(t.deferred);
  t.deferred.clear();
  return Send(t, held);
}

size_t Cluster::ChunkEnd(const std::vector<RemoteWrite>& ws, size_t off) {
  size_t bytes = 0, end = off;
  while (end < ws.size() && end - off < kPrepareChunk &&
         (end == off || bytes < kPrepareChunkBytes)) {
    bytes += ws[end].key.size() + ws[end].row.size() + 16;
    end++;
  }
  return end;
}

Status Cluster::Send(Transaction& t, const WritesByNode& by_node) {
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

Status Cluster::CommitOnePhase(Transaction& t, NodeId node, const std::vector<RemoteWrite>& ws) {
  ASSIGN_OR_RETURN(auto client, registry_->Client(node));
  int pid = NodePid(node);
  ASSIGN_OR_RETURN(Timestamp ts, ts_.BeginCommit());
  std::vector<std::pair<SegmentId, uint64_t>> sizes;
  bool delivered = false;
  Status s = RpcPrepareCommit(*client, t.id, t.snapshot, ws, ts, &sizes, &delivered);
  ts_.EndCommit(ts);
  if (!s.ok() && delivered && IsLinkFailure(s)) {
    s = SettleUnknownCommit(node, pid, t.id, ts);
    if (s.ok() || s.sqlstate() == sqlstate::kStatementCompletionUnknown) EndTxn(t);
    return s;
  }
  if (s.ok()) {
    EndTxn(t);
    RequestSplitsIfOversized(sizes);
  }
  return s;
}

int Cluster::NodePid(NodeId node) { return registry_->Pid(node); }

Status Cluster::SettleUnknownCommit(NodeId node, int old_pid, uint64_t txn, Timestamp ts) {
  // A node that died comes back within a few seconds (the master restarts it); one that
  // froze is declared down after heartbeat_timeout_ms. Wait for either, but not longer.
  // The node's answer is final: a commit it has not applied by then never will be.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(config_.heartbeat_timeout_ms + 2000);
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = registry_->Client(node);
    if (c.ok()) {
      int pid = NodePid(node);
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
  Log("master")->warn("commit outcome unknown txn={} node=n{}", txn, node);
  return Status(
      Status::Code::kIOError,
      fmt::format(
          "connection to node {} lost during commit; the transaction may or may not have committed",
          node),
      sqlstate::kStatementCompletionUnknown);
}

void Cluster::RequestSplitsIfOversized(const std::vector<std::pair<SegmentId, uint64_t>>& sizes) {
  bool oversized = std::any_of(sizes.begin(), sizes.end(),
                               [&](const auto& p) { return p.second > config_.segment_bytes; });
  if (oversized) {
    MutexLock l(stop_mu_);
    split_wanted_ = true;
    stop_cv_.SignalAll();
  }
}

void Cluster::Rollback(Transaction& t) {
  for (auto& [node, c] : t.participants) (void)RpcAbort(*c, t.id);
  EndTxn(t);
}

void Cluster::ResolveInDoubt() {
  std::map<std::pair<NodeId, uint64_t>, uint64_t>
      still;  // resolutions the latest heartbeats still list
  for (const auto& n : registry_->Snapshot()) {
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
      auto client = registry_->Client(n.id);
      if (!client.ok()) break;
      auto decision = catalog_->Decision(txn);
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

void Cluster::BreakDeadlocks() {
  struct Wait {
    uint64_t holder;
    NodeId node;
  };
  std::multimap<uint64_t, Wait> waits;  // a statement may wait on several nodes at once
  for (const auto& n : registry_->Snapshot()) {
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
          auto c = registry_->Client(victim->second.node);
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

bool Cluster::IsPendingMove(SegmentId seg) const {
  for (const auto& m : catalog_->PendingMoves()) {
    if (m.segment == seg) return true;
  }
  return false;
}

std::map<NodeId, Cluster::NodeLoad> Cluster::SegmentCounts(TableId table, NodeId except) {
  std::map<NodeId, NodeLoad> load;
  for (const auto& n : config_.nodes) {
    if (n.id == except || !registry_->IsUp(n.id)) continue;
    if (catalog_->GetNodeState(n.id) != NodeAdminState::kActive) continue;
    load[n.id] = NodeLoad{};
  }
  for (const auto& s : catalog_->AllSegments()) {
    auto it = load.find(s.node);
    if (it == load.end()) continue;
    it->second.all++;
    if (s.table == table) it->second.of_table++;
  }
  return load;
}

NodeId Cluster::LeastLoadedNode(NodeId except, TableId table) {
  return LeastLoaded(SegmentCounts(table, except), table);
}

NodeId Cluster::NodeForNewTable() {
  if (auto* local = local_segments()) {
    NodeId home = local->node_id();
    if (registry_->IsUp(home) && catalog_->GetNodeState(home) == NodeAdminState::kActive)
      return home;
  }
  return LeastLoadedNode();
}

NodeId Cluster::LeastLoaded(const std::map<NodeId, NodeLoad>& load, TableId table) {
  NodeId best = 0;
  std::pair<size_t, size_t> best_load{SIZE_MAX, SIZE_MAX};
  for (const auto& [id, l] : load) {
    std::pair<size_t, size_t> key{table ? l.of_table : 0, l.all};
    if (key < best_load) {
      best = id;
      best_load = key;
    }
  }
  return best;
}

Result<MoveReport> Cluster::MoveSegment(SegmentId seg, NodeId target) {
  MutexLock admin(admin_mu_);
  int64_t t0 = clock_.NowMicros();
  if (!config_.FindNode(target))
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", target));
  if (catalog_->GetNodeState(target) != NodeAdminState::kActive) {
    return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                       fmt::format("node {} is {}; it cannot take segments", target,
                                   NodeAdminStateName(catalog_->GetNodeState(target))));
  }
  auto latch = Latch(seg);
  // Waits for in-flight writes and open transactions on the segment, but not forever: a
  // client idle inside a transaction block must not stall moves and maintenance.
  std::unique_lock<std::shared_timed_mutex> excl(*latch,
                                                 std::chrono::milliseconds(config_.latch_wait_ms));
  if (!excl.owns_lock()) return InUse(seg, config_.latch_wait_ms);
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_->GetSegment(seg));
  MoveReport rep{seg, e.node, target};
  if (e.node == target) return rep;
  ASSIGN_OR_RETURN(auto src, registry_->Client(e.node));
  ASSIGN_OR_RETURN(auto dst, registry_->Client(target));
  std::string src_host;
  uint16_t src_port = 0;
  for (const auto& n : registry_->Snapshot()) {
    if (n.id == e.node) {
      src_host = n.host;
      src_port = n.port;
    }
  }
  // An earlier move of this segment that a crash interrupted is rolled back first, and a
  // split whose outcome is unsettled is settled: the node may hold the segment's upper half
  // as a new segment, which must not stay behind when the segment moves.
  for (const auto& m : catalog_->PendingMoves()) {
    if (m.segment == seg) RETURN_NOT_OK(RecoverMove(m));
  }
  for (const auto& si : catalog_->PendingSplits()) {
    if (si.segment == seg) RETURN_NOT_OK(RecoverSplitLocked(si));
  }
  ASSIGN_OR_RETURN(e, catalog_->GetSegment(seg));
  if (e.node == target) return rep;
  RETURN_NOT_OK(catalog_->LogMoveIntent({seg, e.node, target}));
  MaybeFail("master.move.after_intent");
  auto pulled = RpcPull(*dst, seg, src_host, src_port);
  if (!pulled.ok() && pulled.status().code() == Status::Code::kAlreadyExists) {
    // A stale copy from an earlier, failed move (the source owns the segment): replace it.
    Log("master")->info("dropping stale copy seg={} node=n{} before moving it there", seg, target);
    RETURN_NOT_OK(RpcDropSegment(*dst, seg));
    pulled = RpcPull(*dst, seg, src_host, src_port);
  }
  if (!pulled.ok()) {
    (void)RpcDropSegment(*dst, seg);  // remove a partial import, if any
    (void)catalog_->ClearMoveIntent(seg);
    return pulled.status().Prepend(fmt::format("move of segment {} to node {}", seg, target));
  }
  MaybeFail("master.move.after_pull");
  RETURN_NOT_OK(catalog_->SetOwner(seg, target));
  MaybeFail("master.move.after_switch");
  Status dropped = RpcDropSegment(*src, seg);
  if (!dropped.ok()) {
    Log("master")->warn("source copy not dropped seg={} node={} err={} (maintenance retries)", seg,
                        e.node, dropped.ToString());
  }
  rep.bytes = pulled->bytes;
  rep.files = pulled->files;
  rep.pull_ms = pulled->micros / 1000.0;
  rep.total_ms = (clock_.NowMicros() - t0) / 1000.0;
  Log("master")->info(
      "segment moved seg={} from=n{} to=n{} bytes={} files={} pull_ms={:.1f} total_ms={:.1f}", seg,
      e.node, target, rep.bytes, rep.files, rep.pull_ms, rep.total_ms);
  return rep;
}

Result<std::vector<MoveReport>> Cluster::DrainNode(NodeId node) {
  if (!config_.FindNode(node))
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", node));
  RETURN_NOT_OK(catalog_->SetNodeState(node, NodeAdminState::kDraining));
  std::vector<MoveReport> reports;
  // Writes go on while the node drains, so its segments may split meanwhile: the pieces
  // stay on the node until a later round moves them too.
  for (int round = 0; round < 100; round++) {
    auto left = catalog_->SegmentsOnNode(node);
    if (left.empty()) break;
    for (const auto& s : left) {
      NodeId target = LeastLoadedNode(node);
      if (target == 0) {
        return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                           fmt::format("cannot drain node {}: no other active node is up", node));
      }
      ASSIGN_OR_RETURN(MoveReport r, MoveSegment(s.id, target));
      reports.push_back(r);
    }
  }
  if (size_t left = catalog_->SegmentsOnNode(node).size()) {
    return Status::Sql(
        sqlstate::kObjectNotInPrerequisiteState,
        fmt::format("node {} still owns {} segment(s) after 100 rounds of moves; writes "
                    "keep splitting them: try again",
                    node, left));
  }
  Log("master")->info("node drained id={} segments_moved={}", node, reports.size());
  return reports;
}

Status Cluster::RecoverMove(const MoveIntent& m) {
  // REQUIRES admin_mu_ and the segment's latch (exclusive) held. The intent is still logged, so the
  // ownership switch (which clears it in the same write) never happened: the source still owns the
  // segment and may have taken writes since, so the target's copy, if any, is stale. Roll back.
  auto dst = registry_->Client(m.to);
  if (dst.ok()) {
    Status dropped = RpcDropSegment(**dst, m.segment);
    if (!dropped.ok() && !dropped.IsNotFound()) return dropped;
  } else if (registry_->IsUp(m.to) || catalog_->GetNodeState(m.to) != NodeAdminState::kOff) {
    return dst.status();  // the target may hold a copy: drop it once it is reachable
  }
  RETURN_NOT_OK(catalog_->ClearMoveIntent(m.segment));
  Log("master")->info("logged move rolled back seg={} stays=n{}", m.segment, m.from);
  return Status::OK();
}

void Cluster::SettleLoggedReshapes() {
  // A live move or split holds admin_mu_, so what is pending here is not running.
  for (const auto& m : catalog_->PendingMoves()) {
    MutexLock admin(admin_mu_);
    if (!IsPendingMove(m.segment)) continue;  // settled meanwhile
    auto latch = Latch(m.segment);
    std::unique_lock<std::shared_timed_mutex> excl(
        *latch, std::chrono::milliseconds(config_.latch_wait_ms));
    Status s = excl.owns_lock() ? RecoverMove(m) : InUse(m.segment, config_.latch_wait_ms);
    if (!s.ok()) Log("master")->debug("move recovery waits seg={} err={}", m.segment, s.ToString());
  }
  for (const auto& si : catalog_->PendingSplits()) {
    MutexLock admin(admin_mu_);
    Status s = RecoverSplit(si);
    if (!s.ok())
      Log("master")->debug("split recovery waits seg={} err={}", si.segment, s.ToString());
  }
}

void Cluster::MaintainOnce() {
  BreakDeadlocks();
  ResolveInDoubt();
  ConfirmUnsyncedCommits();
  // Old versions no snapshot can see may go: tell every node the oldest snapshot in use.
  Timestamp horizon = ts_.GcHorizon();
  for (const auto& n : config_.nodes) {
    auto c = registry_->Client(n.id);
    if (c.ok()) (void)RpcGcHorizon(**c, horizon);
  }
  // 1. Logged moves and splits interrupted by a crash or a lost reply: settle them.
  SettleLoggedReshapes();
  // 2. Segments of dropped tables.
  for (const auto& t : catalog_->Trash()) {
    auto c = registry_->Client(t.node);
    if (c.ok() && RpcDropSegment(**c, t.id).ok()) (void)catalog_->ClearTrash(t.id);
  }
  // 3. Split oversized segments; drop stray copies left behind by moves. Repeats while
  //    splits happen so that a bulk load converges within one pass.
  for (int round = 0; round < 64; round++) {
    if (round > 0) {
      // Splits can keep this loop busy for many seconds: the duties that bound how long a
      // transaction may wait (a deadlock, a node's in-doubt transaction) are not left behind.
      BreakDeadlocks();
      ResolveInDoubt();
    }
    bool split_any = false;
    std::set<SegmentId> moving;
    for (const auto& m : catalog_->PendingMoves()) moving.insert(m.segment);
    for (const auto& n : config_.nodes) {
      auto c = registry_->Client(n.id);
      if (!c.ok()) continue;
      auto list = RpcListSegments(**c);
      if (!list.ok()) continue;
      for (const auto& rs : *list) {
        auto e = catalog_->GetSegment(rs.id);
        if (!e.ok() || moving.count(rs.id)) continue;  // unknown ids: in-flight split or trash
        if (e->node != n.id) {
          // Checked again under the admin lock: a move that started after the listing has
          // logged its intent by then (its target's copy is not stray).
          MutexLock admin(admin_mu_);
          auto owner = catalog_->GetSegment(rs.id);
          if (!owner.ok() || owner->node == n.id || IsPendingMove(rs.id)) continue;
          Log("master")->info("dropping stray copy seg={} node=n{} owner=n{}", rs.id, n.id,
                              owner->node);
          (void)RpcDropSegment(**c, rs.id);
        } else if (rs.bytes > config_.segment_bytes) {
          // A segment many times its size (a bulk load) is cut into pieces of half the size
          // from the top, many at once: the split reads and moves only what it cuts, where
          // halving would read the whole segment at every level. A bounded number of bytes
          // per request keeps it within the request's deadline; what is left splits in the
          // next round.
          const uint64_t piece = config_.segment_bytes / 2;
          uint64_t pieces = 1, top = 0;
          if (rs.bytes >= 2 * config_.segment_bytes && piece > 0) {
            top = piece;
            pieces = std::clamp<uint64_t>(rs.bytes / piece - 1, 1,
                                          std::max<uint64_t>(1, kSplitBytesPerRequest / piece));
            pieces = std::min<uint64_t>(pieces, kMaxSplitPieces);
          }
          // A reader whose segment split on its node but not yet in the map retries until the
          // split is settled: settled between splits, not once a pass of many is over.
          SettleLoggedReshapes();
          auto r = SplitPieces(rs.id, top, static_cast<uint32_t>(pieces));
          if (r.ok() && !r->empty()) split_any = true;
          if (!r.ok() && r.status().sqlstate() != sqlstate::kObjectInUse) {
            Log("master")->warn("split failed seg={} err={}", rs.id, r.status().ToString());
          }
        }
      }
    }
    {
      MutexLock l(stop_mu_);
      if (stopping_) return;
    }
    if (!split_any) break;
  }
}

void Cluster::MaintenanceLoop() {
  while (true) {
    {
      MutexLock l(stop_mu_);
      auto until = CondVar::Clock::now() + std::chrono::milliseconds(config_.telemetry_interval_ms);
      while (!stopping_ && !split_wanted_ && stop_cv_.WaitUntil(stop_mu_, until)) {
      }
      if (stopping_) break;
      split_wanted_ = false;
    }
    MaintainOnce();
  }
  ConfirmUnsyncedCommits();  // so that a clean stop leaves no decision behind
}

}  // namespace wattdb::master
