// The energy controller on real processes: an idle cluster drains and sleeps down to
// min_active_nodes; load wakes nodes and refills them while bank transfers run with their
// invariant intact and no client error; policy reloads, good and bad.
#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

// Fast enough for a test: decisions every telemetry interval, short window and cooldown.
constexpr const char* kDynamic =
    "mode = \"dynamic\"\nmin_active_nodes = 1\nwindow_s = 2\ncooldown_s = 1\nscale_out_cpu = 0.40\n"
    "scale_in_cpu = 0.10\nhysteresis = 0.02\nmigration_mb_s = 0\n";

MiniClusterOptions Options() {
  MiniClusterOptions o;
  o.nodes = 4;
  o.segment_bytes = 16 << 10;
  o.telemetry_interval_ms = 200;
  return o;  // the policy stays manual until the test switches it
}

void SetPolicy(MiniCluster& cluster, PgConn& c, const std::string& toml) {
  std::ofstream(cluster.dir() + "/policy.toml") << toml;
  std::string msg;
  ASSERT_EQ(c.Exec("ALTER SYSTEM RELOAD ENERGY POLICY", nullptr, &msg), "") << msg;
}

// The decisions so far, one per line, for failure messages.
std::string Decisions(PgConn& c) {
  std::vector<std::vector<std::string>> rows;
  c.Exec(
      "SELECT decision, active_nodes, utilization, forecast_utilization, reason, actions, outcome "
      "FROM wattdb_energy_decisions ORDER BY seq",
      &rows);
  std::string out;
  for (const auto& r : rows) {
    out += fmt::format("{} ({} active, u={:.4}, f={:.4}): {} / {} / {}\n", r[0], r[1], r[2], r[3],
                       r[4], r[5], r[6]);
  }
  return out;
}

// Loads `rows` accounts of 1000 and waits until every node owns some of them.
void LoadAccounts(MiniCluster& cluster, PgConn& c, int rows) {
  ASSERT_EQ(c.Exec("CREATE TABLE acc (id INT PRIMARY KEY, balance BIGINT, note TEXT)"), "");
  ASSERT_EQ(c.Exec(fmt::format(
                "INSERT INTO acc SELECT g, 1000, repeat('x', 80) FROM generate_series(0, {}) g",
                rows - 1)),
            "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "4", 30000));
}

TEST(Energy, AnIdleClusterDrainsAndSleepsDownToMinActiveNodes) {
  MiniCluster cluster(Options());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  LoadAccounts(cluster, *c, 3000);
  EXPECT_EQ(c->Scalar("SELECT value FROM wattdb_energy_policy WHERE key = 'mode'"), "manual");
  SetPolicy(cluster, *c, kDynamic);
  EXPECT_EQ(c->Scalar("SELECT value FROM wattdb_energy_policy WHERE key = 'mode'"), "dynamic");

  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE admin_state = 'suspended'",
                              "3", 90000))
      << Decisions(*c);
  // The power state is what the drivers last reported (every meter interval).
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE power_state = 'suspended'",
                              "3", 10000));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_nodes WHERE admin_state = 'active'"), "1");
  EXPECT_EQ(c->Scalar("SELECT count(DISTINCT node_id) FROM wattdb_segments"), "1");
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(balance) FROM acc"), "3000 3000000");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'sleep' AND "
                      "outcome = 'ok'"),
            "3");
  // No sleep the break-even rule forbids.
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'sleep' "
                      "AND NOT (predicted_idle_s > break_even_s)"),
            "0");
  // Idle for longer: nothing below min_active_nodes.
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) FROM wattdb_energy_decisions "
                      "WHERE reason = 'demand below scale_in_cpu, at min_active_nodes'",
                      "1", 30000));
  EXPECT_EQ(
      c->Scalar("SELECT count(*) FROM wattdb_nodes WHERE admin_state = 'active' AND state = 'up'"),
      "1");
}

TEST(Energy, AnInvalidPolicyIsRejectedAndTheOldOneStays) {
  MiniClusterOptions o = Options();
  o.nodes = 2;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  std::ofstream(cluster.dir() + "/policy.toml") << "mode = \"dynamic\"\nscale_in_cpu = 0.9\n";
  std::string msg;
  EXPECT_EQ(c->Exec("ALTER SYSTEM RELOAD ENERGY POLICY", nullptr, &msg),
            sqlstate::kInvalidParameterValue);
  EXPECT_NE(msg.find("policy.toml:2: key 'scale_in_cpu'"), std::string::npos) << msg;
  EXPECT_EQ(c->Scalar("SELECT value FROM wattdb_energy_policy WHERE key = 'mode'"), "manual");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_energy_decisions WHERE decision = 'reload' "
                      "AND outcome LIKE '%scale_in_cpu%'"),
            "1");
  // SIGHUP reloads too: a valid file now.
  std::ofstream(cluster.dir() + "/policy.toml") << "mode = \"static\"\n";
  cluster.SignalMaster(SIGHUP);
  EXPECT_TRUE(cluster.WaitFor("SELECT value FROM wattdb_energy_policy WHERE key = 'mode'", "static",
                              10000));
  EXPECT_TRUE(cluster.MasterAlive());
  EXPECT_EQ(c->Exec("BEGIN"), "");
  EXPECT_EQ(c->Exec("ALTER SYSTEM RELOAD ENERGY POLICY"), sqlstate::kActiveSqlTransaction);
  (void)c->Exec("ROLLBACK");
  EXPECT_EQ(c->Exec("ALTER SYSTEM RELOAD POLICY", nullptr, &msg), sqlstate::kSyntaxError);
}

TEST(Energy, LoadWakesNodesAndRefillsThemWhileTransfersKeepTheirInvariant) {
  MiniCluster cluster(Options());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  constexpr int kAccounts = 3000;
  LoadAccounts(cluster, *c, kAccounts);
  const std::string total = std::to_string(kAccounts * 1000);

  std::atomic<bool> stop{false}, heavy{false};
  std::atomic<int> committed{0}, conflicts{0}, errors{0}, bad_sums{0};
  std::mutex error_mu;
  std::string last_error, bad_values;
  auto fail = [&](const std::string& what) {
    errors++;
    std::lock_guard<std::mutex> l(error_mu);
    last_error = what;
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; w++) {
    threads.emplace_back([&, w] {
      auto tc = cluster.Connect();
      std::mt19937 rng(w + 7);
      while (!stop) {
        int from = static_cast<int>(rng() % kAccounts), to = static_cast<int>(rng() % kAccounts);
        if (from == to) continue;
        std::string msg;
        std::string st = Transfer(*tc, from, to, 7, &msg);
        if (st.empty()) committed++;
        if (!heavy) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // light load
        if (st.empty()) continue;
        if (st == sqlstate::kSerializationFailure) {
          conflicts++;  // two transfers met on an account: the client retries, as with PostgreSQL
        } else {
          fail(st + " " + msg);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  }
  // Scans that keep the nodes' CPUs busy while `heavy` is set, and check the total.
  for (int r = 0; r < 3; r++) {
    threads.emplace_back([&] {
      auto rc = cluster.Connect();
      while (!stop) {
        if (!heavy) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        std::string msg;
        std::vector<std::vector<std::string>> rows;
        std::string st = rc->Exec("SELECT sum(balance) FROM acc WHERE note LIKE 'x%'", &rows, &msg);
        if (!st.empty()) {
          fail(st + " " + msg);
        } else if (rows.size() != 1 || rows[0][0] != total) {
          bad_sums++;
          std::lock_guard<std::mutex> l(error_mu);
          bad_values += (rows.empty() ? std::string("no row") : rows[0][0]) + " ";
        }
      }
    });
  }
  SetPolicy(cluster, *c,
            "mode = \"dynamic\"\nmin_active_nodes = 1\nwindow_s = 2\ncooldown_s = 1\nscale_out_cpu "
            "= 0.60\n"
            "scale_in_cpu = 0.25\nhysteresis = 0.05\nmigration_mb_s = 0\n");
  // Light load (a few transfers a second): the cluster shrinks to one node.
  bool shrank =
      cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE admin_state = 'active'", "1", 90000);
  // Heavy load: nodes wake and take segments.
  int64_t before =
      std::stoll(c->Scalar("SELECT coalesce(max(seq), 0) FROM wattdb_energy_decisions"));
  heavy = true;
  bool grew =
      shrank &&
      cluster.WaitFor(fmt::format("SELECT count(*) > 0 FROM wattdb_energy_decisions WHERE seq > {} "
                                  "AND decision = 'wake' AND outcome = 'ok'",
                                  before),
                      "t", 60000);
  bool refilled = grew && cluster.WaitFor("SELECT count(DISTINCT node_id) > 1 FROM wattdb_segments",
                                          "t", 30000);
  stop = true;
  for (auto& t : threads) t.join();
  std::string decisions = Decisions(*c);
  EXPECT_TRUE(shrank) << decisions;
  EXPECT_TRUE(grew) << decisions;
  EXPECT_TRUE(refilled) << decisions;
  EXPECT_EQ(errors.load(), 0) << last_error;
  EXPECT_EQ(bad_sums.load(), 0) << "totals read: " << bad_values << "(logs kept in "
                                << cluster.dir() << ")";
  if (bad_sums.load() > 0) cluster.KeepDir();
  EXPECT_GT(committed.load(), 0);
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(balance) FROM acc"),
            fmt::format("{} {}", kAccounts, total));
  std::cout << fmt::format("transfers committed={} conflicts(40001, retried)={}\n",
                           committed.load(), conflicts.load());
}

}  // namespace
}  // namespace wattdb::testing
