// Placement: where the cluster's segments live, and the operations that change it -- moves,
// splits, drains, the power state of nodes, and the table-wide write blocks an index build
// needs. Moves and splits are logged in the catalog before they touch a node, so a crash or
// a lost reply leaves an intent that SettleLoggedReshapes finishes or rolls back. A move, a
// split or a write block holds its segments' latches exclusively (segment_latches.h): it
// never runs under a transaction's writes. One admin lock serializes them.
//
// Depends on the catalog, the node registry, the power drivers, the timestamp oracle and the
// latches, all borrowed; not on transactions (coordinator.h). Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "master/catalog/catalog.h"
#include "master/cluster/segment_latches.h"
#include "master/cluster/timestamp_oracle.h"
#include "master/nodes/node_registry.h"
#include "master/nodes/node_rpc.h"
#include "master/power/node_power.h"
#include "rpc/exchange.h"

namespace wattdb::master {

struct MoveReport {
  SegmentId segment = 0;
  NodeId from = 0, to = 0;
  uint64_t bytes = 0;
  uint32_t files = 0;
  double pull_ms = 0;   // export + ship + import, measured on the target
  double total_ms = 0;  // including latch wait and ownership switch
};

class Placement {
 public:
  struct Options {
    bool balance = true;  // spread split-off segments to the least loaded node
    // The node this process hosts, if any (NodeForNewTable prefers it).
    const std::atomic<rpc::LocalSegments*>* local = nullptr;
    // True once the cluster stops: long waits end early.
    std::function<bool()> stopping;
  };
  // All borrowed; they outlive the placement.
  Placement(const ClusterConfig& config, const Clock& clock, Catalog& catalog,
            NodeRegistry& registry, NodePower& power, TimestampOracle& ts, SegmentLatches& latches,
            Options opts);

  Result<MoveReport> MoveSegment(SegmentId seg, NodeId target);
  // Marks `node` draining and moves its segments, each to the least loaded active node,
  // round after round while writes split them (DrainRounds, drain.h).
  Result<std::vector<MoveReport>> DrainNode(NodeId node);
  // Splits `seg` if it holds at least two keys; returns the new segment id or 0.
  // With `top_bytes` > 0 the node splits off about that many bytes of its highest keys
  // (see SegmentStore::Split), else at the middle.
  Result<SegmentId> SplitSegment(SegmentId seg, uint64_t top_bytes = 0);
  // Cuts up to `pieces` pieces of about `piece_bytes` off the top of `seg` in one step on its
  // node (SegmentStore::SplitPieces; one logged intent for all); returns the new segments'
  // ids in key order, or none if `seg` holds fewer than two keys.
  Result<std::vector<SegmentId>> SplitPieces(SegmentId seg, uint64_t piece_bytes, uint32_t pieces);
  // The active, up node (excluding `except`) with the fewest segments of `table` (if not 0),
  // then the fewest segments, or 0 if none.
  NodeId LeastLoadedNode(NodeId except = 0, TableId table = 0);
  // Where a new table's first segment goes: the master node while it is active (as in the
  // paper, the master alone holds everything until data grows or load asks for more nodes;
  // splits and the energy controller spread it), else the least loaded node.
  NodeId NodeForNewTable();

  // ALTER NODE n POWER OFF | SUSPEND: refused (55000) while the node owns segments, and
  // (0A000) if its power driver cannot do it. POWER ON starts an off node or resumes a
  // suspended one and returns once it has registered.
  Status PowerOff(NodeId node);
  Status Suspend(NodeId node);
  Status PowerOn(NodeId node);
  // At start (--manage-nodes): powers on every node not asleep by its admin state (but the
  // one this process hosts) and waits for each to register; a node that fails is reported.
  void PowerOnAll();
  // Marks an active node draining (placement and moves skip it) or a draining one active.
  Status SetDraining(NodeId node, bool draining);

  // An operator's action on a node (ALTER NODE, a manual move to it) is running while one of
  // these lives; the energy controller leaves the cluster alone meanwhile.
  class OperatorAction {
   public:
    OperatorAction(Placement& p, NodeId node) : p_(p), node_(node) {
      MutexLock l(p_.operator_mu_);
      p_.operator_nodes_.insert(node_);
    }
    ~OperatorAction() {
      MutexLock l(p_.operator_mu_);
      p_.operator_nodes_.erase(p_.operator_nodes_.find(node_));
    }
    OperatorAction(const OperatorAction&) = delete;
    OperatorAction& operator=(const OperatorAction&) = delete;

   private:
    Placement& p_;
    NodeId node_;
  };
  bool OperatorBusy(NodeId node) {
    MutexLock l(operator_mu_);
    return operator_nodes_.count(node) > 0;
  }

  // Secondary indexes (placement_index.cc). CreateIndex blocks writes to the table while it
  // adds `def` (spec.id assigned by the caller) to every segment, which builds its entries
  // at one snapshot and maintains them from then on; a unique index is checked for
  // duplicates (23505) before it is stored in the catalog, ready for snapshots after it.
  // `table` is the catalog (qualified) name. Returns the new index's id.
  Result<uint32_t> CreateIndex(const std::string& table, IndexDef def);
  Status DropIndex(const std::string& table, uint32_t index);
  // Holds the latches of every segment of `table` exclusively: writers to it wait until this
  // is destroyed. Waits up to latch_wait_ms for transactions that wrote the table (55006).
  struct WriteBlock {
    std::vector<std::unique_lock<SegmentLatches::Latch>> latches;
  };
  Result<std::unique_ptr<WriteBlock>> BlockWrites(TableId table);

  // Replica sets (placement_replicas.cc, docs/design/replication.md).
  // The copies of each segment of `table`: its WITH (replicas = N), else the cluster's
  // replication_factor; at most one per data node.
  uint32_t WantedReplicas(TableId table) const;
  // Seeds followers of `seg` on other active, up nodes (the fewest segments first) until it
  // has the copies its table wants, or every such node holds one. A seed copies the leader's
  // segment (the move path's pull) under the segment's exclusive latch, tells the nodes the
  // new epoch, then writes the set.
  Status Replicate(SegmentId seg);
  // The energy policy's word on sleeping copies: every replicated segment keeps at least
  // `min_live` live copies (upkeep seeds one when fewer are awake), and a leader keeps up to
  // `keep_bytes` of the records a sleeping copy misses (0: a sleeping copy is re-seeded).
  void SetSleepPolicy(int min_live, uint64_t keep_bytes);
  // A follower on `node` leaves `seg`'s set because its node goes to sleep: kept as asleep
  // (the leader keeping what it misses) unless the policy keeps nothing.
  Status SleepFollower(SegmentId seg, NodeId node) EXCLUDES(replica_mu_);
  // `node` woke: each of its asleep copies is caught up from its leader's kept records and
  // follows again, or, if that cannot be, is given up (upkeep seeds a copy). Returns the
  // copies caught up.
  int CatchUpAsleep(NodeId node);
  // The followers being seeded now (segment -> node): learners, not yet in the set.
  std::map<SegmentId, NodeId> Learners() const EXCLUDES(learner_mu_);
  // Takes `node` out of `seg`'s followers (it did not make a record of `leader`'s durable), in
  // the same epoch, and tells the leader. Called before that commit is acknowledged: fails
  // (Unavailable) if `leader` no longer leads `seg` (a failover came first: the commit may
  // be missing from the copy that leads now).
  Status DropFollower(SegmentId seg, NodeId leader, NodeId node, const std::string& why);
  // Drops followers of `seg` beyond the copies its table wants (the newest first), from the
  // set and then their copies.
  Status TrimReplicas(SegmentId seg);
  // `seg` keeps its leader alone (its followers' copies become strays, dropped by upkeep).
  Status Unreplicate(SegmentId seg) EXCLUDES(replica_mu_);
  // A node (re)registered: what it held in memory of replication is gone, so it leads its
  // segments alone and follows none, until upkeep seeds them again.
  void ForgetReplicasOf(NodeId node);
  // At start: no node's replication state is known, so every segment keeps its leader alone.
  void ForgetAllReplicas();
  // Each segment led by a node that is down (and not off or suspended by an operator's or
  // the controller's word) passes to a live follower, alone, in a new epoch.
  void FailOver();

  // One round of upkeep (the cluster's maintenance): settles logged moves and splits, drops
  // the segments of dropped tables and stray copies, and splits oversized segments, round
  // after round while splits happen. `between` runs between rounds (duties that must not
  // wait for a long pass).
  void Maintain(const std::function<void()>& between);

 private:
  struct NodeLoad {
    size_t all = 0, of_table = 0;  // segments on the node, and of one table
  };
  // Segments per active, up node (excluding `except`), in all and of `table`.
  std::map<NodeId, NodeLoad> SegmentCounts(TableId table, NodeId except = 0);
  // The node of `load` with the fewest segments of `table` (if not 0), then the fewest; 0 if none.
  static NodeId LeastLoaded(const std::map<NodeId, NodeLoad>& load, TableId table);
  // After a split: each new segment goes where its table has the fewest segments.
  void BalanceSplit(NodeId node, TableId table, const std::vector<SegmentId>& fresh);
  // Splits every oversized segment one round (and drops stray copies); true if any split.
  bool SplitOversized();
  Status RecoverMove(const MoveIntent& m);
  Status RecoverSplit(const SplitIntent& si);
  // Settles every logged move and split whose outcome a crash or a lost reply left open (as
  // far as their nodes answer). Takes admin_mu_ for each; called between units of
  // maintenance work, so that a reader held back by one waits at most one split or move.
  void SettleLoggedReshapes();
  // RecoverSplit with admin_mu_ and the segment's latch (exclusive) held by the caller.
  Status RecoverSplitLocked(const SplitIntent& si);
  bool IsPendingMove(SegmentId seg) const;
  // Waits up to `wait_ms` for node `n` to register after a power on; repeats the wake of
  // drivers that cannot observe it (Wake-on-LAN). REQUIRES no other power action on n (the
  // power lock held, or the supervisor not started yet).
  bool AwaitRegistration(const NodeConfig& n, int wait_ms);
  // PowerOff and Suspend: checks, marks the admin state, runs the driver.
  Status PowerDown(NodeId node, power::PowerAction action);
  // BlockWrites with admin_mu_ held by the caller (no split can add a segment meanwhile).
  Result<std::unique_ptr<WriteBlock>> BlockWritesLocked(TableId table);
  bool Stopping() const { return opts_.stopping && opts_.stopping(); }
  // Replica sets: ReplicateLocked and the steps below REQUIRE admin_mu_ and `e`'s latch
  // held exclusively; *Held REQUIRE replica_mu_.
  Status ReplicateLocked(SegmentId seg);
  Status SeedFollowerLocked(const SegmentEntry& e, NodeId target);
  Status PromoteLocked(const SegmentEntry& e, NodeId target) EXCLUDES(replica_mu_);
  Status UnreplicateHeld(SegmentId seg) REQUIRES(replica_mu_);
  // `e`'s first live follower leads it alone in a new epoch (Unavailable if none is up).
  Status FailOverHeld(const SegmentEntry& e, const char* why) REQUIRES(replica_mu_);
  // Tells `e`'s leader its followers and epoch (next_seq 0: its numbering goes on).
  Status TellLeader(const SegmentEntry& e, uint64_t next_seq);
  // Fewer copies than the table wants, counting asleep ones, or fewer live than the policy's
  // min_live_replicas.
  bool ShortOfCopies(const SegmentEntry& e) const;
  Result<std::vector<ReplicaAddress>> Addresses(const std::vector<NodeId>& nodes);
  // Upkeep: seeds the followers segments lack, a few per round.
  void ReplicateUnderReplicated();

  static constexpr uint64_t kSplitBytesPerRequest = 256ull << 20;  // a cut moves at most this
  static constexpr uint64_t kMaxSplitPieces = 64;
  static constexpr int kMaxDrainRounds = 100;
  static constexpr int kSeedsPerRound = 8;

  const ClusterConfig& config_;
  const Clock& clock_;
  Catalog& catalog_;
  NodeRegistry& registry_;
  NodePower& power_;
  TimestampOracle& ts_;
  SegmentLatches& latches_;
  const Options opts_;
  Mutex admin_mu_;  // serializes moves, splits and drains (guards no data: held across calls)
  Mutex operator_mu_;
  Mutex replica_mu_;  // replica sets' read-modify-writes (after admin_mu_ and latches)
  std::atomic<int> min_live_replicas_{1};
  std::atomic<uint64_t> sleep_log_bytes_{64ull << 20};
  mutable Mutex learner_mu_;
  std::map<SegmentId, NodeId> learners_ GUARDED_BY(learner_mu_);
  std::multiset<NodeId> operator_nodes_ GUARDED_BY(operator_mu_);
};

}  // namespace wattdb::master
