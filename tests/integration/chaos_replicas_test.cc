// Chaos over replicated segments (docs/design/replication.md): every table keeps two copies
// while a nemesis kills nodes (-9), loses hosts (a node killed and its data directory
// removed, only while every segment has two live copies: one loss at a time), freezes nodes
// for 1-4 s (as a partitioned node looks to its peers: silent until the heartbeat timeout),
// kills the master and moves segments. Clients run bank transfers, inserts with unique ids
// and single-key registers (read, write, compare-and-set; one reader with follower reads).
// Afterwards the balance sum holds, every acknowledged insert is there once, and the
// register history is linearizable, checked by porcupine (tests/lincheck, a Go program).
// WATTDB_CHAOS_SECONDS sets the duration (default 60; `make chaos DURATION=1800`).
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/chaos_util.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// One register operation, as tests/lincheck reads it.
struct RegisterOp {
  int client;
  char op;  // r, w, c
  int key, value, expected;
  int64_t call, ret;
  int out;
  std::string status;  // ok, fail, unknown
};

// A write whose statement failed may still have committed (08007, a lost connection), and
// READ COMMITTED retries make no difference to that: every failed write is of unknown outcome.
RegisterOp RunRegisterOp(PgConn& c, int client, std::mt19937& rng, int keys) {
  RegisterOp o{client, "rwc"[rng() % 3], static_cast<int>(rng() % keys), 0, 0, 0, 0, 0, "ok"};
  o.value = 1 + static_cast<int>(rng() % 5);
  o.expected = static_cast<int>(rng() % 6);
  std::vector<std::vector<std::string>> rows;
  std::string st;
  o.call = NowNs();
  if (o.op == 'r') {
    st = c.Exec(fmt::format("SELECT v FROM reg WHERE k = {}", o.key), &rows);
    if (st.empty() && rows.size() == 1) o.out = std::stoi(rows[0][0]);
    if (st.empty() && rows.size() != 1) st = "BAD SHAPE";
  } else if (o.op == 'w') {
    st = c.Exec(fmt::format("UPDATE reg SET v = {} WHERE k = {}", o.value, o.key));
  } else {
    st = c.Exec(
        fmt::format("UPDATE reg SET v = {} WHERE k = {} AND v = {}", o.value, o.key, o.expected));
    if (st.empty()) o.status = c.tag() == "UPDATE 1" ? "ok" : "fail";
  }
  o.ret = NowNs();
  if (!st.empty()) o.status = o.op == 'r' ? "" : "unknown";  // a failed read is left out
  return o;
}

const char* const kFullyReplicated =
    "SELECT sum(CASE WHEN role = 'follower' AND state = 'live' THEN 1 ELSE 0 END) = "
    "count(DISTINCT segment_id) AND sum(CASE WHEN role = 'learner' OR state <> 'live' THEN 1 "
    "ELSE 0 END) = 0 FROM wattdb_replicas";

// Whether every segment has two live copies (its leader and one follower) and none is being
// seeded: a host may be lost without losing a row.
bool FullyReplicated(PgConn& admin) { return admin.Scalar(kFullyReplicated) == "t"; }

TEST(ChaosReplicas, NothingAcknowledgedIsLostAndRegistersStayLinearizable) {
  const int seconds = ChaosSeconds();
  MiniClusterOptions o;
  o.nodes = 3;
  o.segment_bytes = 256 << 10;    // few splits: each leaves its pieces with one copy a while
  o.telemetry_interval_ms = 250;  // heartbeat timeout 2.5 s
  o.manage_nodes = true;
  o.cluster_toml = "replication_factor = 2\n";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  const int kAccounts = 1000, kKeys = 5;
  {
    auto c = cluster.Connect();
    ASSERT_EQ(c->Exec("CREATE TABLE acc (id INT PRIMARY KEY, balance BIGINT, pad TEXT)"), "");
    ASSERT_EQ(c->Exec("CREATE TABLE log (id BIGINT PRIMARY KEY, pad TEXT)"), "");
    ASSERT_EQ(c->Exec("CREATE TABLE reg (k INT PRIMARY KEY, v INT)"), "");
    ASSERT_EQ(c->Exec(fmt::format("INSERT INTO acc SELECT g, 1000, repeat('p', 600) FROM "
                                  "generate_series(0, {}) g",
                                  kAccounts - 1)),
              "");
    ASSERT_EQ(c->Exec(fmt::format("INSERT INTO reg SELECT g, 0 FROM generate_series(0, {}) g",
                                  kKeys - 1)),
              "");
    ASSERT_TRUE(cluster.WaitFor(
        "SELECT count(*) >= 2 FROM wattdb_partitions WHERE table_name = 'acc'", "t", 60000));
    for (int i = 0; i < 600 && !FullyReplicated(*c); i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE(FullyReplicated(*c))
        << c->Scalar(kFullyReplicated) << "; logs in " << cluster.dir();
  }
  const std::string total = std::to_string(kAccounts * 1000);

  std::atomic<bool> stop{false};
  Tally tally;
  std::atomic<int> unexpected{0}, transfers{0};
  auto note = [&](const std::string& st, const std::string& msg) {
    tally.Add(st);
    if (!Tolerated(st)) {
      unexpected++;
      ADD_FAILURE() << "unexpected SQLSTATE " << st << ": " << msg;
    }
  };
  auto connect = [&](std::unique_ptr<PgConn>& conn) {
    if (conn && conn->ok()) return true;
    conn = cluster.Connect();
    if (conn->ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return false;
  };
  std::vector<std::thread> clients;
  for (int w = 0; w < 2; w++) {  // bank transfers: the sum is checked at the end
    clients.emplace_back([&, w] {
      std::mt19937 rng(200 + w);
      std::unique_ptr<PgConn> conn;
      while (!stop) {
        if (!connect(conn)) continue;
        int a = rng() % kAccounts, b = rng() % kAccounts;
        if (a == b) continue;
        std::string msg, st = Transfer(*conn, a, b, 1 + rng() % 20, &msg);
        if (st.empty()) {
          transfers++;
        } else {
          note(st, msg);
        }
      }
    });
  }
  std::mutex acked_mu;
  std::set<int64_t> acked, unknown;
  clients.emplace_back([&] {  // unique inserts: every acknowledged one must stay
    std::unique_ptr<PgConn> conn;
    for (int64_t id = 1; !stop; id++) {
      if (!connect(conn)) continue;
      std::string msg,
          st = conn->Exec(fmt::format("INSERT INTO log VALUES ({}, 'x')", id), nullptr, &msg);
      std::lock_guard<std::mutex> l(acked_mu);
      (st.empty() ? acked : unknown).insert(id);
      if (!st.empty()) note(st, msg);
    }
  });
  std::mutex history_mu;
  std::vector<RegisterOp> history;
  for (int w = 0; w < 3; w++) {  // registers; client 2 reads followers too
    clients.emplace_back([&, w] {
      std::mt19937 rng(300 + w);
      std::unique_ptr<PgConn> conn;
      while (!stop) {
        if (!connect(conn)) continue;
        if (w == 2 && conn->Exec("SET wattdb_follower_reads = on") != "") continue;
        RegisterOp op = RunRegisterOp(*conn, w, rng, kKeys);
        if (op.status.empty()) continue;
        std::lock_guard<std::mutex> l(history_mu);
        history.push_back(op);
      }
    });
  }

  // The nemesis.
  std::mt19937 rng(5151);
  std::map<std::string, int> actions;
  auto admin = cluster.Connect();
  for (auto deadline = Clock::now() + std::chrono::seconds(seconds); Clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 2000));
    if (!admin->ok()) admin = cluster.Connect();
    int node = 1 + rng() % 3;
    pid_t pid = cluster.NodePid(node);
    switch (rng() % 6) {
      case 0:  // kill a node; the master restarts it with its disk
        if (pid && kill(pid, SIGKILL) == 0) actions["node kill -9"]++;
        break;
      case 1:  // lose a host: killed, its disk gone; only one loss at a time
        for (int i = 0; i < 100 && admin->ok() && !FullyReplicated(*admin); i++) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (pid && FullyReplicated(*admin) && kill(pid, SIGKILL) == 0) {
          AwaitProcState(pid, 0, 5000);
          // Renamed first (atomic): a restart meets the whole disk or none, never half of one.
          std::string dir = fmt::format("{}/data/n{}", cluster.dir(), node);
          std::error_code ec;
          std::filesystem::rename(dir, dir + ".lost", ec);
          std::filesystem::remove_all(dir + ".lost", ec);
          actions["host lost (kill -9, data removed)"]++;
        }
        break;
      case 2:  // freeze a node for 1-4 s: silent to its peers, as if cut off
        if (!pid) break;
        kill(pid, SIGSTOP);
        std::this_thread::sleep_for(std::chrono::milliseconds(1000 + rng() % 3000));
        kill(pid, SIGCONT);
        actions["node freeze"]++;
        break;
      case 3:  // kill the master and start a new one
        cluster.SignalMaster(SIGKILL);
        actions["master kill -9"]++;
        ASSERT_TRUE(cluster.StartMaster()) << "logs in " << cluster.dir();
        admin = cluster.Connect();
        break;
      default: {  // move a random segment to a random node
        std::vector<std::vector<std::string>> segs;
        if (admin->Exec("SELECT table_name, segment_id FROM wattdb_segments", &segs) != "" ||
            segs.empty())
          break;
        auto& s = segs[rng() % segs.size()];
        std::string st =
            admin->Exec(fmt::format("ALTER TABLE {} MOVE SEGMENT {} TO NODE {}", s[0], s[1], node));
        actions[st.empty() ? "move" : "move refused (" + st + ")"]++;
        break;
      }
    }
  }
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_TRUE(Recover(cluster, 3));

  auto c = cluster.Connect();
  EXPECT_TRUE(cluster.WaitFor("SELECT sum(balance) FROM acc", total, 60000))
      << "total is " << c->Scalar("SELECT sum(balance) FROM acc") << "; logs in " << cluster.dir();
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM acc"), std::to_string(kAccounts));
  if (CheckInserts(cluster, *c, "log", acked, unknown) != 0) cluster.KeepDir();
  EXPECT_EQ(unexpected.load(), 0);

  // The register history, checked by porcupine.
  std::string path = cluster.dir() + "/registers.tsv";
  {
    std::ofstream f(path);
    for (const RegisterOp& op : history) {
      f << op.client << '\t' << op.op << '\t' << op.key << '\t' << op.value << '\t' << op.expected
        << '\t' << op.call << '\t' << op.ret << '\t' << op.out << '\t' << op.status << '\n';
    }
  }
  std::string out;
  int rc =
      RunCommand(fmt::format("cd {}/tests/lincheck && GOFLAGS=-mod=mod timeout 600 go run . {}",
                             WATTDB_SOURCE_DIR, path),
                 &out);
  EXPECT_EQ(rc, 0) << out << "history in " << path;
  if (rc != 0) cluster.KeepDir();

  std::string report = fmt::format(
      "duration {} s; transfers {}; inserts acknowledged {}, unknown {}; register ops {}; {}; ",
      seconds, transfers.load(), acked.size(), unknown.size(), history.size(),
      out.substr(0, out.find('\n')));
  for (auto& [a, n] : actions) report += fmt::format("{} x{}; ", a, n);
  for (auto& [e, n] : tally.errors) report += fmt::format("error {} x{}; ", e, n);
  std::cout << "[chaos-replicas] " << report << "\n";
  RecordProperty("report", report);
  EXPECT_GT(transfers.load(), 10);
  EXPECT_GT(acked.size(), 10u);
  EXPECT_GT(history.size(), 100u);
}

}  // namespace
}  // namespace wattdb::testing
