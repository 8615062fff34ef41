// EnergyController: decides, every telemetry interval, how many nodes run and where the
// segments live, so that the cluster's power follows its load (the control loop of
// docs/design/energy-controller.md).
//
// One step: observe the nodes (CPU in use, capacity, segments with their bytes and heat),
// feed the cluster's CPU demand (cores) to the forecaster, decide at most one thing, and do it
// before returning:
//   wake N   the forecast demand exceeds (scale_out_cpu + hysteresis) of the active capacity,
//            or fewer than min_active_nodes are active (static mode: every node). N brings the
//            forecast under scale_out_cpu; when the active nodes are saturated (the demand
//            beyond them cannot be seen), N at least doubles them. Wakes through
//            the plane (returns once the node registered); a node that does not is marked failed
//            and the next one is tried. Then refills the woken nodes hottest segment first
//            until no move narrows the gap between the hottest node and a woken one.
//   rebalance  one node's CPU exceeds (scale_out_cpu + hysteresis) of its own while the
//            cluster's does not: up to kRebalanceMoves of its hottest segments move to cooler
//            nodes (the same rule as a refill). If its hottest segment carries most of its
//            heat, that segment is split first (a move cannot divide it); if no move would
//            narrow the gap, or kRebalanceTries rebalances in a row have not cooled it, one
//            node is woken and refilled instead.
//   sleep 1  demand stayed below (scale_in_cpu − hysteresis) of the capacity for window_s, the
//            forecast fits the other nodes below (scale_out_cpu − hysteresis), more than
//            min_active_nodes are active, and the predicted idle time exceeds the break-even
//            time. The node with the fewest bytes (unpinned) is drained to the coolest nodes
//            and put into the policy's standby state.
//   none     otherwise, with the reason.
// Moves of drains and refills are paced to migration_mb_s. Nothing is decided during
// cooldown_s after an action, while an operator action runs, or in manual mode.
// With latency_target_ms set, a wake also happens when the statements finished during the last
// interval took longer than that on average while demand is above scale_in_cpu (the nodes are
// busy, not idle behind one long query): CPU readings miss nodes starved by their host.
// Predicted idle time = how long demand has already stayed low, or less if the forecaster's
// trend reaches the remaining nodes' scale-out threshold sooner.
//
// Not thread-safe except SetPolicy/policy/log: one thread calls Step.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "common/status.h"
#include "master/energy/decision_log.h"
#include "master/energy/forecaster.h"
#include "master/energy/policy.h"

namespace wattdb::master {

struct ControlSegment {
  SegmentId id = 0;
  uint64_t bytes = 0;
  double heat = 0;                // rows read + written per second, recently
  std::vector<NodeId> followers;  // nodes holding a copy that follows this node's
};

enum class ControlState { kActive, kDraining, kSuspended, kOff };

struct ControlNode {
  NodeId id = 0;
  ControlState state = ControlState::kActive;
  bool up = false;       // registered and serving
  bool busy = false;     // an operator action on it is running
  bool hosted = false;   // lives in the master process: never put to sleep (as if pinned)
  double cpu_cores = 0;  // CPU in use, in cores
  HostProfile profile;   // capacity (cpus) and watts
  std::vector<ControlSegment> segments;
  uint64_t bytes() const;
  // The bytes a drain copies: of the segments that no node of `live` (active and up) follows
  // (the others change leader without a copy).
  uint64_t bytes_to_copy(const std::vector<const ControlNode*>& live) const;
  double heat() const;
};

struct MovedSegment {
  uint64_t bytes = 0;
  double seconds = 0;  // the copy's duration
};

// What the controller observes and acts on. The master's implementation drives the cluster;
// tests script one with a ManualClock.
class ControlPlane {
 public:
  virtual ~ControlPlane() = default;
  virtual std::vector<ControlNode> Observe() = 0;
  // Powers the node on and returns once it serves; 57P03 if it did not register in time.
  virtual Status Wake(NodeId node) = 0;
  // Marks a node draining (no new segments) or active again.
  virtual Status SetDraining(NodeId node, bool draining) = 0;
  virtual Result<MovedSegment> Move(SegmentId seg, NodeId to) = 0;
  // Splits a segment at its middle key; returns the new segment's id, or 0 if it cannot split.
  virtual Result<SegmentId> Split(SegmentId seg) = 0;
  // Puts a node that owns nothing to sleep: suspend (true) or power off.
  virtual Status Sleep(NodeId node, bool suspend) = 0;
  // Statements finished at the master so far and the microseconds they took (cumulative).
  virtual std::pair<uint64_t, uint64_t> Statements() { return {0, 0}; }
  // Waits `seconds` (pacing of moves); false if the controller should stop.
  virtual bool Pause(double seconds) = 0;
};

class EnergyController {
 public:
  static constexpr int kRebalanceMoves = 4;  // moves per rebalance decision, at most
  static constexpr int kRebalanceTries = 2;  // rebalances of one hot node before a wake instead
  static constexpr double kSaturated =
      0.95;  // demand / capacity at which the active nodes are saturated
  EnergyController(ControlPlane& plane, const Clock& clock, EnergyPolicy policy);

  // One control step (see above). Returns the decision, also appended to log() unless it
  // repeats the previous "none" with the same reason.
  DecisionRecord Step();

  // A new policy takes effect at the next step; the forecaster restarts if its kind changed.
  void SetPolicy(EnergyPolicy p);
  EnergyPolicy policy() const;
  DecisionLog& log() { return log_; }
  // Bytes per second of recent moves (0 until one was measured).
  double measured_move_rate() const { return move_rate_; }

 private:
  struct Inputs;
  Inputs Measure(const std::vector<ControlNode>& nodes, const EnergyPolicy& p, int64_t now_us);
  // Wakes up to `count` of `candidates` in order, skipping failures; then refills the woken.
  void DoWake(const std::vector<ControlNode>& nodes, const std::vector<NodeId>& candidates,
              int count, const EnergyPolicy& p, DecisionRecord* rec);
  void DoSleep(const std::vector<ControlNode>& nodes, NodeId victim, const EnergyPolicy& p,
               DecisionRecord* rec);
  // Moves segments onto `fresh` nodes, hottest first, from the node with the most load (heat, or
  // bytes while nothing is hot), while a move narrows the gap. Returns moves made.
  int Refill(const std::vector<ControlNode>& nodes, const std::set<NodeId>& fresh,
             const EnergyPolicy& p, DecisionRecord* rec, int max_moves = 100000);
  // Moves `seg` and paces to the policy's bandwidth; false if the controller should stop.
  Status PacedMove(const ControlSegment& seg, NodeId to, const EnergyPolicy& p,
                   uint64_t* moved_bytes);
  double EffectiveRate(const EnergyPolicy& p) const;
  void Record(DecisionRecord rec);
  // Step's parts, in its order: each returns the decision once it takes one (recorded).
  // `rec`: the step's record so far (its measurements); `now`: when the step began.
  // ScaleOut: demand above scale_out_cpu, wake. Rebalance: one node hot, move, split or wake.
  // ScaleIn: demand low for long enough, sleep.
  std::optional<DecisionRecord> ScaleOut(const EnergyPolicy& p, const Inputs& in,
                                         std::vector<ControlNode>& nodes, DecisionRecord rec,
                                         int64_t now);
  std::optional<DecisionRecord> Rebalance(const EnergyPolicy& p, const Inputs& in,
                                          std::vector<ControlNode>& nodes, DecisionRecord rec,
                                          int64_t now);
  DecisionRecord ScaleIn(const EnergyPolicy& p, const Inputs& in, std::vector<ControlNode>& nodes,
                         DecisionRecord rec, int64_t now);
  // Records `r`; Act also starts the cooldown (an action was taken at `started_us`).
  DecisionRecord Done(DecisionRecord r);
  DecisionRecord Act(DecisionRecord r, int64_t started_us);

  ControlPlane& plane_;
  const Clock& clock_;
  mutable Mutex policy_mu_;
  EnergyPolicy policy_ GUARDED_BY(policy_mu_);
  std::string forecaster_kind_;
  std::unique_ptr<Forecaster> forecaster_;
  std::deque<std::pair<int64_t, double>> window_;  // (time us, demand in cores)
  int64_t low_since_us_ = -1;                      // demand below scale-in since then (-1: not low)
  int64_t last_action_us_ = -1;
  std::map<NodeId, std::string> failed_;  // nodes that did not wake, with why
  double move_rate_ = 0;                  // bytes/s, smoothed
  std::pair<uint64_t, uint64_t> last_statements_{0, 0};
  NodeId rebalanced_node_ = 0;  // the hot node of the last rebalances, in a row
  int rebalances_ = 0;
  DecisionLog log_;
};

}  // namespace wattdb::master
