// FollowerReads: which copy of a replicated segment a follower read goes to
// (docs/design/replication.md, "Follower reads"), and the segments whose followers may not
// be read for now.
//
// Any follower in a segment's set when a read is planned holds every commit acknowledged
// before its snapshot was taken (a commit is acknowledged only once every follower of the
// set holds it, or was dropped from the set). One exception: a commit whose outcome the
// master could not learn (08007) may be on the leader and not on a follower still in the
// set. Fence(seg) is raised then; follower reads of that segment go to its leader until
// the heartbeats show every follower applied at least what the leader had numbered after
// the fence went up, in one epoch.
//
// Among the copies that may answer, the one whose node is least busy (process CPU at its
// last heartbeat) is read; copies within kNearPercent of the least busy take turns.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "common/schema.h"
#include "master/catalog/catalog.h"
#include "master/nodes/node_registry.h"

namespace wattdb::master {

class FollowerReads {
 public:
  static constexpr double kNearPercent = 15;

  FollowerReads(Catalog& catalog, NodeRegistry& registry, const Clock& clock)
      : catalog_(catalog), registry_(registry), clock_(clock) {}

  // A commit on `seg` ended with its outcome unknown: its followers may lack it.
  void Fence(SegmentId seg) EXCLUDES(mu_);
  // The node to read `seg` on: `leader`, or one of `followers` (live, of `epoch`).
  NodeId ReadFrom(SegmentId seg, NodeId leader, uint64_t epoch,
                  const std::vector<NodeId>& followers) EXCLUDES(mu_);
  // Segments fenced now (for tests and wattdb_replicas).
  size_t Fenced() const EXCLUDES(mu_);

 private:
  struct Raised {
    uint64_t epoch = 0;    // the set's epoch when raised (or re-armed)
    int64_t since_us = 0;  // raised (or re-armed) then
    uint64_t leader_seq = 0;
    int64_t leader_us = 0;  // the leader's first heartbeat after since_us (0: none yet)
  };
  // Whether the fence on `seg` may go now (the followers hold what the leader numbered).
  bool LiftableLocked(SegmentId seg, Raised& r, NodeId leader, uint64_t epoch,
                      const std::vector<NodeId>& followers) REQUIRES(mu_);

  Catalog& catalog_;        // borrowed; outlives this
  NodeRegistry& registry_;  // borrowed; outlives this
  const Clock& clock_;
  std::atomic<uint64_t> turn_{0};
  std::atomic<bool> any_fenced_{false};  // lets ReadFrom skip the lock when nothing is
  mutable Mutex mu_;
  std::map<SegmentId, Raised> fenced_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
