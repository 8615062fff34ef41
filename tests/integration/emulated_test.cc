// Emulated hosts with real mechanisms (needs root, as CI has): network namespaces on a
// bridge, host agents with cgroup CPU caps and freezers, ipmi_sim BMCs driven by ipmitool,
// Wake-on-LAN magic packets through the bridge, a master that powers nodes through them.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/config.h"
#include "common/sqlstate.h"
#include "net/stream.h"
#include "power/ipmitool.h"
#include "power/magic_packet.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Clock = std::chrono::steady_clock;
double MillisSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

const std::string kBin = WATTDB_BIN_DIR;

// One emulated cluster: its config, its lab (wattdb-lab up/down) and its master.
class Lab {
 public:
  // `nodes_toml` holds the [[node]] tables; the rest is generated with unique names.
  explicit Lab(const std::string& nodes_toml, const std::string& cluster_keys = "") {
    // A subnet (and bridge) of its own: claimed with an atomic mkdir, so labs of tests that
    // run at once never share one.
    int u = 20;
    while (u < 220 && mkdir(fmt::format("/tmp/wattdb-emulated-net-{}", u).c_str(), 0700) != 0) u++;
    net_claim_ = fmt::format("/tmp/wattdb-emulated-net-{}", u);
    dir_ = fmt::format("/tmp/wattdb-emulated-{}-{}", getpid(), counter_++);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    pg_port_ = FreePort();
    std::ofstream(dir_ + "/policy.toml") << "mode = \"manual\"\n";
    std::ofstream f(dir_ + "/cluster.toml");
    f << fmt::format(
        "[cluster]\ndata_dir = \"{dir}/data\"\ntelemetry_interval_ms = 200\nheartbeat_timeout_ms = "
        "1000\n{ck}"
        "[master]\npg_port = {pg}\ncluster_port = {cp}\nenergy_policy = \"policy.toml\"\n"
        "[hosts]\nmode = \"emulated\"\nsubnet = \"10.213.{u}\"\nbridge = \"wdbe{u}\"\n"
        "[profile.atom]\ncpus = 0.5\nboot_ms = 300\nresume_ms = 150\n"
        "[power]\nmeter_interval_ms = 200\n{nodes}",
        fmt::arg("dir", dir_), fmt::arg("pg", pg_port_), fmt::arg("cp", FreePort()),
        fmt::arg("u", u), fmt::arg("nodes", nodes_toml), fmt::arg("ck", cluster_keys));
    f.close();
    config_ = *LoadConfig(dir_ + "/cluster.toml");
  }
  ~Lab() {
    StopMaster();
    std::string out;
    RunCommand(fmt::format("{}/wattdb-lab down --config {}/cluster.toml", kBin, dir_), &out);
    if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);  // else keep the logs
    rmdir(net_claim_.c_str());
  }

  // A TCP port free right now on loopback.
  static int FreePort() {
    net::asio::io_context io;
    net::asio::ip::tcp::acceptor a(
        io, net::asio::ip::tcp::endpoint(net::asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
  }

  bool Up() {
    std::string out;
    int rc = RunCommand(fmt::format("{}/wattdb-lab up --config {}/cluster.toml", kBin, dir_), &out);
    if (rc != 0) ADD_FAILURE() << out;
    return rc == 0;
  }
  // Starts the master and waits until it serves SQL. The master builds the lab (if not up),
  // powers every node and waits for each to register before it serves, each step with its own
  // deadline, so the wait here is the sum of those, not a guess; it ends early if the master
  // exits. On failure the master's log is in the test's output (CI keeps nothing else).
  ::testing::AssertionResult StartMaster() {
    master_ = fork();
    if (master_ == 0) {
      std::string log = dir_ + "/master.log";
      freopen(log.c_str(), "a", stdout);
      freopen(log.c_str(), "a", stderr);
      execl((kBin + "/wattdb-master").c_str(), "wattdb-master", "--config",
            (dir_ + "/cluster.toml").c_str(), "--manage-nodes", nullptr);
      _exit(127);
    }
    int budget_ms = 60000;  // wattdb-lab up
    for (const auto& n : config_.nodes)
      budget_ms += config_.Profile(n).boot_ms + config_.wake_timeout_ms + 5000;
    auto deadline = Clock::now() + std::chrono::milliseconds(budget_ms);
    std::string why = fmt::format("the master did not serve within {} ms", budget_ms);
    while (Clock::now() < deadline) {
      PgConn c(conninfo());
      if (c.ok()) return ::testing::AssertionSuccess();
      int status = 0;
      if (waitpid(master_, &status, WNOHANG) == master_) {
        master_ = 0;
        why = fmt::format("the master exited (status {})", status);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::ifstream log(dir_ + "/master.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    if (text.size() > 6000) text = "..." + text.substr(text.size() - 6000);
    return ::testing::AssertionFailure() << why << "; " << dir_ << "/master.log:\n" << text;
  }
  // SIGTERM; a master that has not exited after 60 s (it powers its nodes off first) is killed.
  void StopMaster() {
    if (master_ <= 0) return;
    kill(master_, SIGTERM);
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (waitpid(master_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ADD_FAILURE() << "the master did not stop within 60 s of SIGTERM";
        kill(master_, SIGKILL);
        waitpid(master_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    master_ = 0;
  }
  std::string conninfo() const {
    return fmt::format("host=127.0.0.1 port={} user=wattdb dbname=wattdb connect_timeout=5",
                       pg_port_);
  }
  bool WaitFor(PgConn& c, const std::string& sql, const std::string& want, int timeout_ms) {
    auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::string got;
    while (Clock::now() < deadline) {
      got = c.Scalar(sql);
      if (got == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << sql << " gave " << got << ", wanted " << want;
    return false;
  }
  // The host agent's answer to `request` (status: off, booting, on, stopping, suspended, resuming).
  std::string Agent(NodeId id, const std::string& request) {
    std::string out;
    RunCommand(fmt::format("{}/wattdb-host ctl --dir {}/data/lab/h{} {}", kBin, dir_, id, request),
               &out);
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  const ClusterConfig& config() const { return config_; }
  const NodeConfig& node(NodeId id) const { return *config_.FindNode(id); }
  const std::string& dir() const { return dir_; }

 private:
  static inline int counter_ = 0;
  std::string net_claim_;
  std::string dir_;
  int pg_port_ = 0;
  ClusterConfig config_;
  pid_t master_ = 0;
};

bool Root() { return geteuid() == 0; }

TEST(Emulated, IpmitoolPowersARealNodeOnAndOffAndReadsDcmiPower) {
  if (!Root()) GTEST_SKIP() << "emulated hosts need root";
  Lab lab(
      "[[node]]\nid = 1\nport = 7101\npower = \"ipmi\"\nmeter = \"ipmi-dcmi\"\n"
      "ipmi = { password = \"s3cret\" }\n"
      "[[node]]\nid = 2\nport = 7102\npower = \"wol\"\n");
  ASSERT_TRUE(lab.Up());
  IpmiConfig bmc = lab.node(1).ipmi;
  // The hardware exists before the master: the host is off, its BMC answers and meters it.
  auto st = power::RunIpmitool(bmc, {"chassis", "power", "status"});
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  EXPECT_NE(st->find("Chassis Power is off"), std::string::npos) << *st;
  auto off_watts =
      power::ParseDcmiPowerReading(*power::RunIpmitool(bmc, {"dcmi", "power", "reading"}));
  ASSERT_TRUE(off_watts.ok());
  EXPECT_LE(*off_watts, 1);
  // A wrong password is refused with a clear message.
  IpmiConfig wrong = bmc;
  wrong.password = "guess";
  wrong.retries = 0;
  auto refused = power::RunIpmitool(wrong, {"chassis", "power", "status"});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("password"), std::string::npos)
      << refused.status().message();

  // The master powers node 1 on through its BMC and node 2 with a magic packet.
  ASSERT_TRUE(lab.StartMaster());
  PgConn c(lab.conninfo());
  ASSERT_TRUE(lab.WaitFor(c,
                          "SELECT string_agg(power_driver || ':' || state, ' ') FROM wattdb_nodes",
                          "ipmi:up wol:up", 20000));
  EXPECT_EQ(lab.Agent(1, "status"), "on");
  EXPECT_NE(power::RunIpmitool(bmc, {"chassis", "power", "status"})->find("Chassis Power is on"),
            std::string::npos);
  // The BMC's DCMI reading comes from the host's model (idle Atom: 22-26 W) and the master
  // reads it through ipmitool.
  ASSERT_TRUE(lab.WaitFor(
      c,
      "SELECT meter || ' ' || meter_ok || ' ' || (watts BETWEEN 22 AND 26) FROM wattdb_power "
      "WHERE node_id = 1",
      "ipmi-dcmi t t", 10000));
  std::string msg;
  EXPECT_EQ(c.Exec("ALTER NODE 1 SUSPEND", nullptr, &msg), sqlstate::kFeatureNotSupported)
      << "IPMI has no suspend: " << msg;
  ASSERT_EQ(c.Exec("ALTER NODE 1 POWER OFF", nullptr, &msg), "") << msg;
  EXPECT_EQ(lab.Agent(1, "status"), "off");
  EXPECT_NE(power::RunIpmitool(bmc, {"chassis", "power", "status"})->find("Chassis Power is off"),
            std::string::npos);
  EXPECT_TRUE(
      lab.WaitFor(c, "SELECT power_state FROM wattdb_nodes WHERE node_id = 1", "off", 5000));
  auto t0 = Clock::now();
  ASSERT_EQ(c.Exec("ALTER NODE 1 POWER ON", nullptr, &msg), "") << msg;
  ::testing::Test::RecordProperty("ipmi_off_to_registered_ms", std::to_string(MillisSince(t0)));
  EXPECT_EQ(c.Scalar("SELECT state || ' ' || power_state FROM wattdb_nodes WHERE node_id = 1"),
            "up on");
}

TEST(Emulated, MagicPacketThroughTheBridgeWakesASuspendedHostAndNoOtherMacDoes) {
  if (!Root()) GTEST_SKIP() << "emulated hosts need root";
  Lab lab(
      "[[node]]\nid = 1\nport = 7101\npower = \"wol\"\n[[node]]\nid = 2\nport = 7102\npower = "
      "\"wol\"\n");
  ASSERT_TRUE(lab.Up());
  ASSERT_TRUE(lab.StartMaster());
  PgConn c(lab.conninfo());
  ASSERT_TRUE(lab.WaitFor(c, "SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "2", 20000));
  ASSERT_EQ(c.Exec("CREATE TABLE t (k INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(c.Exec("INSERT INTO t SELECT g, g * 3 FROM generate_series(1, 3000) g"), "");
  std::string seg = c.Scalar("SELECT min(segment_id) FROM wattdb_segments");
  std::string msg;
  ASSERT_EQ(c.Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE 2", seg), nullptr, &msg), "")
      << msg;
  const std::string before = c.Scalar("SELECT count(*) || '/' || sum(v) FROM t");

  // Host 2 suspends with its data (its OS, e.g. a lid switch): its cgroup is frozen.
  ASSERT_EQ(lab.Agent(2, "suspend"), "ok");
  EXPECT_EQ(lab.Agent(2, "status"), "suspended");
  ASSERT_TRUE(lab.WaitFor(c, "SELECT state FROM wattdb_nodes WHERE node_id = 2", "down", 10000));

  // A magic packet for another MAC, broadcast into the bridge, wakes nothing.
  WolConfig other = lab.node(2).wol;
  other.mac = "52:54:00:57:00:99";
  ASSERT_TRUE(power::SendMagicPacket(other).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // resume_ms is 150
  EXPECT_EQ(lab.Agent(2, "status"), "suspended");
  EXPECT_EQ(lab.Agent(1, "status"), "on");

  // Its own MAC wakes it; the first scan after resume returns the same rows.
  auto t0 = Clock::now();
  ASSERT_TRUE(power::SendMagicPacket(lab.node(2).wol).ok());
  ASSERT_TRUE(lab.WaitFor(c, "SELECT state FROM wattdb_nodes WHERE node_id = 2", "up", 10000));
  EXPECT_EQ(c.Scalar("SELECT count(*) || '/' || sum(v) FROM t"), before);
  ::testing::Test::RecordProperty("wol_resume_to_first_scan_ms", std::to_string(MillisSince(t0)));
  EXPECT_EQ(lab.Agent(2, "status"), "on");
}

TEST(Emulated, DrainSuspendAndPowerThroughIpmiAndWolWhileClientsWork) {
  if (!Root()) GTEST_SKIP() << "emulated hosts need root";
  Lab lab(
      "[[node]]\nid = 1\nport = 7101\npower = \"ipmi\"\nmeter = \"ipmi-dcmi\"\nipmi = { password = "
      "\"pw\" }\n"
      "[[node]]\nid = 2\nport = 7102\npower = \"ipmi\"\nipmi = { password = \"pw\" }\n"
      "[[node]]\nid = 3\nport = 7103\npower = \"wol\"\n"
      "[[node]]\nid = 4\nport = 7104\npower = \"wol\"\n",
      "segment_bytes = 16384\n");
  ASSERT_TRUE(lab.StartMaster());  // builds the lab itself
  PgConn c(lab.conninfo());
  ASSERT_TRUE(lab.WaitFor(c, "SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "4", 30000));
  ASSERT_EQ(c.Exec("CREATE TABLE acc (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  ASSERT_EQ(c.Exec("INSERT INTO acc SELECT g, g, repeat('p', 60) FROM generate_series(1, 4000) g"),
            "");
  ASSERT_EQ(c.Exec("CREATE TABLE log (id INT PRIMARY KEY, at BIGINT)"), "");
  ASSERT_TRUE(
      lab.WaitFor(c, "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'acc'",
                  "4", 60000));
  const std::string sum = c.Scalar("SELECT sum(v) FROM acc");

  // Clients: one reads every account, one inserts; neither may see an error.
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, inserts{0}, errors{0};
  std::string last_error;
  std::mutex err_mu;
  auto fail = [&](const std::string& what) {
    errors++;
    std::lock_guard<std::mutex> l(err_mu);
    last_error = what;
  };
  std::thread reader([&] {
    PgConn r(lab.conninfo());
    while (!stop) {
      std::vector<std::vector<std::string>> rows;
      std::string msg;
      std::string st = r.Exec("SELECT count(*), sum(v) FROM acc", &rows, &msg);
      if (!st.empty())
        fail("read " + st + ": " + msg);
      else if (rows[0][0] != "4000" || rows[0][1] != sum)
        fail("read " + rows[0][0] + "/" + rows[0][1]);
      reads++;
    }
  });
  std::thread writer([&] {
    PgConn w(lab.conninfo());
    for (int i = 1; !stop; i++) {
      std::string msg;
      std::string st = w.Exec(fmt::format("INSERT INTO log VALUES ({}, {})", i, i), nullptr, &msg);
      if (!st.empty())
        fail("insert " + st + ": " + msg);
      else
        inserts++;
    }
  });
  auto admin = [&](const std::string& sql) {
    std::string msg;
    EXPECT_EQ(c.Exec(sql, nullptr, &msg), "") << sql << ": " << msg;
  };
  // A Wake-on-LAN host drained, suspended (the OS path) and woken by a magic packet.
  admin("ALTER NODE 4 DRAIN");
  admin("ALTER NODE 4 SUSPEND");
  for (int i = 0; i < 100 && lab.Agent(4, "status") != "suspended"; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(lab.Agent(4, "status"), "suspended");
  auto t0 = Clock::now();
  admin("ALTER NODE 4 POWER ON");
  ::testing::Test::RecordProperty("wol_suspended_to_registered_ms",
                                  std::to_string(MillisSince(t0)));
  // An IPMI host drained, powered off through its BMC, and booted again.
  admin("ALTER NODE 2 DRAIN");
  admin("ALTER NODE 2 POWER OFF");
  EXPECT_EQ(lab.Agent(2, "status"), "off");
  t0 = Clock::now();
  admin("ALTER NODE 2 POWER ON");
  ::testing::Test::RecordProperty("ipmi_off_to_registered_ms", std::to_string(MillisSince(t0)));
  // A Wake-on-LAN host powered off (soft, by its OS) and booted by a magic packet.
  admin("ALTER NODE 3 DRAIN");
  admin("ALTER NODE 3 POWER OFF");
  // Wake-on-LAN cannot observe the host: the command returns once the node has left; the
  // host is off moments later (as after SUSPEND above).
  for (int i = 0; i < 100 && lab.Agent(3, "status") != "off"; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(lab.Agent(3, "status"), "off");
  admin("ALTER NODE 3 POWER ON");
  // Data goes back to the woken nodes, still under load.
  std::vector<std::vector<std::string>> segs;
  ASSERT_EQ(
      c.Exec("SELECT segment_id FROM wattdb_segments WHERE table_name = 'acc' ORDER BY segment_id",
             &segs),
      "");
  for (size_t i = 0; i < segs.size(); i++) {
    if (i % 4 == 0) continue;
    admin(fmt::format("ALTER TABLE acc MOVE SEGMENT {} TO NODE {}", segs[i][0], i % 4 + 1));
  }
  while (reads < 20 || inserts < 20) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  reader.join();
  writer.join();
  EXPECT_EQ(errors.load(), 0) << last_error;
  EXPECT_EQ(c.Scalar("SELECT count(*) || '/' || sum(v) FROM acc"), "4000/" + sum);
  EXPECT_EQ(c.Scalar("SELECT count(*) FROM log"), std::to_string(inserts.load()));
  EXPECT_EQ(c.Scalar("SELECT count(*) FROM wattdb_nodes WHERE state = 'up' AND power_state = 'on'"),
            "4");
  EXPECT_EQ(
      c.Scalar("SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'acc'"),
      "4");
}

}  // namespace
}  // namespace wattdb::testing
