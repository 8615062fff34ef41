// Follower reads end to end (docs/design/replication.md, "Follower reads"): with
// `SET wattdb_follower_reads = on` a query reads any live copy of a replicated segment, sees
// every row acknowledged before it started (in any session), and falls back to the leader
// when the follower it chose is gone.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Clock = std::chrono::steady_clock;

TEST(FollowerReads, QueriesReadEveryLiveCopySeeEveryAcknowledgedRowAndOutliveAFollower) {
  MiniClusterOptions o;
  o.nodes = 2;
  o.telemetry_interval_ms = 200;
  o.segment_bytes = 64 << 20;  // one segment, led by one node and followed by the other
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect(), w = cluster.Connect();
  std::string msg;
  EXPECT_EQ(c->Scalar("SHOW wattdb_follower_reads"), "off");
  EXPECT_EQ(c->Exec("SET wattdb_follower_reads = sometimes", nullptr, &msg), "22023") << msg;
  ASSERT_EQ(c->Exec("SET wattdb_follower_reads = on"), "");
  EXPECT_EQ(c->Scalar("SHOW wattdb_follower_reads"), "on");
  ASSERT_EQ(w->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT) WITH (replicas = 2)"), "");
  ASSERT_EQ(w->Exec("INSERT INTO t SELECT g, g FROM generate_series(1, 1000) g"), "");
  std::string follower =
      c->Scalar("SELECT node_id FROM wattdb_replicas WHERE table_name = 't' AND role = 'follower'");
  ASSERT_FALSE(follower.empty()) << "the follower is seeded at CREATE TABLE";

  const std::string kFollowerRowsRead =
      "SELECT rows_read FROM wattdb_replicas WHERE table_name = 't' AND role = 'follower'";
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // two heartbeats
  int64_t before = std::stoll(c->Scalar(kFollowerRowsRead));
  // Each query sees what the other session committed before it: the follower holds every
  // acknowledged commit, whichever copy answers.
  for (int i = 1; i <= 40; i++) {
    ASSERT_EQ(w->Exec(fmt::format("UPDATE t SET v = v + 1 WHERE id = {}", i)), "");
    ASSERT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string(500500 + i)) << "query " << i;
  }
  // The follower answered some of them: the 40 scans read 40,000 rows, about half of them
  // there (its rows read, from its heartbeats).
  EXPECT_TRUE(
      cluster.WaitFor(fmt::format("SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND "
                                  "role = 'follower' AND rows_read >= {}",
                                  before + 10000),
                      "1", 10000))
      << "few queries read the follower: " << c->Scalar(kFollowerRowsRead) << " rows read, "
      << before << " before";
  // Off, and inside a transaction that writes, queries read the leader only.
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t VALUES (5000, 0)"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "1001") << "its own write";
  ASSERT_EQ(c->Exec("ROLLBACK"), "");

  // The follower killed (-9): queries choosing it fall back to the leader, none fails.
  pid_t pid = cluster.NodePid(std::stoi(follower));
  ASSERT_GT(pid, 0);
  kill(pid, SIGKILL);
  for (int i = 0; i < 20; i++) {
    std::string got = c->Scalar("SELECT sum(v) FROM t");
    EXPECT_EQ(got, "500540") << "query " << i << " after the kill";
  }
}

// Transfers between accounts on segments led by both nodes (transactions over two leaders,
// decided by the master) while a session with follower reads sums the balances: every sum
// is the total, whichever copies answered (a follower holding a transaction's prepare
// answers no read that could miss its commit).
TEST(FollowerReads, SumsReadOnFollowersNeverSeeHalfATransfer) {
  MiniClusterOptions o;
  o.nodes = 2;
  o.telemetry_interval_ms = 200;
  MiniCluster cluster(o);  // 64 KB segments: the accounts span several, led by both nodes
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE acct (id INT PRIMARY KEY, bal INT, pad TEXT) "
                    "WITH (replicas = 2)"),
            "");
  ASSERT_EQ(c->Exec("INSERT INTO acct SELECT g, 100, repeat('x', 100) FROM "
                    "generate_series(1, 2000) g"),
            "");
  // Split, spread over both nodes, each segment with its follower on the other.
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_replicas WHERE "
                      "table_name = 'acct' AND role = 'leader'",
                      "2", 30000));
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) = 2 * count(DISTINCT segment_id) FROM "
                      "wattdb_replicas WHERE table_name = 'acct' AND state = 'live'",
                      "t", 30000));
  std::atomic<bool> stop{false};
  std::atomic<int> transfers{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; w++) {
    writers.emplace_back([&, w] {
      auto s = cluster.Connect();
      for (int i = 0; !stop; i++) {
        int from = 1 + (i * 7 + w * 13) % 2000, to = 1 + (i * 11 + 1000 + w) % 2000;
        if (from == to) continue;
        if (s->Exec("BEGIN") != "") continue;
        bool ok = s->Exec(fmt::format("UPDATE acct SET bal = bal - 1 WHERE id = {}", from)) == "" &&
                  s->Exec(fmt::format("UPDATE acct SET bal = bal + 1 WHERE id = {}", to)) == "";
        if (s->Exec(ok ? "COMMIT" : "ROLLBACK") == "" && ok) transfers++;
      }
    });
  }
  auto r = cluster.Connect();
  ASSERT_EQ(r->Exec("SET wattdb_follower_reads = on"), "");
  int sums = 0;
  for (auto until = Clock::now() + std::chrono::seconds(6); Clock::now() < until; sums++) {
    std::string sum = r->Scalar("SELECT sum(bal) FROM acct");
    if (sum != "200000") {
      ADD_FAILURE() << "sum " << sum << " after " << transfers << " transfers";
      break;
    }
  }
  stop = true;
  for (auto& t : writers) t.join();
  EXPECT_GT(transfers.load(), 20);
  EXPECT_GT(sums, 20);
  EXPECT_EQ(c->Scalar("SELECT sum(bal) FROM acct"), "200000");
}

}  // namespace
}  // namespace wattdb::testing
