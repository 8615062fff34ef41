// Power states on real node processes (local driver): suspend keeps a node's memory and its
// data, resume brings it back serving, the master never powers down a node that owns data,
// and wattdb_nodes reports each node's power state and last power action.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Clock = std::chrono::steady_clock;
double MillisSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

MiniClusterOptions Managed() {
  MiniClusterOptions o;
  o.nodes = 3;
  o.segment_bytes = 16 << 10;
  o.telemetry_interval_ms = 200;
  o.manage_nodes = true;
  return o;
}

std::string Fingerprint(PgConn& c) { return c.Scalar("SELECT count(*) || '/' || sum(v) FROM t"); }

TEST(Power, SuspendAndResumeThroughTheLocalDriver) {
  MiniCluster cluster(Managed());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  std::string sql = "INSERT INTO t VALUES ";
  for (int i = 0; i < 2000; i++)
    sql += fmt::format("{}({}, {}, repeat('x', 40))", i ? "," : "", i, i * 7);
  std::string msg;
  ASSERT_EQ(c->Exec(sql, nullptr, &msg), "") << msg;
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "3", 60000));
  const std::string before = Fingerprint(*c);

  // Nothing that owns data is put to sleep.
  EXPECT_EQ(c->Exec("ALTER NODE 3 SUSPEND", nullptr, &msg), sqlstate::kObjectNotInPrerequisiteState)
      << msg;
  EXPECT_EQ(
      c->Scalar("SELECT power_state || ' ' || admin_state FROM wattdb_nodes WHERE node_id = 3"),
      "on active");

  ASSERT_EQ(c->Exec("ALTER NODE 3 DRAIN", nullptr, &msg), "") << msg;
  pid_t pid3 = cluster.NodePid(3);
  ASSERT_EQ(c->Exec("ALTER NODE 3 SUSPEND", nullptr, &msg), "") << msg;
  EXPECT_EQ(ProcState(pid3), 'T') << "the node process must be stopped (memory kept)";
  EXPECT_EQ(c->Scalar("SELECT state || ' ' || admin_state || ' ' || power_state || ' ' || "
                      "last_power_action || ' ' || "
                      "last_power_result FROM wattdb_nodes WHERE node_id = 3"),
            "down suspended suspended suspend ok");
  EXPECT_EQ(Fingerprint(*c), before);
  // The supervisor leaves a suspended node alone; the same process is resumed.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_EQ(cluster.NodePid(3), pid3);
  EXPECT_EQ(ProcState(pid3), 'T');

  auto t0 = Clock::now();
  ASSERT_EQ(c->Exec("ALTER NODE 3 POWER ON", nullptr, &msg), "") << msg;
  ::testing::Test::RecordProperty("resume_to_registered_ms", std::to_string(MillisSince(t0)));
  EXPECT_EQ(cluster.NodePid(3), pid3) << "resume must not restart the process";
  EXPECT_EQ(c->Scalar("SELECT state || ' ' || admin_state || ' ' || power_state FROM wattdb_nodes "
                      "WHERE node_id = 3"),
            "up active on");
  // The resumed node serves data again.
  std::string seg = c->Scalar("SELECT min(segment_id) FROM wattdb_segments");
  ASSERT_EQ(c->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE 3", seg), nullptr, &msg), "")
      << msg;
  EXPECT_EQ(Fingerprint(*c), before);

  // Power off a suspended node: it is gone, and POWER ON boots a new process.
  ASSERT_EQ(c->Exec("ALTER NODE 2 DRAIN", nullptr, &msg), "") << msg;
  ASSERT_EQ(c->Exec("ALTER NODE 2 SUSPEND", nullptr, &msg), "") << msg;
  pid_t pid2 = cluster.NodePid(2);
  ASSERT_EQ(c->Exec("ALTER NODE 2 POWER OFF", nullptr, &msg), "") << msg;
  EXPECT_EQ(cluster.NodePid(2), 0);
  EXPECT_EQ(
      c->Scalar("SELECT power_state || ' ' || admin_state FROM wattdb_nodes WHERE node_id = 2"),
      "off off");
  EXPECT_EQ(c->Exec("ALTER NODE 2 SUSPEND", nullptr, &msg), sqlstate::kObjectNotInPrerequisiteState)
      << "an off node cannot be suspended";
  ASSERT_EQ(c->Exec("ALTER NODE 2 POWER ON", nullptr, &msg), "") << msg;
  EXPECT_NE(cluster.NodePid(2), pid2);
  EXPECT_EQ(c->Scalar("SELECT power_state FROM wattdb_nodes WHERE node_id = 2"), "on");
  EXPECT_EQ(Fingerprint(*c), before);
  EXPECT_EQ(c->Exec("ALTER NODE 9 SUSPEND", nullptr, &msg), sqlstate::kUndefinedObject);
}

TEST(Power, AHostSuspendedWithItsDataAnswersTheSameRowsAfterResume) {
  MiniCluster cluster(Managed());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  std::string sql = "INSERT INTO t VALUES ";
  for (int i = 0; i < 2000; i++)
    sql += fmt::format("{}({}, {}, repeat('y', 40))", i ? "," : "", i, i * 3);
  std::string msg;
  ASSERT_EQ(c->Exec(sql, nullptr, &msg), "") << msg;
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "3", 60000));
  const std::string before = Fingerprint(*c);
  // The host suspends by itself (its OS, not the master): the process stops with its
  // memory, the master sees a silent node, and reads of its data fail fast meanwhile.
  pid_t pid2 = cluster.NodePid(2);
  ASSERT_EQ(kill(pid2, SIGSTOP), 0);
  ASSERT_TRUE(AwaitProcState(pid2, 'T', 3000));
  ASSERT_TRUE(cluster.WaitFor("SELECT state FROM wattdb_nodes WHERE node_id = 2", "down", 20000));
  EXPECT_NE(c->Exec("SELECT count(*) FROM t", nullptr, &msg), "");
  // Node 2's segments while it sleeps (listed once it is down: until then the balancer may
  // still move one; it may bring it more after the resume, never take these while it sleeps).
  const std::string on_node2 =
      c->Scalar("SELECT string_agg(segment_id::text, ',') FROM wattdb_segments WHERE node_id = 2");
  ASSERT_FALSE(on_node2.empty());

  // POWER ON resumes it; its first scan returns the same rows.
  auto t0 = Clock::now();
  ASSERT_EQ(c->Exec("ALTER NODE 2 POWER ON", nullptr, &msg), "") << msg;
  EXPECT_EQ(Fingerprint(*c), before);
  ::testing::Test::RecordProperty("resume_to_first_scan_ms", std::to_string(MillisSince(t0)));
  EXPECT_EQ(cluster.NodePid(2), pid2);
  EXPECT_EQ(c->Scalar(fmt::format(
                "SELECT count(*) FROM wattdb_segments WHERE node_id = 2 AND segment_id IN ({})",
                on_node2)),
            std::to_string(std::count(on_node2.begin(), on_node2.end(), ',') + 1));
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

TEST(Power, WattdbPowerMetersEveryComponentAndFlagsASilentMeter) {
  MiniClusterOptions o = Managed();
  std::string meter_file = "/tmp/wattdb-switch-meter-" + std::to_string(getpid()) + ".log";
  {
    std::ofstream f(meter_file, std::ios::trunc);
    f << "1700000000 20.5\n";
  }
  o.extra_toml = fmt::format(
      "[power]\nmeter_interval_ms = 100\n"
      "[[infrastructure]]\nname = \"master\"\nidle_watts = 30\n"
      "[[infrastructure]]\nname = \"switch\"\nmeter = {{ type = \"external\", source = \"{}\", "
      "stale_ms = 1000 }}\n",
      meter_file);
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_power WHERE meter_ok", "5", 10000));
  EXPECT_EQ(c->Scalar("SELECT string_agg(x, ' ') FROM (SELECT component || ':' || "
                      "coalesce(node_id::text, '-') || ':' "
                      "|| meter AS x FROM wattdb_power ORDER BY component) s"),
            "master:-:model node 1:1:model node 2:2:model node 3:3:model switch:-:external");
  // Atom nodes, idle: 22-26 W each; the master 30 W; the switch what its meter says.
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_power WHERE node_id IS NOT NULL AND watts "
                      "BETWEEN 22 AND 26"),
            "3");
  EXPECT_EQ(c->Scalar("SELECT watts FROM wattdb_power WHERE component = 'master'"), "30");
  EXPECT_EQ(c->Scalar("SELECT watts FROM wattdb_power WHERE component = 'switch'"), "20.5");
  double j0 = std::stod(c->Scalar("SELECT sum(joules) FROM wattdb_power"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double j1 = std::stod(c->Scalar("SELECT sum(joules) FROM wattdb_power"));
  EXPECT_GT(j1, j0) << "energy accumulates";

  // A suspended node draws its profile's suspended watts.
  std::string msg;
  ASSERT_EQ(c->Exec("ALTER NODE 3 DRAIN", nullptr, &msg), "") << msg;
  ASSERT_EQ(c->Exec("ALTER NODE 3 SUSPEND", nullptr, &msg), "") << msg;
  ASSERT_TRUE(cluster.WaitFor("SELECT state || ' ' || watts FROM wattdb_power WHERE node_id = 3",
                              "suspended 2.5", 5000));

  // The switch's logger stops: its meter is flagged with the reason and its joules stop.
  ASSERT_TRUE(
      cluster.WaitFor("SELECT meter_ok FROM wattdb_power WHERE component = 'switch'", "f", 5000));
  std::string err = c->Scalar("SELECT meter_error FROM wattdb_power WHERE component = 'switch'");
  EXPECT_NE(err.find("no sample"), std::string::npos) << err;
  EXPECT_NE(c->Scalar("SELECT gaps FROM wattdb_power WHERE component = 'switch'"), "0");
  {
    std::ofstream f(meter_file, std::ios::app);
    f << "1700000100 19\n";
  }
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT meter_ok || ' ' || watts FROM wattdb_power WHERE component = 'switch'", "t 19",
      5000));
  std::remove(meter_file.c_str());
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

TEST(Power, PrometheusEndpointServesPowerNodesAndQueries) {
  MiniClusterOptions o = Managed();
  int port = FreeTcpPort();
  o.extra_toml = fmt::format("[power]\nmeter_interval_ms = 100\nmetrics_port = {}\n", port);
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_power WHERE meter_ok", "5", 10000));
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY)"), "");
  std::string msg;
  EXPECT_NE(c->Exec("SELECT * FROM missing", nullptr, &msg), "");
  int status = 0;
  std::string text = HttpGet(port, "/metrics", &status);
  ASSERT_EQ(status, 0) << text;
  for (const char* want :
       {"# TYPE wattdb_power_watts gauge",
        "wattdb_power_watts{component=\"node 1\",meter=\"model\"} 2",
        "wattdb_energy_joules_total{component=\"switch\"}", "wattdb_node_up{node=\"3\"} 1",
        "wattdb_node_power_state{node=\"2\",state=\"on\"} 1", "wattdb_segments 1",
        "# TYPE wattdb_statements_total counter", "wattdb_meter_ok{component=\"master\"} 1"}) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing " << want << " in\n" << text;
  }
  EXPECT_GE(MetricValue(text, "wattdb_statements_total"), 3);
  EXPECT_GE(MetricValue(text, "wattdb_statement_errors_total"), 1);
  HttpGet(port, "/elsewhere", &status);
  EXPECT_EQ(status, 3) << "404 expected";
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

TEST(Power, UnreachableBmcMissingIpmitoolAndSilentMeterAreReportedAndTheRestServes) {
  MiniClusterOptions o = Managed();
  int dead_port = FreeTcpPort();  // no BMC answers here
  o.extra_toml = "[power]\nmeter_interval_ms = 100\n";
  o.node_toml[2] = fmt::format(
      "power = \"ipmi\"\nmeter = \"ipmi-dcmi\"\nipmi = {{ port = {}, password = \"x\", timeout_ms "
      "= 300, retries = 0 }}",
      dead_port);
  o.node_toml[3] =
      "power = \"ipmi\"\nipmi = { ipmitool = \"/nonexistent/ipmitool\", password = \"x\" }";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.StartMaster())
      << "logs in " << cluster.dir();  // nodes 2 and 3 cannot be powered on
  auto c = cluster.Connect();
  ASSERT_TRUE(c) << "the master serves";
  ASSERT_TRUE(cluster.WaitFor("SELECT state FROM wattdb_nodes WHERE node_id = 1", "up", 20000));
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(*) FROM wattdb_nodes WHERE power_state = 'unknown' AND power_error IS NOT NULL",
      "2", 10000));
  ASSERT_TRUE(cluster.WaitFor("SELECT meter_error IS NOT NULL FROM wattdb_power WHERE node_id = 2",
                              "t", 10000));
  std::string r2 = c->Scalar(
      "SELECT power_state || ' | ' || last_power_result || ' | ' || power_error FROM wattdb_nodes "
      "WHERE node_id = 2");
  EXPECT_EQ(r2.rfind("unknown | ", 0), 0u) << r2;
  EXPECT_NE(r2.find("ipmitool chassis power on"), std::string::npos) << r2;
  EXPECT_NE(r2.find(std::to_string(dead_port)), std::string::npos) << r2;
  std::string r3 =
      c->Scalar("SELECT power_state || ' | ' || power_error FROM wattdb_nodes WHERE node_id = 3");
  EXPECT_NE(r3.find("not found (install the ipmitool package"), std::string::npos) << r3;
  std::string m2 =
      c->Scalar("SELECT meter_ok || ' | ' || meter_error FROM wattdb_power WHERE node_id = 2");
  EXPECT_EQ(m2.rfind("f | ", 0), 0u) << m2;
  std::string msg;
  EXPECT_NE(c->Exec("ALTER NODE 2 POWER ON", nullptr, &msg), "");
  EXPECT_NE(msg.find("BMC 127.0.0.1:" + std::to_string(dead_port)), std::string::npos) << msg;
  // Data on the healthy node is served meanwhile.
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t VALUES (1), (2)"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "2");
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

using Rows = std::vector<std::vector<std::string>>;

TEST(Power, StatementsReportTheirEstimatedEnergy) {
  MiniClusterOptions o = Managed();
  o.segment_bytes = 4 << 20;
  o.extra_toml = "[power]\nmeter_interval_ms = 100\n";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_power WHERE meter_ok", "5", 10000));
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, g, repeat('e', 100) FROM generate_series(1, 60000) g"),
            "");
  Rows plan;
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT count(*), sum(v) FROM t WHERE pad LIKE '%e%'", &plan),
            "");
  std::string energy;
  for (auto& r : plan) {
    if (r[0].rfind("Energy: ", 0) == 0) energy = r[0];
  }
  ASSERT_FALSE(energy.empty()) << "no Energy line in EXPLAIN ANALYZE";
  EXPECT_GT(std::stod(energy.substr(8)), 0) << energy;
  EXPECT_NE(energy.find("nodes "), std::string::npos) << energy;

  ASSERT_EQ(c->Exec("SELECT 1"), "");
  Rows recent;
  ASSERT_EQ(
      c->Exec("SELECT statement, joules, node_joules, seconds, cpu_ms FROM wattdb_statement_energy",
              &recent),
      "");
  ASSERT_GE(recent.size(), 3u);
  // The scan of 60,000 rows on the nodes cost node energy; SELECT 1 cost none of it.
  const auto& explain = recent[recent.size() - 2];
  const auto& one = recent[recent.size() - 1];
  EXPECT_EQ(explain[0], "EXPLAIN");
  EXPECT_EQ(one[0], "SELECT 1");
  EXPECT_GT(std::stod(explain[2]), 0);
  EXPECT_EQ(std::stod(one[2]), 0);
  EXPECT_GT(std::stod(explain[1]), std::stod(one[1]));
  // Never more than the whole cluster drew over the statement's run time.
  double cluster_watts = std::stod(c->Scalar("SELECT sum(watts) FROM wattdb_power"));
  for (const auto& r : recent) {
    EXPECT_LE(std::stod(r[1]), cluster_watts * std::stod(r[3]) * 1.05) << r[0];
  }
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

TEST(Power, AHostThatNeverWakesIsReportedAndPowerOnFailsWithinTheWakeTimeout) {
  MiniClusterOptions o = Managed();
  int nobody = FreeTcpPort();
  o.extra_toml =
      "[power]\nmeter_interval_ms = 100\nwake_timeout_ms = 1500\n[profile.atom]\nboot_ms = 0\n";
  o.node_toml[3] = fmt::format(
      "power = \"wol\"\nwol = {{ mac = \"52:54:00:00:00:03\", broadcast = \"127.0.0.1\", "
      "port = {} }}",
      nobody);
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.StartMaster()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "2", 20000));
  std::string err =
      c->Scalar("SELECT power_state || ' | ' || power_error FROM wattdb_nodes WHERE node_id = 3");
  EXPECT_EQ(err.rfind("unknown | ", 0), 0u) << err;
  EXPECT_NE(err.find("did not register within 1500 ms"), std::string::npos) << err;
  auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(c->Exec("ALTER NODE 3 POWER ON", nullptr, &msg), sqlstate::kCannotConnectNow);
  EXPECT_NE(msg.find("did not register within 1500 ms"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(c->Scalar("SELECT last_power_result FROM wattdb_nodes WHERE node_id = 3")
                .find("did not register"),
            std::string::npos);
  // The rest serves.
  ASSERT_EQ(c->Exec("CREATE TABLE t (k INT PRIMARY KEY)"), "");
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (1)"), "");
}

}  // namespace
}  // namespace wattdb::testing
