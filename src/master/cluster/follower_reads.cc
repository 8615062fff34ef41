#include "master/cluster/follower_reads.h"

#include <algorithm>

#include "common/logging.h"

namespace wattdb::master {

void FollowerReads::Fence(SegmentId seg) {
  auto e = catalog_.GetSegment(seg);
  if (!e.ok() || e->followers.empty()) return;
  MutexLock l(mu_);
  fenced_[seg] = Raised{e->epoch, clock_.NowMicros(), 0, 0};
  any_fenced_.store(true);
  Log("master")->info("follower reads of seg={} go to its leader until its followers catch up",
                      seg);
}

size_t FollowerReads::Fenced() const {
  MutexLock l(mu_);
  return fenced_.size();
}

bool FollowerReads::LiftableLocked(SegmentId seg, Raised& r, NodeId leader, uint64_t epoch,
                                   const std::vector<NodeId>& followers) {
  if (epoch != r.epoch) r = Raised{epoch, clock_.NowMicros(), 0, 0};  // re-armed: a new numbering
  if (r.leader_us == 0) {
    auto at = registry_.ReplicaSeq(leader, seg);
    if (!at || at->first <= r.since_us) return false;
    r.leader_us = at->first;
    r.leader_seq = at->second;
  }
  for (NodeId f : followers) {
    auto at = registry_.ReplicaSeq(f, seg);
    if (!at || at->first <= r.leader_us || at->second < r.leader_seq) return false;
  }
  return true;
}

NodeId FollowerReads::ReadFrom(SegmentId seg, NodeId leader, uint64_t epoch,
                               const std::vector<NodeId>& followers) {
  if (followers.empty()) return leader;
  if (any_fenced_.load()) {
    MutexLock l(mu_);
    auto it = fenced_.find(seg);
    if (it != fenced_.end()) {
      if (!LiftableLocked(seg, it->second, leader, epoch, followers)) return leader;
      fenced_.erase(it);
      any_fenced_.store(!fenced_.empty());
    }
  }
  // The copies that answer (up), with how busy their nodes are.
  NodeId picked[8];
  double busy[8];
  size_t n = 0;
  double least = -1;
  auto consider = [&](NodeId node) {
    double cpu = registry_.CpuPercent(node);
    if (cpu < 0 || n == std::size(picked)) return;
    picked[n] = node;
    busy[n++] = cpu;
    if (least < 0 || cpu < least) least = cpu;
  };
  consider(leader);
  for (NodeId f : followers) consider(f);
  if (n == 0) return leader;
  size_t near = 0;
  for (size_t i = 0; i < n; i++) {
    if (busy[i] <= least + kNearPercent) picked[near++] = picked[i];
  }
  return picked[turn_.fetch_add(1, std::memory_order_relaxed) % near];
}

}  // namespace wattdb::master
