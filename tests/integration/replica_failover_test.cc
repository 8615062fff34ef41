// Segment replicas end to end (docs/design/replication.md): a table WITH (replicas = 2) has a
// follower on another node; the host of its leader is lost (the node killed -9 and its data
// directory removed) while a writer commits; the follower takes over, every acknowledged row
// is there, writes go on, and the lost node, back empty, is seeded as a follower again. And a
// transaction over two leaders whose commit is decided survives the loss of one of them
// between its durable prepare and its commit: the follower holds the prepare and commits it.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Clock = std::chrono::steady_clock;

// "leader follower" node ids of table t's only segment, or "" while it has no follower.
std::string ReplicaSet(PgConn& c) {
  std::string leader = c.Scalar(
      "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = 't' AND role = 'leader'");
  std::string follower = c.Scalar(
      "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = 't' AND role = 'follower'");
  return follower.empty() ? "" : leader + " " + follower;
}

TEST(Replicas, ALostLeaderHostLosesNoAcknowledgedRowAndIsSeededAgain) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;  // a node silent 2 s is down
  o.segment_bytes = 64 << 20;     // one segment: its leader is the node to lose
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  std::string msg;
  EXPECT_EQ(c->Exec("CREATE TABLE bad (id INT PRIMARY KEY) WITH (replicas = 9)", nullptr, &msg),
            "22023")
      << msg;
  EXPECT_EQ(c->Exec("CREATE TABLE bad (id INT PRIMARY KEY) WITH (replicas = 4)", nullptr, &msg),
            "22023")
      << "more copies than nodes: " << msg;
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT) WITH (replicas = 2, "
                    "fillfactor = 90)"),
            "");
  std::string set = ReplicaSet(*c);
  ASSERT_NE(set, "") << "the follower is seeded at CREATE TABLE";
  int leader = std::stoi(set.substr(0, set.find(' ')));
  int follower = std::stoi(set.substr(set.find(' ') + 1));
  EXPECT_NE(leader, follower);
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 2000) g"), "");

  // A writer commits one row at a time and keeps the ids it was told committed.
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<int> acked;
  std::atomic<int> failed{0};
  std::atomic<int64_t> last_ack_us{0}, kill_us{0}, first_ack_after_kill_us{0}, max_gap_us{0};
  std::thread writer([&] {
    auto w = cluster.Connect();
    for (int id = 100000; !stop; id++) {
      std::string st = w->Exec(fmt::format("INSERT INTO t VALUES ({}, 'w')", id));
      if (st.empty()) {
        std::lock_guard<std::mutex> l(mu);
        acked.insert(id);
        int64_t now =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now().time_since_epoch())
                .count();
        if (last_ack_us) max_gap_us = std::max<int64_t>(max_gap_us, now - last_ack_us);
        last_ack_us = now;
        if (kill_us && !first_ack_after_kill_us) first_ack_after_kill_us = last_ack_us.load();
      } else {
        failed++;
        if (st == "08006" || st == "08003" || st == "57P01") w = cluster.Connect();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  pid_t pid = cluster.NodePid(leader);
  ASSERT_GT(pid, 0);
  auto killed = Clock::now();
  kill_us =
      std::chrono::duration_cast<std::chrono::microseconds>(killed.time_since_epoch()).count();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  std::error_code ec;
  std::filesystem::remove_all(fmt::format("{}/data/n{}", cluster.dir(), leader), ec);
  // The follower leads within the heartbeat timeout and a maintenance round.
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = 't' AND role = 'leader'",
      std::to_string(follower), 30000))
      << cluster.LogLines("failover");
  size_t acked_before;
  {
    std::lock_guard<std::mutex> l(mu);
    acked_before = acked.size();
  }
  // Writes go on: more acknowledgements after the failover.
  auto until = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < until) {
    std::lock_guard<std::mutex> l(mu);
    if (acked.size() > acked_before + 20) break;
  }
  stop = true;
  writer.join();
  ASSERT_GT(first_ack_after_kill_us.load(), 0) << "no write was acknowledged after the loss";
  std::vector<std::vector<std::string>> rows;
  ASSERT_EQ(c->Exec("SELECT id FROM t WHERE id >= 100000", &rows), "");
  std::set<int> present;
  for (const auto& r : rows) present.insert(std::stoi(r[0]));
  size_t lost = 0;
  for (int id : acked) lost += present.count(id) ? 0 : 1;
  EXPECT_EQ(lost, 0u) << "of " << acked.size() << " acknowledged";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE id <= 2000"), "2000");
  // How long the writer went without an acknowledgement: the heartbeat timeout (2 s here)
  // and a maintenance round.
  std::printf("acknowledged=%zu lost=%zu failed_attempts=%d longest_gap_s=%.2f\n%s", acked.size(),
              lost, failed.load(), max_gap_us / 1e6, cluster.LogLines("failover seg=").c_str());

  // The segment has two copies again (the third node's), and the lost node comes back empty.
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND state = 'live'", "2",
      30000));
  EXPECT_EQ(cluster.RestartDeadNodes(), 1);
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "3", 30000));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE id <= 2000"), "2000");
}

// ALTER TABLE ... SET (replicas = n): more copies are seeded by upkeep while the table is in
// use, fewer are dropped at once; RESET returns to the cluster's replication_factor.
TEST(Replicas, AlterTableSetsHowManyCopiesEverySegmentHas) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;
  o.segment_bytes = 1 << 20;  // a few segments
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  std::string msg;
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, pad TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 20000) g"),
            "");
  const std::string segments =
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND role = 'leader'";
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) > 1 FROM wattdb_replicas WHERE table_name = 't' "
                      "AND role = 'leader'",
                      "t", 30000));
  const std::string copies =
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND state = 'live'";
  EXPECT_EQ(c->Scalar(copies), c->Scalar(segments)) << "replication_factor 1";
  EXPECT_EQ(c->Exec("ALTER TABLE t SET (replicas = 4)", nullptr, &msg), "22023") << msg;
  EXPECT_EQ(c->Exec("ALTER TABLE nosuch SET (replicas = 2)", nullptr, &msg), "42P01") << msg;
  EXPECT_EQ(c->Exec("BEGIN"), "");
  EXPECT_EQ(c->Exec("ALTER TABLE t SET (replicas = 2)", nullptr, &msg), "25001") << msg;
  EXPECT_EQ(c->Exec("ROLLBACK"), "");
  ASSERT_EQ(c->Exec("ALTER TABLE t SET (replicas = 3)", nullptr, &msg), "") << msg;
  int n = std::stoi(c->Scalar(segments));
  EXPECT_TRUE(cluster.WaitFor(copies, std::to_string(3 * n), 60000)) << c->Scalar(copies);
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM (SELECT DISTINCT segment_id, node_id FROM "
                      "wattdb_replicas WHERE table_name = 't') d"),
            std::to_string(3 * n))
      << "every copy of a segment on a node of its own";
  ASSERT_EQ(c->Exec("ALTER TABLE t SET (replicas = 2)", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar(copies), std::to_string(2 * n)) << "dropped at once";
  ASSERT_EQ(c->Exec("ALTER TABLE t RESET (replicas)", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar(copies), std::to_string(n));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "20000");
}

// A leader frozen after applying a commit, before shipping it, is deposed (heartbeat timeout)
// and its follower leads. When it resumes, its follower refuses the old epoch's record; the
// commit must not be acknowledged then, for the copy that leads now does not hold it.
TEST(Replicas, ALeaderFrozenMidCommitCannotAcknowledgeItAfterItIsDeposed) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;  // down after 2 s
  o.segment_bytes = 64 << 20;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT) WITH (replicas = 2)"), "");
  std::string set = ReplicaSet(*c);
  ASSERT_NE(set, "");
  int leader = std::stoi(set.substr(0, set.find(' ')));
  int follower = std::stoi(set.substr(set.find(' ') + 1));
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, 'x' FROM generate_series(1, 10) g"), "");
  pid_t pid = cluster.NodePid(leader);
  ASSERT_GT(pid, 0);
  cluster.ArmFailpoint("node.after_commit_applied stop");
  std::string st, msg;
  std::thread writer([&] {
    auto w = cluster.Connect();
    st = w->Exec("INSERT INTO t VALUES (100, 'in flight')", nullptr, &msg);
  });
  bool deposed = cluster.WaitFor(
      "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = 't' AND role = 'leader'",
      std::to_string(follower), 30000);
  kill(pid, SIGCONT);
  writer.join();
  ASSERT_TRUE(deposed) << cluster.LogLines("failover");
  std::string present = c->Scalar("SELECT count(*) FROM t WHERE id = 100");
  EXPECT_TRUE(st != "" || present == "1")
      << "acknowledged, yet missing from the copy that leads: " << present;
  EXPECT_NE(st, "") << "the deposed leader's commit was acknowledged";
  std::printf("in-flight commit: sqlstate=%s message=%s present=%s\n", st.c_str(), msg.c_str(),
              present.c_str());
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (101, 'after')"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE id <= 10"), "10");
}

// The leader of table `name`'s only segment ("" while it has no follower).
std::string LeaderOf(PgConn& c, const std::string& name) {
  return c.Scalar(fmt::format(
      "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = '{}' AND role = 'leader' AND "
      "EXISTS (SELECT 1 FROM wattdb_replicas WHERE table_name = '{}' AND role = 'follower')",
      name, name));
}

TEST(Replicas, ADecidedCommitSurvivesTheLossOfALeaderBetweenPrepareAndCommit) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;
  o.segment_bytes = 64 << 20;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  std::string msg;
  ASSERT_EQ(c->Exec("CREATE TABLE a (id INT PRIMARY KEY, v INT) WITH (replicas = 2)"), "");
  ASSERT_EQ(c->Exec("CREATE TABLE b (id INT PRIMARY KEY, v INT) WITH (replicas = 2)"), "");
  ASSERT_NE(LeaderOf(*c, "a"), "");
  ASSERT_NE(LeaderOf(*c, "b"), "");
  if (LeaderOf(*c, "a") == LeaderOf(*c, "b")) {  // the commit must span two leaders
    std::string seg = c->Scalar(
        "SELECT min(segment_id) FROM wattdb_replicas "
        "WHERE table_name = 'b'");
    int other = std::stoi(LeaderOf(*c, "a")) % 3 + 1;
    ASSERT_EQ(
        c->Exec(fmt::format("ALTER TABLE b MOVE SEGMENT {} TO NODE {}", seg, other), nullptr, &msg),
        "")
        << msg;
    ASSERT_TRUE(cluster.WaitFor(
        "SELECT count(*) FROM wattdb_replicas WHERE table_name = 'b' AND state = 'live'", "2",
        30000));
  }
  ASSERT_NE(LeaderOf(*c, "a"), LeaderOf(*c, "b"));
  // The first of the two leaders to reach its commit dies there (its prepare is durable, the
  // decision logged: COMMIT succeeds), and its host is lost with it.
  cluster.ArmFailpoint("node.before_distributed_commit");
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("INSERT INTO a SELECT g, g FROM generate_series(1, 100) g"), "");
  ASSERT_EQ(c->Exec("INSERT INTO b SELECT g, g FROM generate_series(1, 100) g"), "");
  ASSERT_EQ(c->Exec("COMMIT", nullptr, &msg), "") << msg;
  int dead = cluster.WaitForDeadNode(10000);
  ASSERT_GT(dead, 0) << "no participant reached the failpoint";
  std::error_code ec;
  std::filesystem::remove_all(fmt::format("{}/data/n{}", cluster.dir(), dead), ec);
  // Its segment fails over to the follower, which reports the transaction in doubt and
  // commits it from the master's logged decision.
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM a", "100", 30000))
      << cluster.LogLines("in-doubt") << cluster.LogLines("failover");
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM b", "100", 30000))
      << cluster.LogLines("in-doubt") << cluster.LogLines("failover");
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM a"), "5050");
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM b"), "5050");
  std::printf("%s", cluster.LogLines("in-doubt txn resolved").c_str());
}

// With two copies of every segment, a drain hands each leadership to the node that follows
// the segment (no copy), and a node put to sleep leaves the sets it follows before it sleeps,
// so that no leader waits for it: its copies are asleep, the leaders keep what they miss, and
// on waking they catch up from those records and follow again, with no segment copied.
TEST(Replicas, DrainsHandLeadershipOverAndASleepingCopyCatchesUpOnWaking) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;
  o.segment_bytes = 64 << 20;
  o.cluster_toml = "replication_factor = 2";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)"), "");
  std::string set = ReplicaSet(*c);
  ASSERT_NE(set, "") << "two copies without WITH (replicas)";
  int leader = std::stoi(set.substr(0, set.find(' ')));
  int follower = std::stoi(set.substr(set.find(' ') + 1));
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, 'x' FROM generate_series(1, 1000) g"), "");
  // Both copies report the last record, as the nodes' heartbeats tell it.
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND applied_ts > 0 AND "
      "records_behind = 0 AND bytes_behind = 0",
      "2", 10000));

  std::string msg;
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} DRAIN", leader), nullptr, &msg), "") << msg;
  EXPECT_EQ(ReplicaSet(*c), fmt::format("{} {}", follower, leader))
      << "the follower leads; the drained node follows";
  EXPECT_NE(cluster.LogLines("leadership handed over").find(fmt::format("to=n{}", follower)),
            std::string::npos);
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} SUSPEND", leader), nullptr, &msg), "") << msg;
  const std::string sleeper = fmt::format(
      "SELECT state FROM wattdb_replicas WHERE table_name = 't' AND node_id = {}", leader);
  EXPECT_EQ(c->Scalar(sleeper), "asleep") << "out of the set before it sleeps";
  for (int i = 1001; i <= 1100; i++) {
    ASSERT_EQ(c->Exec(fmt::format("INSERT INTO t VALUES ({}, 'while it sleeps')", i)), "");
  }
  EXPECT_TRUE(cluster.WaitFor(fmt::format("SELECT records_behind FROM wattdb_replicas WHERE "
                                          "table_name = 't' AND node_id = {}",
                                          leader),
                              "100", 10000))
      << "one record per commit it slept through, kept by its leader";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_replicas WHERE table_name = 't'"), "2")
      << "a sleeping copy still counts: no third copy is seeded";
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} POWER ON", leader), nullptr, &msg), "") << msg;
  EXPECT_NE(cluster.LogLines("asleep copy caught up").find(fmt::format("node=n{}", leader)),
            std::string::npos)
      << cluster.LogLines("asleep copy");
  EXPECT_EQ(c->Scalar(sleeper), "live");
  EXPECT_EQ(cluster.LogLines("follower seeded").find(fmt::format("follower=n{}", leader)),
            std::string::npos)
      << "caught up, not copied again";
  // The woken copy holds every row: it leads again and answers.
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} DRAIN", follower), nullptr, &msg), "") << msg;
  EXPECT_EQ(ReplicaSet(*c), fmt::format("{} {}", leader, follower));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "1100");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE v = 'while it sleeps'"), "100");
}

// A sleeping node killed (its process gone, as after a power loss in standby) comes back as a
// new process: its copies are not caught up from what its memory held, but seeded again.
TEST(Replicas, ACopyWhoseNodeRestartedWhileAsleepIsSeededAgain) {
  MiniClusterOptions o;
  o.nodes = 2;
  o.telemetry_interval_ms = 200;
  o.segment_bytes = 64 << 20;
  o.cluster_toml = "replication_factor = 2";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)"), "");
  std::string set = ReplicaSet(*c);
  ASSERT_NE(set, "");
  int follower = std::stoi(set.substr(set.find(' ') + 1));
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT g, 'x' FROM generate_series(1, 500) g"), "");
  std::string msg;
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} SUSPEND", follower), nullptr, &msg), "") << msg;
  ASSERT_EQ(c->Exec("INSERT INTO t VALUES (501, 'while it sleeps')"), "");
  pid_t pid = cluster.NodePid(follower);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  // Gone (or a zombie) before the power on, which would otherwise resume the dying process.
  for (int waited = 0; waited < 5000 && ProcState(pid) != 0 && ProcState(pid) != 'Z'; waited += 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(c->Exec(fmt::format("ALTER NODE {} POWER ON", follower), nullptr, &msg), "") << msg;
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND state = 'live'", "2", 30000))
      << cluster.LogLines("asleep");
  EXPECT_EQ(cluster.LogLines("asleep copy caught up"), "") << "its memory is gone: not caught up";
  std::string seeded = cluster.LogLines("follower seeded");
  size_t seeds = 0;
  for (size_t at = 0;
       (at = seeded.find(fmt::format("follower=n{}", follower), at)) != std::string::npos; at++) {
    seeds++;
  }
  EXPECT_EQ(seeds, 2u) << "at CREATE TABLE, and again after the restart: " << seeded;
  // The seeded copy holds every row: it leads, and answers.
  std::string seg = c->Scalar("SELECT min(segment_id) FROM wattdb_replicas WHERE table_name = 't'");
  ASSERT_EQ(c->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}", seg, follower), nullptr,
                    &msg),
            "")
      << msg;
  EXPECT_EQ(ReplicaSet(*c).substr(0, ReplicaSet(*c).find(' ')), std::to_string(follower));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "501");
}

// How long writes to a segment stop when its leader is killed (its connections close: the
// master sees it down at once) and when it freezes, as a partitioned node does (silent: down
// after the heartbeat timeout, 2 s here). Prints the figures; asserts writes resume.
TEST(Replicas, WritesResumeAfterTheLeaderIsKilledOrFrozen) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.telemetry_interval_ms = 200;  // heartbeat timeout 2 s
  o.segment_bytes = 64 << 20;
  o.cluster_toml = "replication_factor = 3";
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)"), "");
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(*) FROM wattdb_replicas WHERE table_name = 't' AND state = 'live'", "3",
      30000));
  auto leader_of = [&] {
    return std::stoi(c->Scalar(
        "SELECT min(node_id) FROM wattdb_replicas WHERE table_name = 't' AND role = 'leader'"));
  };
  // Seconds from the fault until the first insert acknowledged after it; -1 if none in 30 s.
  auto outage = [&](const std::function<void(pid_t)>& fault) {
    auto w = cluster.Connect();
    static int id = 0;
    for (int i = 0; i < 20; i++)
      EXPECT_EQ(w->Exec(fmt::format("INSERT INTO t VALUES ({}, 'a')", ++id)), "");
    pid_t pid = cluster.NodePid(leader_of());
    auto t0 = Clock::now();
    fault(pid);
    while (Clock::now() - t0 < std::chrono::seconds(30)) {
      std::string st = w->Exec(fmt::format("INSERT INTO t VALUES ({}, 'b')", ++id));
      if (st.empty()) return std::chrono::duration<double>(Clock::now() - t0).count();
      if (st == "08006" || st == "08003" || st == "57P01") w = cluster.Connect();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1.0;
  };
  double killed = outage([](pid_t pid) { kill(pid, SIGKILL); });
  EXPECT_GE(killed, 0) << cluster.LogLines("failover");
  double frozen = outage([](pid_t pid) { kill(pid, SIGSTOP); });
  EXPECT_GE(frozen, 0) << cluster.LogLines("failover");
  std::printf(
      "writes resumed after kill -9: %.2f s, after a freeze: %.2f s (heartbeat timeout 2 s)\n%s",
      killed, frozen, cluster.LogLines("failover seg=").c_str());
  for (int n = 1; n <= 3; n++) {
    if (pid_t p = cluster.NodePid(n); p > 0) kill(p, SIGCONT);
  }
}

}  // namespace
}  // namespace wattdb::testing
