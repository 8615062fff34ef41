#include "master/energy/controller.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "common/sqlstate.h"

namespace wattdb::master {
namespace {

constexpr uint64_t kMB = 1 << 20;

// A scripted cluster: nodes with a CPU demand the test sets, segments that move, wakes that
// succeed unless told otherwise. Time is a ManualClock that pacing and wakes advance.
class FakePlane : public ControlPlane {
 public:
  explicit FakePlane(ManualClock& clock, int nodes) : clock_(clock) {
    for (int i = 1; i <= nodes; i++) {
      ControlNode n;
      n.id = i;
      n.up = true;
      n.profile.cpus = 1.0;
      nodes_.push_back(n);
    }
  }
  ControlNode& node(NodeId id) { return nodes_[id - 1]; }
  void Asleep(NodeId id) {
    node(id).state = ControlState::kSuspended;
    node(id).up = false;
  }
  void AddSegment(NodeId id, SegmentId seg, uint64_t bytes, double heat) {
    node(id).segments.push_back({seg, bytes, heat});
  }
  std::vector<ControlNode> Observe() override { return nodes_; }
  Status Wake(NodeId id) override {
    wakes.push_back(id);
    clock_.Advance(2'000'000);
    if (std::count(never_wakes.begin(), never_wakes.end(), id)) {
      return Status(Status::Code::kUnavailable, "did not register", sqlstate::kCannotConnectNow);
    }
    node(id).state = ControlState::kActive;
    node(id).up = true;
    return Status::OK();
  }
  Status SetDraining(NodeId id, bool d) override {
    node(id).state = d ? ControlState::kDraining : ControlState::kActive;
    return Status::OK();
  }
  Result<MovedSegment> Move(SegmentId seg, NodeId to) override {
    for (auto& n : nodes_) {
      for (size_t i = 0; i < n.segments.size(); i++) {
        if (n.segments[i].id != seg) continue;
        ControlSegment s = n.segments[i];
        n.segments.erase(n.segments.begin() + i);
        moves.emplace_back(seg, to);
        if (std::count(s.followers.begin(), s.followers.end(), to)) {
          std::erase(s.followers, to);  // a follower leads: nothing is copied
          s.followers.push_back(n.id);
          node(to).segments.push_back(s);
          return MovedSegment{0, 0};
        }
        node(to).segments.push_back(s);
        double secs = s.bytes / (200.0 * kMB);  // copies at 200 MB/s
        clock_.Advance(static_cast<int64_t>(secs * 1e6));
        return MovedSegment{s.bytes, secs};
      }
    }
    return Status::NotFound("no such segment");
  }
  Result<SegmentId> Split(SegmentId seg) override {
    for (auto& n : nodes_) {
      for (auto& s : n.segments) {
        if (s.id != seg) continue;
        s.bytes /= 2;
        s.heat /= 2;
        SegmentId fresh = 1000 + splits.size();
        n.segments.push_back({fresh, s.bytes, s.heat});
        splits.push_back(seg);
        return fresh;
      }
    }
    return Status::NotFound("no such segment");
  }
  Status Sleep(NodeId id, bool suspend) override {
    if (!node(id).segments.empty())
      return Status::Sql(sqlstate::kObjectNotInPrerequisiteState, "owns segments");
    node(id).state = suspend ? ControlState::kSuspended : ControlState::kOff;
    node(id).up = false;
    sleeps.push_back(id);
    return Status::OK();
  }
  std::pair<uint64_t, uint64_t> Statements() override { return statements; }
  bool Pause(double s) override {
    paused_s += s;
    clock_.Advance(static_cast<int64_t>(s * 1e6));
    return true;
  }

  std::vector<NodeId> wakes, sleeps, never_wakes;
  std::vector<SegmentId> splits;
  std::pair<uint64_t, uint64_t> statements{0, 0};  // finished, microseconds
  std::vector<std::pair<SegmentId, NodeId>> moves;
  double paused_s = 0;

 private:
  ManualClock& clock_;
  std::vector<ControlNode> nodes_;
};

EnergyPolicy Policy() {
  EnergyPolicy p;
  p.window_s = 10;
  p.cooldown_s = 5;
  p.migration_mb_s = 0;
  p.forecaster = "ewma";  // demand as observed: the thresholds are what is tested
  p.alpha = 1;
  return p;
}

// Steps once a second until a decision other than "none" or `seconds` pass.
DecisionRecord RunUntilAction(EnergyController& c, ManualClock& clock, int seconds) {
  DecisionRecord r;
  for (int i = 0; i < seconds; i++) {
    r = c.Step();
    if (r.decision != "none") return r;
    clock.Advance(1'000'000);
  }
  return r;
}

struct ControllerTest : ::testing::Test {
  ManualClock clock;
  FakePlane plane{clock, 4};
  void SetUp() override {
    // Node 1 serves everything; 2..4 sleep. Segments 1..6, hotter by number.
    for (NodeId n = 2; n <= 4; n++) plane.Asleep(n);
    for (SegmentId s = 1; s <= 6; s++) plane.AddSegment(1, s, 4 * kMB, 10.0 * s);
  }
};

TEST_F(ControllerTest, WakesAtTheScaleOutThresholdAndRefillsHottestFirst) {
  EnergyController c(plane, clock, Policy());
  plane.node(1).cpu_cores = 0.84;  // above 0.80 but inside the hysteresis
  EXPECT_EQ(RunUntilAction(c, clock, 20).decision, "none");
  EXPECT_TRUE(plane.wakes.empty());
  plane.node(1).cpu_cores = 0.86;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake") << r.reason;
  EXPECT_EQ(r.outcome, "ok");
  ASSERT_EQ(plane.wakes.size(), 1u) << "0.86 cores: one more node brings it under 0.80 per node";
  NodeId woken = plane.wakes[0];
  ASSERT_FALSE(plane.moves.empty());
  EXPECT_EQ(plane.moves[0], std::make_pair(SegmentId{6}, woken))
      << "the hottest segment moves first";
  // Heat 10..60 (total 210): the woken node ends with about half.
  double moved_heat = plane.node(woken).heat();
  EXPECT_GE(moved_heat, 80);
  EXPECT_LE(moved_heat, 130);
  EXPECT_NEAR(r.forecast_utilization, 0.86, 1e-9);
}

TEST_F(ControllerTest, ARefillHandsOverWhatTheWokenNodeFollowsFirst) {
  EnergyController c(plane, clock, Policy());
  plane.node(1).segments[4].followers = {2, 3, 4};  // segment 5: a copy on every sleeping node
  plane.node(1).cpu_cores = 0.86;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake") << r.reason;
  ASSERT_FALSE(plane.moves.empty());
  EXPECT_EQ(plane.moves[0].first, SegmentId{5}) << "a handover before the hottest copy";
}

TEST_F(ControllerTest, WakesSeveralNodesForALargeStep) {
  EnergyController c(plane, clock, Policy());
  plane.node(1).cpu_cores = 1.0;
  plane.node(1).profile.cpus = 1.0;
  for (NodeId n = 2; n <= 4; n++) plane.node(n).profile.cpus = 0.4;
  // Average capacity 0.55 cores: 1.0 core at 80% needs ceil(1.0 / 0.44) = 3 nodes.
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.size(), 2u) << r.actions;
}

TEST_F(ControllerTest, SaturatedNodesAtLeastDouble) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  plane.AddSegment(2, 20, 4 * kMB, 200);
  plane.node(1).cpu_cores = 1.0;
  plane.node(2).cpu_cores = 1.0;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.size(), 3u) << "2 active and saturated: 2 more, " << r.actions;
}

TEST_F(ControllerTest, CooldownHoldsTheNextDecision) {
  EnergyPolicy p = Policy();
  p.cooldown_s = 30;
  EnergyController c(plane, clock, p);
  plane.node(1).cpu_cores = 0.95;
  ASSERT_EQ(c.Step().decision, "wake");
  // The demand moved with the segments, and is high again on both.
  for (NodeId n : {NodeId{1}, plane.wakes[0]}) plane.node(n).cpu_cores = 0.9;
  clock.Advance(1'000'000);
  DecisionRecord held = c.Step();
  EXPECT_EQ(held.decision, "none");
  EXPECT_EQ(held.reason, "cooldown after the last action");
  DecisionRecord r = RunUntilAction(c, clock, 60);
  EXPECT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.size(), 2u);
}

TEST_F(ControllerTest, ScalesInAfterTheWindowTheNodeCheapestToMove) {
  EnergyPolicy p = Policy();
  p.pinned = {2};
  EnergyController c(plane, clock, p);
  ASSERT_TRUE(plane.Wake(2).ok());
  ASSERT_TRUE(plane.Wake(3).ok());
  plane.AddSegment(2, 20, 1 * kMB, 1);  // cheapest, but pinned
  plane.AddSegment(3, 30, 2 * kMB, 1);
  plane.node(1).cpu_cores = 0.05;
  clock.Advance(1'000'000);
  // Below scale-in, but not for the whole window yet.
  for (int i = 0; i < 9; i++) {
    DecisionRecord r = c.Step();
    ASSERT_EQ(r.decision, "none");
    EXPECT_EQ(r.reason, "demand below scale_in_cpu, not yet for window_s");
    clock.Advance(1'000'000);
  }
  DecisionRecord r = RunUntilAction(c, clock, 5);
  ASSERT_EQ(r.decision, "sleep") << r.reason;
  EXPECT_EQ(r.outcome, "ok") << r.actions;
  EXPECT_EQ(plane.sleeps, std::vector<NodeId>{3});
  EXPECT_EQ(plane.node(3).state, ControlState::kSuspended);
  EXPECT_TRUE(plane.node(3).segments.empty());
  EXPECT_GT(r.predicted_idle_s, r.break_even_s);
  // Then node 1 (unpinned), never node 2, and never below min_active_nodes = 1... which
  // leaves node 2 only once node 1 is drained: min is 1, so one more sleep happens.
  r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "sleep");
  EXPECT_EQ(plane.sleeps.back(), 1u);
  EXPECT_EQ(plane.node(2).segments.size(), 8u) << "everything ends on the pinned node";
  r = RunUntilAction(c, clock, 30);
  EXPECT_EQ(r.decision, "none");
  EXPECT_EQ(r.reason, "demand below scale_in_cpu, at min_active_nodes");
}

TEST_F(ControllerTest, ScalesInTheNodeWhoseSegmentsAreFollowedAndCopiesNothing) {
  EnergyPolicy p = Policy();
  p.pinned = {1};
  EnergyController c(plane, clock, p);
  ASSERT_TRUE(plane.Wake(2).ok());
  ASSERT_TRUE(plane.Wake(3).ok());
  // Node 2 holds more, but node 3 follows all of it; node 3's one segment has no copy.
  plane.AddSegment(2, 20, 8 * kMB, 1);
  plane.node(2).segments.back().followers = {3};
  plane.AddSegment(3, 30, 2 * kMB, 500);  // node 3 is the hotter node, node 1 the cooler
  plane.node(1).cpu_cores = 0.05;
  DecisionRecord r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "sleep") << r.reason;
  EXPECT_EQ(r.outcome, "ok") << r.actions;
  EXPECT_EQ(plane.sleeps, std::vector<NodeId>{2}) << "its drain copies 0 bytes, node 3's 2 MB";
  EXPECT_EQ(plane.moves, (std::vector<std::pair<SegmentId, NodeId>>{{20, 3}}))
      << "to the node that follows it, not to the cooler node 1";
  EXPECT_NE(r.actions.find("0.0 MB"), std::string::npos) << r.actions;
}

TEST_F(ControllerTest, NoNodeSleepsThatWouldLeaveASegmentShortOfLiveCopies) {
  EnergyPolicy p = Policy();
  p.pinned = {1};
  p.min_live_replicas = 2;
  EnergyController c(plane, clock, p);
  ASSERT_TRUE(plane.Wake(2).ok());
  ASSERT_TRUE(plane.Wake(3).ok());
  // Node 2 leads segment 20, followed by node 3; node 3 leads 30, followed by node 1.
  plane.AddSegment(2, 20, 8 * kMB, 1);
  plane.node(2).segments.back().followers = {3};
  plane.AddSegment(3, 30, 2 * kMB, 5);  // hotter: node 2 is the one to sleep
  plane.node(3).segments.back().followers = {1};
  plane.node(1).cpu_cores = 0.05;
  DecisionRecord r = RunUntilAction(c, clock, 30);
  EXPECT_EQ(r.decision, "none");
  EXPECT_NE(r.reason.find("min_live_replicas"), std::string::npos) << r.reason;
  EXPECT_TRUE(plane.sleeps.empty());
  p.min_live_replicas = 1;  // energy first: node 2 sleeps (node 3 keeps segment 20 live)
  c.SetPolicy(p);
  r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "sleep") << r.reason;
  EXPECT_EQ(plane.sleeps, std::vector<NodeId>{2});
}

TEST_F(ControllerTest, TheNodeTheMasterHostsIsNeverPutToSleep) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  plane.node(1).hosted = true;  // 24 MB: cheaper to empty than node 2, but in the master
  plane.AddSegment(2, 20, 40 * kMB, 1);
  plane.node(1).cpu_cores = 0.05;
  DecisionRecord r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "sleep") << r.reason;
  EXPECT_EQ(plane.sleeps, std::vector<NodeId>{2});
  EXPECT_EQ(plane.node(1).segments.size(), 7u) << "everything ends on the master's node";
  r = RunUntilAction(c, clock, 30);
  EXPECT_EQ(r.decision, "none");
}

TEST_F(ControllerTest, BreakEvenRefusesASleepThatWouldNotPayOff) {
  EnergyPolicy p = Policy();
  p.migration_mb_s = 1;  // 24 MB to move at 1 MB/s: a minute of sleep to pay off
  EnergyController c(plane, clock, p);
  ASSERT_TRUE(plane.Wake(2).ok());
  plane.node(1).cpu_cores = 0.01;
  // Node 2 owns nothing: cheap to sleep. Make both expensive.
  for (SegmentId s = 10; s < 16; s++) plane.AddSegment(2, s, 4 * kMB, 1);
  DecisionRecord r = RunUntilAction(c, clock, 20);
  EXPECT_EQ(r.decision, "none");
  EXPECT_NE(r.reason.find("break-even"), std::string::npos) << r.reason;
  EXPECT_LE(r.predicted_idle_s, r.break_even_s);
  EXPECT_GT(r.break_even_s, 50);  // (110 J down + 44 J up + 2 x 22 W x 24 s) / 19.5 W = 62 s
  EXPECT_TRUE(plane.sleeps.empty());
  // Once the load has stayed low longer than the break-even time, the sleep is allowed.
  r = RunUntilAction(c, clock, 400);
  EXPECT_EQ(r.decision, "sleep");
  EXPECT_GT(r.predicted_idle_s, r.break_even_s);
  EXPECT_GE(plane.paused_s, 20) << "24 MB moved at 1 MB/s";
}

TEST_F(ControllerTest, MinAndMaxActiveNodes) {
  EnergyPolicy p = Policy();
  p.min_active_nodes = 2;
  p.max_active_nodes = 3;
  EnergyController c(plane, clock, p);
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake") << "idle, but below min";
  EXPECT_EQ(r.reason, "fewer active nodes than min_active_nodes");
  EXPECT_EQ(plane.wakes.size(), 1u);
  for (NodeId n = 1; n <= 4; n++) plane.node(n).cpu_cores = plane.node(n).up ? 1.0 : 0;
  r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.size(), 2u) << "up to max 3 active, not 4";
  for (NodeId n = 1; n <= 4; n++) plane.node(n).cpu_cores = plane.node(n).up ? 1.0 : 0;
  r = RunUntilAction(c, clock, 30);
  EXPECT_EQ(r.decision, "none");
  EXPECT_EQ(r.reason, "demand above scale_out_cpu, but max_active_nodes are active");
}

TEST_F(ControllerTest, ANodeThatDoesNotWakeIsMarkedFailedAndAnotherTried) {
  EnergyController c(plane, clock, Policy());
  plane.never_wakes = {2};
  plane.node(1).cpu_cores = 0.95;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes, (std::vector<NodeId>{2, 3}));
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_NE(r.actions.find("node 2 did not wake"), std::string::npos) << r.actions;
  // Still high after the cooldown: node 2 is not tried again.
  for (NodeId n : {1, 3}) plane.node(n).cpu_cores = 0.95;
  r = RunUntilAction(c, clock, 30);
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.back(), 4u);
  EXPECT_EQ(std::count(plane.wakes.begin(), plane.wakes.end(), 2), 1);
}

TEST_F(ControllerTest, ManualModeAndOperatorActionsLeaveNodesAlone) {
  EnergyPolicy p = Policy();
  p.mode = EnergyPolicy::Mode::kManual;
  EnergyController c(plane, clock, p);
  plane.node(1).cpu_cores = 1.0;
  EXPECT_EQ(RunUntilAction(c, clock, 20).reason, "mode is manual");
  p.mode = EnergyPolicy::Mode::kDynamic;
  c.SetPolicy(p);
  plane.node(2).busy = true;
  DecisionRecord r = c.Step();
  EXPECT_EQ(r.decision, "none");
  EXPECT_EQ(r.reason, "an operator action on node 2 is running");
  plane.node(2).busy = false;
  EXPECT_EQ(c.Step().decision, "wake");
}

TEST_F(ControllerTest, StaticModeWakesEveryNodeAndNeverSleeps) {
  EnergyPolicy p = Policy();
  p.mode = EnergyPolicy::Mode::kStatic;
  EnergyController c(plane, clock, p);
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(plane.wakes.size(), 3u);
  for (NodeId n = 1; n <= 4; n++)
    EXPECT_FALSE(plane.node(n).segments.empty()) << "node " << n << " refilled";
  EXPECT_EQ(RunUntilAction(c, clock, 120).decision, "none");
  EXPECT_TRUE(plane.sleeps.empty());
}

TEST_F(ControllerTest, HoltForecastWakesAheadOfARisingLoad) {
  EnergyPolicy p = Policy();
  p.forecaster = "holt";
  p.alpha = 0.5;
  p.beta = 0.3;
  p.horizon_s = 10;
  EnergyController holt_c(plane, clock, p);
  // Demand rises 2% of a core per second from 0.3: crosses 0.85 at 27.5 s.
  int holt_at = -1;
  for (int t = 0; t < 40; t++) {
    plane.node(1).cpu_cores = 0.3 + 0.02 * t;
    DecisionRecord h = holt_c.Step();
    if (holt_at < 0 && h.decision == "wake") holt_at = t;
    if (h.decision == "wake") break;
    clock.Advance(1'000'000);
  }
  ASSERT_GE(holt_at, 0);
  EXPECT_LT(holt_at, 27) << "Holt wakes before the demand crosses the threshold";
}

TEST_F(ControllerTest, AHotNodeShedsHotSegmentsToCoolerOnes) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  plane.AddSegment(2, 20, 4 * kMB, 1);
  plane.node(1).cpu_cores = 0.95;  // segments 1..6, heat 10..60
  plane.node(2).cpu_cores = 0.05;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "rebalance") << r.reason;
  EXPECT_EQ(r.outcome, "ok");
  EXPECT_TRUE(plane.wakes.size() == 1) << "no node woken: the cluster as a whole is at 50%";
  ASSERT_FALSE(plane.moves.empty());
  EXPECT_EQ(plane.moves[0], std::make_pair(SegmentId{6}, NodeId{2}));
  EXPECT_LE(plane.moves.size(), static_cast<size_t>(EnergyController::kRebalanceMoves));
  EXPECT_GE(plane.node(2).heat(), 80);
}

TEST_F(ControllerTest, RebalancesThatDoNotCoolANodeLeadToAWake) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  for (auto& s : plane.node(1).segments) s.heat = 5;
  for (SegmentId s = 10; s < 30; s++) plane.AddSegment(1, s, kMB, 5);  // many small, warm segments
  plane.node(1).cpu_cores = 0.95;  // and it stays hot whatever moves
  plane.node(2).cpu_cores = 0.10;
  std::vector<std::string> seen;
  for (int i = 0; i < 6 && plane.wakes.size() < 2; i++) {
    DecisionRecord r = c.Step();
    if (r.decision != "none") seen.push_back(r.decision);
    clock.Advance(6'000'000);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"rebalance", "rebalance", "wake"}));
  ASSERT_EQ(plane.wakes.size(), 2u);
}

TEST_F(ControllerTest, AHotNodeWhoseLoadCannotBeSpreadWakesANode) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  // Node 1 is saturated; node 2 owns as much heat, so no move between them narrows the gap.
  plane.AddSegment(2, 20, 4 * kMB, 210);
  plane.node(1).cpu_cores = 0.95;
  plane.node(2).cpu_cores = 0.60;
  DecisionRecord r = c.Step();
  ASSERT_EQ(r.decision, "wake") << r.reason;
  EXPECT_NE(r.reason.find("no move among the active nodes"), std::string::npos) << r.reason;
  ASSERT_EQ(plane.wakes.size(), 2u);
  EXPECT_FALSE(plane.node(plane.wakes[1]).segments.empty()) << "the woken node was refilled";
}

TEST_F(ControllerTest, AHotNodeSplitsASegmentThatCarriesMostOfItsLoad) {
  EnergyController c(plane, clock, Policy());
  ASSERT_TRUE(plane.Wake(2).ok());
  plane.AddSegment(1, 7, 4 * kMB, 500);  // node 1: heat 210 + 500
  plane.node(1).cpu_cores = 0.95;
  plane.node(2).cpu_cores = 0.05;
  // First the segments that can move do; then the one that carries the load splits.
  DecisionRecord r;
  int rebalances = 0;
  for (int i = 0; i < 10; i++) {
    r = c.Step();
    if (r.decision != "rebalance") break;
    rebalances++;
    clock.Advance(10'000'000);
  }
  EXPECT_GE(rebalances, 1);
  ASSERT_EQ(r.decision, "split") << r.reason;
  EXPECT_EQ(plane.splits, std::vector<SegmentId>{7});
  EXPECT_EQ(plane.node(1).segments.size(), 2u) << "segment 7 and its upper half";
  clock.Advance(10'000'000);
  size_t before = plane.moves.size();
  r = c.Step();  // node 2 cannot take a half without becoming the hotter one: a node wakes for it
  EXPECT_EQ(r.decision, "wake") << r.reason;
  ASSERT_GT(plane.moves.size(), before);
  SegmentId half = plane.moves.back().first;
  EXPECT_TRUE(half == 7 || half == 1000) << "a half moves, not " << half;
  EXPECT_EQ(plane.node(1).segments.size(), 1u);
}

TEST_F(ControllerTest, SlowStatementsWakeANodeWhenALatencyTargetIsSet) {
  EnergyPolicy p = Policy();
  p.latency_target_ms = 50;
  EnergyController c(plane, clock, p);
  auto interval = [&](uint64_t n, double ms) {
    plane.statements.first += n;
    plane.statements.second += static_cast<uint64_t>(n * ms * 1000);
    clock.Advance(1'000'000);
    return c.Step();
  };
  plane.node(1).cpu_cores = 0.10;  // idle nodes behind a few long statements: no wake
  EXPECT_EQ(interval(5, 400).decision, "none");
  plane.node(1).cpu_cores = 0.60;  // busy, below scale_out_cpu
  EXPECT_EQ(interval(100, 10).decision, "none");
  DecisionRecord r = interval(100, 80);
  ASSERT_EQ(r.decision, "wake");
  EXPECT_EQ(r.reason, "statements slower than latency_target_ms");
  p.latency_target_ms = 0;  // off: CPU only
  c.SetPolicy(p);
  clock.Advance(10'000'000);
  EXPECT_EQ(interval(100, 80).decision, "none");
}

TEST_F(ControllerTest, OneBusySampleIsNotATrendButAStepIs) {
  EnergyPolicy p;  // the defaults: Holt, alpha 0.3, beta 0.05 (per second), horizon 15 s
  p.window_s = 1000;
  EnergyController c(plane, clock, p);
  for (int t = 0; t < 20; t++) {
    plane.node(1).cpu_cores = t == 10 ? 0.9 : 0.05;
    EXPECT_EQ(c.Step().decision, "none") << "t=" << t;
    clock.Advance(2'000'000);
  }
  plane.node(1).cpu_cores = 0.9;
  int steps = 0;
  while (c.Step().decision == "none" && steps < 10) {
    steps++;
    clock.Advance(2'000'000);
  }
  EXPECT_LE(steps, 2) << "a sustained step wakes a node within two telemetry intervals";
  EXPECT_EQ(plane.wakes.size(), 1u);
}

}  // namespace
}  // namespace wattdb::master
