// Placement's replica sets (docs/design/replication.md): seeding followers, dropping one
// that missed a commit, handing leadership over, failing over from a dead leader, and
// forgetting what a restarted node held in memory.
//
// Lock order: admin_mu_, then a segment's latch, then replica_mu_ (held only around a
// set's read-modify-write and the requests that make the nodes agree with it, never across
// a copy).
#include <algorithm>
#include <chrono>
#include <thread>

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
  uint32_t want = static_cast<uint32_t>(config_.ReplicationFactor());
  if (auto t = catalog_.TableById(table); t && t->replicas > 0) want = t->replicas;
  return std::clamp<uint32_t>(want, 1,
                              static_cast<uint32_t>(std::max<size_t>(config_.nodes.size(), 1)));
}

bool Placement::ShortOfCopies(const SegmentEntry& e) const {
  // Sleeping copies count as copies while enough of the others are awake.
  size_t want = WantedReplicas(e.table);
  size_t live = e.followers.size() + 1;
  size_t min_live = std::min<size_t>(want, static_cast<size_t>(min_live_replicas_.load()));
  return live + e.asleep.size() < want || live < min_live;
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
  // Records are kept for sleeping copies only in the numbering they hold (next_seq 0).
  uint64_t keep = next_seq == 0 && !e.asleep.empty() ? sleep_log_bytes_.load() : 0;
  return RpcLead(*leader, e.id, e.epoch, followers, next_seq, keep);
}

void Placement::SetSleepPolicy(int min_live, uint64_t keep_bytes) {
  min_live_replicas_ = std::max(1, min_live);
  sleep_log_bytes_ = keep_bytes;
}

Status Placement::SleepFollower(SegmentId seg, NodeId node) {
  ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
  std::string why = fmt::format("node {} goes to sleep", node);
  if (sleep_log_bytes_ == 0 || !Has(e.followers, node)) return DropFollower(seg, e.node, node, why);
  MutexLock l(replica_mu_);
  ASSIGN_OR_RETURN(e, catalog_.SetAsleep(seg, node, Catalog::AsleepChange::kSleep));
  Log("master")->info("follower asleep seg={} node=n{} leader=n{} epoch={}", seg, node, e.node,
                      e.epoch);
  // Not told: it ships to the sleeping node until it fails there, then drops it (same set).
  Status told = TellLeader(e, 0);
  if (!told.ok()) Log("master")->info("leader of seg={} not told: {}", seg, told.ToString());
  return Status::OK();
}

int Placement::CatchUpAsleep(NodeId node) {
  // Where the node's copies stand, as its first heartbeat since it (re)registered tells:
  // nothing changes them while it sleeps, and that heartbeat is from after its sleep.
  std::map<SegmentId, uint64_t> at;
  auto deadline = clock_.NowMicros() + int64_t{config_.heartbeat_timeout_ms} * 1000;
  bool heard = false;
  while (!heard && !Stopping()) {
    for (const auto& n : registry_.Snapshot()) {
      if (n.id != node || !n.up || n.last_heartbeat_us <= n.registered_us) continue;
      heard = true;
      for (const auto& s : n.segments) at[s.id] = s.replica_seq;
    }
    if (heard || clock_.NowMicros() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!heard) return 0;  // not heard from: upkeep tries again
  int caught = 0;
  for (const SegmentEntry& seen : catalog_.AllSegments()) {
    if (!Has(seen.asleep, node) || Stopping()) continue;
    int64_t t0 = clock_.NowMicros();
    // No commit of the segment is in flight while its latch is held exclusively: once the
    // kept records are in, the copy holds every record, and follows from the next one.
    MutexLock admin(admin_mu_);
    auto excl = latches_.LockExclusive(seen.id, config_.latch_wait_ms);
    if (!excl.ok()) {  // busy: the next upkeep pass tries again
      Log("master")->info("asleep copy seg={} node=n{} waits: {}", seen.id, node,
                          excl.status().ToString());
      continue;
    }
    auto e = catalog_.GetSegment(seen.id);
    if (!e.ok() || !Has(e->asleep, node)) continue;
    uint64_t from = at.count(e->id) ? at[e->id] + 1 : 0;
    Status s = from ? Status::OK() : Status::NotFound("the node does not follow it any more");
    if (s.ok()) {
      auto leader = registry_.Client(e->node);
      auto addr = Addresses({node});
      s = !leader.ok() ? leader.status()
          : !addr.ok() ? addr.status()
                       : RpcCatchUp(**leader, e->id, (*addr)[0], from);
    }
    MutexLock l(replica_mu_);
    if (s.ok()) {
      // The leader first, then the set: a follower the catalog names is one it ships to.
      auto now = catalog_.GetSegment(e->id);  // a failover meanwhile leaves the copy behind
      if (!now.ok() || now->epoch != e->epoch || now->node != e->node || !Has(now->asleep, node)) {
        s = Status::Aborted("the set changed meanwhile");
      } else {
        SegmentEntry next = *now;
        next.followers.push_back(node);
        next.asleep = Without(next.asleep, node);
        s = TellLeader(next, 0);
        if (s.ok()) s = catalog_.SetAsleep(e->id, node, Catalog::AsleepChange::kWake).status();
      }
    }
    if (!s.ok()) {
      // Given up: its copy is a stray now, dropped by upkeep, which seeds another if needed.
      Log("master")->info("asleep copy seg={} node=n{} not caught up ({}): seeded again", e->id,
                          node, s.ToString());
      auto forgot = catalog_.SetAsleep(e->id, node, Catalog::AsleepChange::kForget);
      if (forgot.ok()) (void)TellLeader(*forgot, 0);
      continue;
    }
    caught++;
    Log("master")->info("asleep copy caught up seg={} node=n{} leader=n{} from_seq={} ms={:.1f}",
                        e->id, node, e->node, from, (clock_.NowMicros() - t0) / 1000.0);
  }
  return caught;
}

Status Placement::Replicate(SegmentId seg) {
  MutexLock admin(admin_mu_);
  ASSIGN_OR_RETURN(auto excl, latches_.LockExclusive(seg, config_.latch_wait_ms));
  return ReplicateLocked(seg);
}

Status Placement::ReplicateLocked(SegmentId seg) {
  while (true) {
    ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
    if (!ShortOfCopies(e)) return Status::OK();
    std::map<NodeId, NodeLoad> load = SegmentCounts(e.table, e.node);
    for (NodeId f : e.followers) load.erase(f);
    NodeId target = LeastLoaded(load, e.table);
    if (target == 0) return Status::OK();  // as many copies as there are nodes to hold them
    RETURN_NOT_OK(SeedFollowerLocked(e, target));
  }
}

std::map<SegmentId, NodeId> Placement::Learners() const {
  MutexLock l(learner_mu_);
  return learners_;
}

Status Placement::SeedFollowerLocked(const SegmentEntry& e, NodeId target) {
  // No commit of the segment is in flight (its latch is held exclusively): the copy is the
  // leader's state after its last record, and the new epoch's numbering starts at 1.
  int64_t t0 = clock_.NowMicros();
  {
    MutexLock l(learner_mu_);
    learners_[e.id] = target;
  }
  struct Learned {
    Placement* p;
    SegmentId seg;
    ~Learned() {
      MutexLock l(p->learner_mu_);
      p->learners_.erase(seg);
    }
  } learned{this, e.id};
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
    } else if (Has(e.asleep, node)) {
      auto next = catalog_.SetAsleep(e.id, node, Catalog::AsleepChange::kForget);
      if (next.ok()) (void)TellLeader(*next, 0);
    }
  }
}

void Placement::ForgetAllReplicas() {
  MutexLock l(replica_mu_);
  for (const SegmentEntry& e : catalog_.AllSegments()) {
    if (!e.followers.empty()) (void)catalog_.SetReplicas(e.id, e.node, {}, e.epoch);
    for (NodeId n : e.asleep) (void)catalog_.SetAsleep(e.id, n, Catalog::AsleepChange::kForget);
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
    if (!ShortOfCopies(e) || !registry_.IsUp(e.node)) continue;
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
