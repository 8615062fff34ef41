#include "master/energy/policy.h"

#include <cmath>

#include <gtest/gtest.h>

#include "master/energy/forecaster.h"

namespace wattdb::master {
namespace {

ClusterConfig FourNodes() {
  auto c = ParseConfig(
      "[[node]]\nid=1\nport=1\n[[node]]\nid=2\nport=2\n[[node]]\nid=3\nport=3\n[[node]]\nid="
      "4\nport=4\n",
      "c.toml");
  return *c;
}

void ExpectError(const std::string& toml, const std::string& line, const std::string& key) {
  auto p = ParsePolicy(toml, "policy.toml", FourNodes());
  ASSERT_FALSE(p.ok()) << toml;
  const std::string& m = p.status().message();
  EXPECT_NE(m.find("policy.toml:" + line), std::string::npos) << m;
  EXPECT_NE(m.find(key), std::string::npos) << m;
}

TEST(Policy, DefaultsFollowThePaper) {
  auto p = ParsePolicy("", "policy.toml", FourNodes());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->mode, EnergyPolicy::Mode::kDynamic);
  EXPECT_DOUBLE_EQ(p->scale_out_cpu, 0.80);
  EXPECT_EQ(p->min_active_nodes, 1);
  EXPECT_EQ(p->standby, "suspend");
  EXPECT_EQ(p->min_live_replicas, 1);
  EXPECT_DOUBLE_EQ(p->sleep_log_mb, 64);
}

TEST(Policy, EveryKeyParses) {
  auto p = ParsePolicy(R"(
mode = "static"
scale_out_cpu = 0.7
scale_in_cpu = 0.2
hysteresis = 0.1
window_s = 30
cooldown_s = 10
min_active_nodes = 2
max_active_nodes = 3
pinned = [1, 2]
standby = "off"
migration_mb_s = 20
forecaster = "ewma"
alpha = 0.3
beta = 0
horizon_s = 10
down_s = 2
min_live_replicas = 2
sleep_log_mb = 0
)",
                       "policy.toml", FourNodes());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->mode, EnergyPolicy::Mode::kStatic);
  EXPECT_EQ(p->max_active_nodes, 3);
  EXPECT_EQ(p->pinned, (std::vector<NodeId>{1, 2}));
  EXPECT_EQ(p->standby, "off");
  EXPECT_EQ(p->forecaster, "ewma");
  EXPECT_DOUBLE_EQ(p->migration_mb_s, 20);
  EXPECT_EQ(p->min_live_replicas, 2);
  EXPECT_DOUBLE_EQ(p->sleep_log_mb, 0);
}

TEST(Policy, BadPoliciesNameFileLineAndKey) {
  ExpectError("mode = \"turbo\"\n", "1", "mode");
  ExpectError("\nscale_out_cpu = \"high\"\n", "2", "scale_out_cpu");
  ExpectError("scale_out_cpu = 1.5\n", "1", "scale_out_cpu");
  ExpectError("scale_in_cpu = 0.9\n", "1", "scale_in_cpu");  // in >= out
  ExpectError("min_active_nodes = 3\nmax_active_nodes = 2\n", "1", "min_active_nodes");
  ExpectError("min_active_nodes = 9\n", "1", "min_active_nodes");  // more than the cluster has
  ExpectError("min_active_nodes = 1.5\n", "1", "min_active_nodes");
  ExpectError("pinned = [7]\n", "1", "pinned");
  ExpectError("max_active_nodes = 1\npinned = [1, 2]\n", "2", "pinned");
  ExpectError("standby = \"hibernate\"\n", "1", "standby");
  ExpectError("\n\nscale_up = 0.9\n", "3", "scale_up");  // unknown key
  ExpectError("hysteresis = 0.3\n", "1", "hysteresis");  // closes the gap
  ExpectError("mode = \n", "1", "");                     // TOML syntax
  ExpectError("min_live_replicas = 0\n", "1", "min_live_replicas");
  ExpectError("min_live_replicas = 1.5\n", "1", "min_live_replicas");
  ExpectError("sleep_log_mb = -1\n", "1", "sleep_log_mb");
}

TEST(BreakEven, FollowsTheFormulaAndRefusesWhenStandbySavesNothing) {
  EnergyPolicy p;
  p.down_s = 2;
  HostProfile atom;  // 22 W idle, 2.5 W suspended, resume 2 s
  BreakEven b = ComputeBreakEven(p, atom, 100 << 20, 50 << 20);  // 100 MiB at 50 MiB/s: 2 s
  EXPECT_DOUBLE_EQ(b.e_down_j, 44);
  EXPECT_DOUBLE_EQ(b.e_up_j, 44);
  EXPECT_DOUBLE_EQ(b.e_migrate_j, 88);
  EXPECT_DOUBLE_EQ(b.saved_w, 19.5);
  EXPECT_NEAR(b.seconds, 176 / 19.5, 1e-9);
  p.standby = "off";  // boot 20 s, 0.5 W
  EXPECT_NEAR(ComputeBreakEven(p, atom, 0, 1).seconds, (44 + 22 * 20.0) / 21.5, 1e-9);
  atom.suspended_watts = atom.idle_watts;
  p.standby = "suspend";
  EXPECT_TRUE(std::isinf(ComputeBreakEven(p, atom, 0, 1).seconds));
}

TEST(Forecaster, HoltSeesARisingLoadAheadAndEwmaSmooths) {
  Forecaster holt("holt", 0.5, 0.3), ewma("ewma", 0.5, 0);
  for (int t = 0; t <= 60; t += 2) {
    holt.Observe(t, 0.01 * t);  // +1% per second
    ewma.Observe(t, 0.01 * t);
  }
  EXPECT_NEAR(holt.slope(), 0.01, 0.002);
  EXPECT_NEAR(holt.Forecast(30), 0.90, 0.05) << "60% now, rising: about 90% in 30 s";
  EXPECT_LT(ewma.Forecast(30), 0.60) << "EWMA lags a rising load";
  Forecaster falling("holt", 0.5, 0.3);
  for (int t = 0; t <= 60; t += 2) falling.Observe(t, 0.6 - 0.01 * t);  // reaches 0 at 60 s
  EXPECT_EQ(falling.Forecast(60), 0) << "never below zero";
}

TEST(Forecaster, SmoothingDoesNotDependOnTheSamplingRate) {
  // The same noisy load (0.1 and 0.3 alternating around 0.2) sampled every 0.2 s and every 2 s.
  for (double dt : {0.2, 2.0}) {
    Forecaster holt("holt", 0.3, 0.05);
    double lo = 1, hi = 0;
    int i = 0;
    for (double t = 0; t <= 120; t += dt, i++) {
      holt.Observe(t, i % 2 ? 0.3 : 0.1);
      if (t > 20) {
        lo = std::min(lo, holt.Forecast(15));
        hi = std::max(hi, holt.Forecast(15));
      }
    }
    EXPECT_GT(lo, 0.05) << "dt=" << dt;
    EXPECT_LT(hi, 0.45) << "dt=" << dt << ": noise is not a trend";
  }
}

}  // namespace
}  // namespace wattdb::master
