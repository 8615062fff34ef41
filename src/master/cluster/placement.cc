// Placement: moves, drains, where segments go, and the upkeep of the segment map
// (placement.h).
#include "master/cluster/placement.h"

#include <algorithm>
#include <set>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/drain.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

Placement::Placement(const ClusterConfig& config, const Clock& clock, Catalog& catalog,
                     NodeRegistry& registry, NodePower& power, TimestampOracle& ts,
                     SegmentLatches& latches, Options opts)
    : config_(config),
      clock_(clock),
      catalog_(catalog),
      registry_(registry),
      power_(power),
      ts_(ts),
      latches_(latches),
      opts_(std::move(opts)) {}

bool Placement::IsPendingMove(SegmentId seg) const {
  for (const auto& m : catalog_.PendingMoves()) {
    if (m.segment == seg) return true;
  }
  return false;
}

std::map<NodeId, Placement::NodeLoad> Placement::SegmentCounts(TableId table, NodeId except) {
  std::map<NodeId, NodeLoad> load;
  for (const auto& n : config_.nodes) {
    if (n.id == except || !registry_.IsUp(n.id)) continue;
    if (catalog_.GetNodeState(n.id) != NodeAdminState::kActive) continue;
    load[n.id] = NodeLoad{};
  }
  for (const auto& s : catalog_.AllSegments()) {
    auto it = load.find(s.node);
    if (it == load.end()) continue;
    it->second.all++;
    if (s.table == table) it->second.of_table++;
  }
  return load;
}

NodeId Placement::LeastLoadedNode(NodeId except, TableId table) {
  return LeastLoaded(SegmentCounts(table, except), table);
}

NodeId Placement::NodeForNewTable() {
  if (auto* local = opts_.local ? opts_.local->load() : nullptr) {
    NodeId home = local->node_id();
    if (registry_.IsUp(home) && catalog_.GetNodeState(home) == NodeAdminState::kActive) return home;
  }
  return LeastLoadedNode();
}

NodeId Placement::LeastLoaded(const std::map<NodeId, NodeLoad>& load, TableId table) {
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

Result<MoveReport> Placement::MoveSegment(SegmentId seg, NodeId target) {
  MutexLock admin(admin_mu_);
  int64_t t0 = clock_.NowMicros();
  if (!config_.FindNode(target))
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", target));
  if (catalog_.GetNodeState(target) != NodeAdminState::kActive) {
    return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                       fmt::format("node {} is {}; it cannot take segments", target,
                                   NodeAdminStateName(catalog_.GetNodeState(target))));
  }
  // Waits for in-flight writes and open transactions on the segment, but not forever: a
  // client idle inside a transaction block must not stall moves and maintenance.
  ASSIGN_OR_RETURN(auto excl, latches_.LockExclusive(seg, config_.latch_wait_ms));
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
  MoveReport rep{seg, e.node, target};
  if (e.node == target) return rep;
  ASSIGN_OR_RETURN(auto src, registry_.Client(e.node));
  ASSIGN_OR_RETURN(auto dst, registry_.Client(target));
  std::string src_host;
  uint16_t src_port = 0;
  for (const auto& n : registry_.Snapshot()) {
    if (n.id == e.node) {
      src_host = n.host;
      src_port = n.port;
    }
  }
  // An earlier move of this segment that a crash interrupted is rolled back first, and a
  // split whose outcome is unsettled is settled: the node may hold the segment's upper half
  // as a new segment, which must not stay behind when the segment moves.
  for (const auto& m : catalog_.PendingMoves()) {
    if (m.segment == seg) RETURN_NOT_OK(RecoverMove(m));
  }
  for (const auto& si : catalog_.PendingSplits()) {
    if (si.segment == seg) RETURN_NOT_OK(RecoverSplitLocked(si));
  }
  ASSIGN_OR_RETURN(e, catalog_.GetSegment(seg));
  if (e.node == target) return rep;
  if (std::find(e.followers.begin(), e.followers.end(), target) != e.followers.end()) {
    // A follower holds the segment already: leadership changes hands, no byte moves.
    RETURN_NOT_OK(PromoteLocked(e, target));
    rep.total_ms = (clock_.NowMicros() - t0) / 1000.0;
    return rep;
  }
  if (!e.followers.empty()) {
    // The copy moves alone; upkeep seeds followers of the moved segment again.
    RETURN_NOT_OK(Unreplicate(seg));
    ASSIGN_OR_RETURN(e, catalog_.GetSegment(seg));
  }
  RETURN_NOT_OK(catalog_.LogMoveIntent({seg, e.node, target}));
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
    (void)catalog_.ClearMoveIntent(seg);
    return pulled.status().Prepend(fmt::format("move of segment {} to node {}", seg, target));
  }
  MaybeFail("master.move.after_pull");
  RETURN_NOT_OK(catalog_.SetOwner(seg, target));
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

Result<std::vector<MoveReport>> Placement::DrainNode(NodeId node) {
  if (!config_.FindNode(node))
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", node));
  RETURN_NOT_OK(catalog_.SetNodeState(node, NodeAdminState::kDraining));
  std::vector<MoveReport> reports;
  DrainSteps steps;
  steps.owned = [&]() -> Result<std::vector<SegmentId>> {
    std::vector<SegmentId> ids;
    for (const auto& s : catalog_.SegmentsOnNode(node)) ids.push_back(s.id);
    return ids;
  };
  steps.move = [&](SegmentId seg) -> Status {
    // A node that follows the segment takes the lead without a copy; else the least loaded.
    std::map<NodeId, NodeLoad> load = SegmentCounts(0, node);
    std::map<NodeId, NodeLoad> following;
    if (auto e = catalog_.GetSegment(seg); e.ok()) {
      for (NodeId f : e->followers) {
        if (load.count(f)) following[f] = load[f];
      }
    }
    NodeId target = LeastLoaded(following.empty() ? load : following, 0);
    if (target == 0) {
      return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                         fmt::format("cannot drain node {}: no other active node is up", node));
    }
    ASSIGN_OR_RETURN(MoveReport r, MoveSegment(seg, target));
    reports.push_back(r);
    return Status::OK();
  };
  RETURN_NOT_OK(DrainRounds(node, kMaxDrainRounds, steps));
  Log("master")->info("node drained id={} segments_moved={}", node, reports.size());
  return reports;
}

Status Placement::RecoverMove(const MoveIntent& m) {
  // REQUIRES admin_mu_ and the segment's latch (exclusive) held. The intent is still logged, so the
  // ownership switch (which clears it in the same write) never happened: the source still owns the
  // segment and may have taken writes since, so the target's copy, if any, is stale. Roll back.
  auto dst = registry_.Client(m.to);
  if (dst.ok()) {
    Status dropped = RpcDropSegment(**dst, m.segment);
    if (!dropped.ok() && !dropped.IsNotFound()) return dropped;
  } else if (registry_.IsUp(m.to) || catalog_.GetNodeState(m.to) != NodeAdminState::kOff) {
    return dst.status();  // the target may hold a copy: drop it once it is reachable
  }
  RETURN_NOT_OK(catalog_.ClearMoveIntent(m.segment));
  Log("master")->info("logged move rolled back seg={} stays=n{}", m.segment, m.from);
  return Status::OK();
}

void Placement::SettleLoggedReshapes() {
  // A live move or split holds admin_mu_, so what is pending here is not running.
  for (const auto& m : catalog_.PendingMoves()) {
    MutexLock admin(admin_mu_);
    if (!IsPendingMove(m.segment)) continue;  // settled meanwhile
    auto excl = latches_.LockExclusive(m.segment, config_.latch_wait_ms);
    Status s = excl.ok() ? RecoverMove(m) : excl.status();
    if (!s.ok()) Log("master")->debug("move recovery waits seg={} err={}", m.segment, s.ToString());
  }
  for (const auto& si : catalog_.PendingSplits()) {
    MutexLock admin(admin_mu_);
    Status s = RecoverSplit(si);
    if (!s.ok())
      Log("master")->debug("split recovery waits seg={} err={}", si.segment, s.ToString());
  }
}

void Placement::Maintain(const std::function<void()>& between) {
  // 0. Segments whose leader is down pass to a follower.
  FailOver();
  // 1. Logged moves and splits interrupted by a crash or a lost reply: settle them.
  SettleLoggedReshapes();
  // 2. Segments of dropped tables.
  for (const auto& t : catalog_.Trash()) {
    auto c = registry_.Client(t.node);
    if (c.ok() && RpcDropSegment(**c, t.id).ok()) (void)catalog_.ClearTrash(t.id);
  }
  // 3. Split oversized segments; drop stray copies left behind by moves. Repeats while
  //    splits happen so that a bulk load converges within one pass.
  for (int round = 0; round < 64 && !Stopping(); round++) {
    // Splits can keep this loop busy for many seconds: the duties that bound how long a
    // transaction may wait (a deadlock, a node's in-doubt transaction) are not left behind.
    if (round > 0 && between) between();
    if (!SplitOversized()) break;
  }
  // 4. Copies asleep on nodes awake again catch up; segments with fewer copies than their
  //    tables want get followers.
  if (between) between();
  std::set<NodeId> woken;
  for (const auto& e : catalog_.AllSegments()) {
    for (NodeId n : e.asleep) {
      if (registry_.IsUp(n) && catalog_.GetNodeState(n) == NodeAdminState::kActive) woken.insert(n);
    }
  }
  for (NodeId n : woken) CatchUpAsleep(n);
  ReplicateUnderReplicated();
}

bool Placement::SplitOversized() {
  bool split_any = false;
  std::set<SegmentId> moving;
  for (const auto& m : catalog_.PendingMoves()) moving.insert(m.segment);
  for (const auto& n : config_.nodes) {
    auto c = registry_.Client(n.id);
    if (!c.ok()) continue;
    auto list = RpcListSegments(**c);
    if (!list.ok()) continue;
    for (const auto& rs : *list) {
      auto e = catalog_.GetSegment(rs.id);
      if (!e.ok() || moving.count(rs.id)) continue;  // unknown ids: in-flight split or trash
      if (e->node != n.id) {
        const auto& fs = e->followers;
        if (std::find(fs.begin(), fs.end(), n.id) != fs.end()) continue;     // a replica
        if (std::count(e->asleep.begin(), e->asleep.end(), n.id)) continue;  // one that slept
        // Checked again under the admin lock: a move that started after the listing has
        // logged its intent by then (its target's copy is not stray).
        MutexLock admin(admin_mu_);
        auto owner = catalog_.GetSegment(rs.id);
        if (!owner.ok() || owner->node == n.id || IsPendingMove(rs.id)) continue;
        const auto& now = owner->followers;
        if (std::find(now.begin(), now.end(), n.id) != now.end()) continue;
        if (std::count(owner->asleep.begin(), owner->asleep.end(), n.id)) continue;
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
  return split_any;
}

}  // namespace wattdb::master
