// Placement's replica sets (docs/design/replication.md): seeding followers, dropping one
// that missed a commit, handing leadership over, failing over from a dead leader, and
// forgetting what a restarted node held in memory.
//
// Lock order: admin_mu_, then a segment's latch, then replica_mu_ (held only around a
// set's read-modify-write and the requests that make the nodes agree with it, never across
// a copy).
#include <algorithm>

#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/placement.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

namespace {

std::vector<NodeId> Without(std::vector<NodeId> nodes, NodeId n) {
  nodes.erase(std::remove(nodes.begin(), nodes.end(), n), nodes.end());
  return nodes;
}

bool Has(const std::vector<NodeId>& nodes, NodeId n) {
  return std::find(nodes.begin(), nodes.end(), n) != nodes.end();
}

}  // namespace

uint32_t Placement::WantedReplicas(TableId table) const {
  uint32_t want = static_cast<uint32_t>(config_.replication_factor);
  if (auto t = catalog_.TableById(table); t && t->replicas > 0) want = t->replicas;
  return std::clamp<uint32_t>(want, 1,
                              static_cast<uint32_t>(std::max<size_t>(config_.nodes.size(), 1)));
}

Result<std::vector<ReplicaAddress>> Placement::Addresses(const std::vector<NodeId>& nodes) {
  std::vector<ReplicaAddress> out;
  auto all = registry_.Snapshot();
  for (NodeId n : nodes) {
    auto it = std::find_if(all.begin(), all.end(), [&](const NodeInfo& i) { return i.id == n; });
    if (it == all.end() || it->port == 0)
      return Status::Unavailable(fmt::format("node {} has no known address", n));
    out.push_back({n, it->host, it->port});
  }
  return out;
}

Status Placement::TellLeader(const SegmentEntry& e, uint64_t next_seq) {
  ASSIGN_OR_RETURN(auto leader, registry_.Client(e.node));
  ASSIGN_OR_RETURN(auto followers, Addresses(e.followers));
  return RpcLead(*leader, e.id, e.epoch, followers, next_seq);
}

Status Placement::Replicate(SegmentId seg) {
  MutexLock admin(admin_mu_);
  ASSIGN_OR_RETURN(auto excl, latches_.LockExclusive(seg, config_.latch_wait_ms));
  return ReplicateLocked(seg);
}

Status Placement::ReplicateLocked(SegmentId seg) {
  while (true) {
    ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
    if (e.followers.size() + 1 >= WantedReplicas(e.table)) return Status::OK();
    std::map<NodeId, NodeLoad> load = SegmentCounts(e.table, e.node);
    for (NodeId f : e.followers) load.erase(f);
    NodeId target = LeastLoaded(load, e.table);
    if (target == 0) return Status::OK();  // as many copies as there are nodes to hold them
    RETURN_NOT_OK(SeedFollowerLocked(e, target));
  }
}

Status Placement::SeedFollowerLocked(const SegmentEntry& e, NodeId target) {
  // No commit of the segment is in flight (its latch is held exclusively): the copy is the
  // leader's state after its last record, and the new epoch's numbering starts at 1.
  int64_t t0 = clock_.NowMicros();
  ASSIGN_OR_RETURN(auto dst, registry_.Client(target));
  ASSIGN_OR_RETURN(auto src, Addresses({e.node}));
  auto pulled = RpcPull(*dst, e.id, src[0].host, src[0].port);
  if (!pulled.ok() && pulled.status().code() == Status::Code::kAlreadyExists) {
    RETURN_NOT_OK(RpcDropSegment(*dst, e.id));  // a stale copy (a follower once, or a move's)
    pulled = RpcPull(*dst, e.id, src[0].host, src[0].port);
  }
  if (!pulled.ok()) {
    (void)RpcDropSegment(*dst, e.id);
    return pulled.status().Prepend(fmt::format("seeding segment {} on node {}", e.id, target));
  }
  MutexLock l(replica_mu_);
  auto now = catalog_.GetSegment(e.id);
  if (!now.ok() || now->epoch != e.epoch || now->node != e.node) {
    (void)RpcDropSegment(*dst, e.id);
    return Status::Aborted(fmt::format("segment {} changed while a follower was seeded", e.id));
  }
  SegmentEntry next = *now;
  next.followers.push_back(target);
  next.epoch = e.epoch + 1;
  // The nodes first, then the set: a follower the catalog names is always one the leader
  // ships to. A failure leaves the segment with the followers it had.
  Status s = RpcFollow(*dst, e.id, next.epoch, 1);
  for (NodeId f : e.followers) {
    if (!s.ok()) break;
    auto c = registry_.Client(f);
    s = c.ok() ? RpcFollow(**c, e.id, next.epoch, 1) : c.status();
  }
  if (s.ok()) s = TellLeader(next, 1);
  if (s.ok()) s = catalog_.SetReplicas(e.id, e.node, next.followers, next.epoch).status();
  if (!s.ok()) {
    (void)RpcDropSegment(*dst, e.id);
    (void)UnreplicateHeld(e.id);
    return s;
  }
  Log("master")->info("follower seeded seg={} leader=n{} follower=n{} epoch={} bytes={} ms={:.1f}",
                      e.id, e.node, target, next.epoch, pulled->bytes,
                      (clock_.NowMicros() - t0) / 1000.0);
  return Status::OK();
}

Status Placement::UnreplicateHeld(SegmentId seg) {
  // REQUIRES replica_mu_.
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
  if (e.followers.empty()) return Status::OK();
  ASSIGN_OR_RETURN(e, catalog_.SetReplicas(seg, e.node, {}, e.epoch));
  // The leader ships to no one from here on; should it not hear it now, the followers it
  // still ships to are in no set (their copies are dropped as strays).
  Status told = TellLeader(e, 0);
  if (!told.ok()) {
    Log("master")->info("leader of seg={} not told its followers left: {}", seg, told.ToString());
  }
  return Status::OK();
}

Status Placement::Unreplicate(SegmentId seg) {
  MutexLock l(replica_mu_);
  return UnreplicateHeld(seg);
}

Status Placement::DropFollower(SegmentId seg, NodeId leader, NodeId node, const std::string& why) {
  MutexLock l(replica_mu_);
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
  if (e.node != leader) {
    return Status::Unavailable(
        fmt::format("segment {} is led by node {} now, not {}", seg, e.node, leader));
  }
  if (Has(e.followers, node)) {
    ASSIGN_OR_RETURN(e, catalog_.SetReplicas(seg, e.node, Without(e.followers, node), e.epoch));
    Log("master")->warn("follower dropped seg={} node=n{} leader=n{}: {}", seg, node, e.node, why);
  }
  Status told = TellLeader(e, 0);
  if (!told.ok()) {
    // The leader would go on shipping to a node in no set: harmless (its failures come back
    // here), but a leader that cannot be told is not in the epoch this set says.
    Log("master")->info("leader of seg={} not told: {}", seg, told.ToString());
  }
  return Status::OK();
}

Status Placement::TrimReplicas(SegmentId seg) {
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
  while (e.followers.size() + 1 > WantedReplicas(e.table)) {
    NodeId f = e.followers.back();
    RETURN_NOT_OK(DropFollower(seg, e.node, f, "the table wants fewer replicas"));
    // A copy not dropped now is a stray, dropped by upkeep.
    if (auto c = registry_.Client(f); c.ok()) (void)RpcDropSegment(**c, seg);
    ASSIGN_OR_RETURN(e, catalog_.GetSegment(seg));
  }
  return Status::OK();
}

void Placement::ForgetReplicasOf(NodeId node) {
  MutexLock l(replica_mu_);
  for (const SegmentEntry& e : catalog_.AllSegments()) {
    if (e.node == node && !e.followers.empty()) {
      // Its process is new (its disk may be new too): a follower, which holds every
      // acknowledged commit, leads. With none up, the node leads alone (its replicator starts
      // empty: the followers would miss what it commits from now on).
      if (!FailOverHeld(e, "restarted").ok() && catalog_.SetReplicas(e.id, node, {}, e.epoch).ok())
        Log("master")->info("replicas of seg={} reset: leader n{} restarted", e.id, node);
    } else if (Has(e.followers, node)) {
      auto next = catalog_.SetReplicas(e.id, e.node, Without(e.followers, node), e.epoch);
      if (next.ok()) (void)TellLeader(*next, 0);
    }
  }
}

void Placement::ForgetAllReplicas() {
  MutexLock l(replica_mu_);
  for (const SegmentEntry& e : catalog_.AllSegments()) {
    if (!e.followers.empty()) (void)catalog_.SetReplicas(e.id, e.node, {}, e.epoch);
  }
}

void Placement::FailOver() {
  for (const SegmentEntry& seen : catalog_.AllSegments()) {
    if (seen.followers.empty() || registry_.IsUp(seen.node)) continue;
    NodeAdminState state = catalog_.GetNodeState(seen.node);
    if (state == NodeAdminState::kOff || state == NodeAdminState::kSuspended) continue;
    MutexLock l(replica_mu_);
    auto e = catalog_.GetSegment(seen.id);
    if (!e.ok() || e->epoch != seen.epoch || registry_.IsUp(e->node)) continue;
    (void)FailOverHeld(*e, "down");
  }
}

Status Placement::FailOverHeld(const SegmentEntry& e, const char* why) {
  int64_t t0 = clock_.NowMicros();
  // Every follower holds every acknowledged commit; the first live one leads, alone, in a
  // new epoch. The others stop following (the old leader's records, should it resume, are
  // refused everywhere) and are seeded again from the new leader.
  NodeId pick = 0;
  for (NodeId f : e.followers) {
    if (pick == 0 && registry_.IsUp(f)) pick = f;
  }
  if (pick == 0) {  // no copy is reachable: the segment waits for one
    return Status::Unavailable(fmt::format("segment {}: no follower is up", e.id));
  }
  SegmentEntry next = e;
  next.node = pick;
  next.followers.clear();
  next.epoch = e.epoch + 1;
  for (NodeId f : e.followers) {
    if (f == pick) continue;
    if (auto c = registry_.Client(f); c.ok()) (void)RpcFollow(**c, e.id, next.epoch, 0);
  }
  Status s = TellLeader(next, 1);
  if (s.ok()) s = catalog_.SetReplicas(e.id, pick, {}, next.epoch).status();
  if (!s.ok()) {
    Log("master")->warn("failover of seg={} to n{} waits: {}", e.id, pick, s.ToString());
    return s;
  }
  Log("master")->warn("failover seg={} from=n{} ({}) to=n{} epoch={} ms={:.1f}", e.id, e.node, why,
                      pick, next.epoch, (clock_.NowMicros() - t0) / 1000.0);
  return Status::OK();
}

Status Placement::PromoteLocked(const SegmentEntry& e, NodeId target) {
  // REQUIRES admin_mu_ and the segment's latch held exclusively: no commit is in flight, so
  // `target` holds every record of its leader. Leadership changes hands without a copy; the
  // old leader follows in the new epoch.
  MutexLock l(replica_mu_);
  SegmentEntry next = e;
  next.node = target;
  next.followers = Without(e.followers, target);
  next.followers.push_back(e.node);
  next.epoch = e.epoch + 1;
  // The old leader first: it refuses while a transaction prepared there holds writes on the
  // segment (that commit would land on it alone), and then nothing has changed yet.
  std::vector<NodeId> order{e.node};
  for (NodeId f : next.followers) {
    if (f != e.node) order.push_back(f);
  }
  Status s;
  for (size_t i = 0; i < order.size() && s.ok(); i++) {
    auto c = registry_.Client(order[i]);
    s = c.ok() ? RpcFollow(**c, e.id, next.epoch, 1) : c.status();
    if (!s.ok() && i == 0) return s.Prepend(fmt::format("handing segment {} over", e.id));
  }
  if (s.ok()) s = TellLeader(next, 1);
  if (s.ok()) MaybeFail("master.promote.before_catalog");
  if (s.ok()) s = catalog_.SetReplicas(e.id, target, next.followers, next.epoch).status();
  if (!s.ok()) {
    // Undone as far as the nodes answer: the old leader leads alone again.
    SegmentEntry back = e;
    back.followers.clear();
    back.epoch = e.epoch + 2;
    if (TellLeader(back, 1).ok()) (void)catalog_.SetReplicas(e.id, e.node, {}, back.epoch);
    return s.Prepend(fmt::format("handing segment {} to node {}", e.id, target));
  }
  Log("master")->info("leadership handed over seg={} from=n{} to=n{} epoch={}", e.id, e.node,
                      target, next.epoch);
  return Status::OK();
}

void Placement::ReplicateUnderReplicated() {
  int seeded = 0;
  for (const SegmentEntry& e : catalog_.AllSegments()) {
    if (Stopping() || seeded >= kSeedsPerRound) return;
    if (e.followers.size() + 1 >= WantedReplicas(e.table) || !registry_.IsUp(e.node)) continue;
    if (catalog_.GetNodeState(e.node) != NodeAdminState::kActive) continue;
    Status s = Replicate(e.id);
    if (s.ok()) {
      seeded++;
    } else if (s.sqlstate() != sqlstate::kObjectInUse) {
      Log("master")->info("replicas of seg={} wait: {}", e.id, s.ToString());
    }
  }
}

}  // namespace wattdb::master
