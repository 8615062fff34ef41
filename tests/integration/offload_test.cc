// Operator offloading on real nodes: blocking operators above the exchanges (aggregation
// merging the nodes' partial states, joins, sorts) run on a helper node that reads the
// owners' segments itself, and the answers are those of the master's own run -- also when
// the helper dies midway (the master runs the subtree itself) or freezes (the statement's
// timeout still ends it).
#include <chrono>
#include <csignal>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Rows = std::vector<std::vector<std::string>>;

const char* kQueries[] = {
    "SELECT g, count(*), sum(v), min(note), max(v) FROM t GROUP BY g ORDER BY g",
    ("SELECT u.name, count(*), sum(t.v) FROM t JOIN u ON t.g = u.g WHERE t.v % 3 = 0 GROUP BY "
     "u.name ORDER BY 2 DESC, 1"),
    "SELECT id, v FROM t WHERE v < 60 ORDER BY v DESC, id",
    "SELECT count(DISTINCT note), count(DISTINCT u.name), avg(t.v) FROM t JOIN u ON t.g = u.g",
    "SELECT g FROM t WHERE v < 100 UNION SELECT g + 100 FROM u ORDER BY 1",
    "SELECT note, count(*) FROM t GROUP BY note HAVING count(*) > 20 ORDER BY 2 DESC, 1 LIMIT 5",
};

std::string Text(const Rows& rows) {
  std::string s;
  for (const auto& r : rows) {
    for (const auto& v : r) s += v + "|";
    s += "\n";
  }
  return s;
}

// `spread`: split-off segments spread over the nodes (else they stay with their owner).
MiniClusterOptions ThreeNodes(int metrics_port, bool spread = true) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.balance = spread;
  o.segment_bytes = 16 << 10;
  o.extra_toml = fmt::format("[power]\nmetrics_port = {}\n", metrics_port);
  return o;
}

// The load's splits and moves are over (a helper reading a segment that splits or moves
// under it gives the statement back to the master, which the tests count): no segment is
// over 16 KiB and the layout stayed the same for a few telemetry intervals.
void WaitSettled(PgConn& c) {
  std::string layout;
  auto since = std::chrono::steady_clock::now(), deadline = since + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    // Segments, oversized ones, and where each is (a move changes the sum).
    std::string now = c.Scalar(
        "SELECT count(*) || ' ' || sum(CASE WHEN bytes > 16384 THEN 1 ELSE 0 END) || ' ' || "
        "sum(segment_id * node_id) "
        "FROM wattdb_segments");
    if (now != layout) {
      layout = now;
      since = std::chrono::steady_clock::now();
    } else if (layout.find(" 0 ") != std::string::npos &&
               std::chrono::steady_clock::now() - since > std::chrono::milliseconds(1500)) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  FAIL() << "the segments did not settle: " << layout;
}

void Load(MiniCluster& cluster, PgConn& c, bool spread = true) {
  ASSERT_EQ(c.Exec("CREATE TABLE t (id INT PRIMARY KEY, g INT, v BIGINT, note TEXT)"), "");
  ASSERT_EQ(c.Exec("INSERT INTO t SELECT i, i % 11, i * 3 % 1000, 'n' || (i % 40) FROM "
                   "generate_series(1, 4000) i"),
            "");
  ASSERT_EQ(c.Exec("CREATE TABLE u (g INT PRIMARY KEY, name TEXT)"), "");
  ASSERT_EQ(c.Exec("INSERT INTO u SELECT i, 'group ' || i FROM generate_series(0, 10) i"), "");
  if (spread) {
    ASSERT_TRUE(cluster.WaitFor(
        "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 't'", "3", 30000));
  }
  WaitSettled(c);
}

double Metric(int port, const char* name) {
  int status = 0;
  std::string text = HttpGet(port, "/metrics", &status);
  return status == 0 ? MetricValue(text, name) : -1.0;
}

TEST(Offload, HelperNodesAnswerAsTheMasterWould) {
  int port = FreeTcpPort();
  MiniCluster cluster(ThreeNodes(port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  Load(cluster, *c);
  std::vector<std::string> expected;
  ASSERT_EQ(c->Exec("SET wattdb_offload = off"), "");
  for (const char* q : kQueries) {
    Rows rows;
    ASSERT_EQ(c->Exec(q, &rows), "") << q;
    ASSERT_FALSE(rows.empty()) << q;
    expected.push_back(Text(rows));
  }
  Rows plan;
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ") + kQueries[1], &plan), "");
  EXPECT_EQ(Text(plan).find("Offload"), std::string::npos) << Text(plan);

  double offloaded = Metric(port, "wattdb_offloaded_total");
  ASSERT_GE(offloaded, 0);
  int runs = 0;
  for (const char* setting : {"on", "1", "2", "3"}) {
    ASSERT_EQ(c->Exec(fmt::format("SET wattdb_offload = {}", setting)), "");
    for (size_t i = 0; i < std::size(kQueries); i++, runs++) {
      Rows rows;
      ASSERT_EQ(c->Exec(kQueries[i], &rows), "") << kQueries[i];
      EXPECT_EQ(Text(rows), expected[i]) << "wattdb_offload = " << setting << ": " << kQueries[i];
    }
  }
  // Every run went to its helper and finished there (none fell back to the master).
  EXPECT_EQ(Metric(port, "wattdb_offloaded_total"), offloaded + runs);
  EXPECT_EQ(Metric(port, "wattdb_offload_failures_total"), 0);

  // EXPLAIN names where each operator runs; ANALYZE shows the helper's counters.
  ASSERT_EQ(c->Exec("SET wattdb_offload = on"), "");
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ") + kQueries[1], &plan), "");
  std::string text = Text(plan);
  EXPECT_NE(text.find("Offload  (on master)"), std::string::npos) << text;
  EXPECT_NE(text.find("HashJoin inner keys=[#1] = [#0]"), std::string::npos) << text;
  EXPECT_NE(text.find("(on a helper node)"), std::string::npos) << text;
  ASSERT_EQ(c->Exec("SET wattdb_offload = 2"), "");
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ANALYZE ") + kQueries[0], &plan), "");
  text = Text(plan);
  EXPECT_NE(text.find("Offload to node 2  (on master) (actual n2: rows=11 "), std::string::npos)
      << text;
  EXPECT_NE(text.find("FinalAggregate groups=[#0] aggs=[count(*), sum(#2), min(#3), max(#2)]  (on "
                      "helper node 2) "
                      "(actual n2: rows=11 "),
            std::string::npos)
      << text;
  // Below the helper's Exchange, each owner's counters came back through the helper: the scan
  // read every row of t once, on the three nodes that own its segments.
  EXPECT_EQ(text.find("not collected"), std::string::npos) << text;
  {
    size_t at = text.find("Scan ");
    ASSERT_NE(at, std::string::npos) << text;
    std::string line = text.substr(at, text.find('\n', at) - at);
    int64_t rows = 0;
    std::set<std::string> owners;
    static const std::regex kOwner("(n[0-9]+): rows=([0-9]+)");
    for (std::sregex_iterator m(line.begin(), line.end(), kOwner), end; m != end; ++m) {
      owners.insert((*m)[1]);
      rows += std::stoll((*m)[2]);
    }
    EXPECT_EQ(rows, 4000) << line;
    EXPECT_EQ(owners.size(), 3u) << line;
  }

  // Bad values are refused with 22023 and leave the setting as it was.
  EXPECT_EQ(c->Exec("SET wattdb_offload = sometimes"), sqlstate::kInvalidParameterValue);
  EXPECT_EQ(c->Exec("SET wattdb_offload = 0"), sqlstate::kInvalidParameterValue);
  EXPECT_EQ(c->Scalar("SHOW wattdb_offload"), "2");
  // A node that is not up is no helper: the master runs the subtree.
  ASSERT_EQ(c->Exec("SET wattdb_offload = 9"), "");
  Rows rows;
  ASSERT_EQ(c->Exec(kQueries[1], &rows), "");
  EXPECT_EQ(Text(rows), expected[1]);
}

TEST(Offload, AHelperThatDiesMidwayGivesWayToTheMaster) {
  int port = FreeTcpPort();
  MiniCluster cluster(ThreeNodes(port, false));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  Load(cluster, *c, false);
  Rows want, got;
  ASSERT_EQ(c->Exec(kQueries[1], &want), "");
  // A helper that owns none of the data (its death leaves the answer reachable).
  Rows owners;
  ASSERT_EQ(c->Exec("SELECT DISTINCT node_id FROM wattdb_segments", &owners), "");
  int helper = 3;
  while (helper > 0 && Text(owners).find(std::to_string(helper) + "|") != std::string::npos)
    helper--;
  ASSERT_GT(helper, 0) << "every node owns data: " << Text(owners);
  ASSERT_EQ(c->Exec(fmt::format("SET wattdb_offload = {}", helper)), "");
  pid_t old_pid = cluster.NodePid(helper);
  ASSERT_GT(old_pid, 0);
  // Once the splits that follow the load have settled, the helper runs the query to the end
  // (while a segment it reads splits, it fails with Stale and the master runs the query).
  auto settled = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  double offloaded = Metric(port, "wattdb_offloaded_total");
  while (Metric(port, "wattdb_offloaded_total") == offloaded &&
         std::chrono::steady_clock::now() < settled) {
    ASSERT_EQ(c->Exec(kQueries[1], &got), "");
    EXPECT_EQ(Text(got), Text(want));
  }
  ASSERT_GT(Metric(port, "wattdb_offloaded_total"), offloaded);
  double failures = Metric(port, "wattdb_offload_failures_total");
  // The helper crashes as it is about to send its first result batch.
  cluster.ArmFailpoint("node.offload.before_send");
  ASSERT_EQ(c->Exec(kQueries[1], &got), "");
  EXPECT_EQ(Text(got), Text(want));
  EXPECT_EQ(Metric(port, "wattdb_offload_failures_total"), failures + 1);
  // The helper is back (restarted by the master's supervisor, or here) and helps again.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pid_t new_pid = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    cluster.RestartDeadNodes();
    new_pid = cluster.NodePid(helper);
    if (new_pid > 0 && new_pid != old_pid) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_NE(new_pid, old_pid);
  ASSERT_TRUE(cluster.WaitFor(
      fmt::format("SELECT pid FROM wattdb_nodes WHERE node_id = {} AND state = 'up'", helper),
      std::to_string(new_pid), 30000));
  offloaded = Metric(port, "wattdb_offloaded_total");
  ASSERT_EQ(c->Exec(kQueries[1], &got), "");
  EXPECT_EQ(Text(got), Text(want));
  EXPECT_EQ(Metric(port, "wattdb_offloaded_total"), offloaded + 1);
}

TEST(Offload, AFrozenHelperCannotHoldAStatementPastItsTimeout) {
  MiniCluster cluster(ThreeNodes(FreeTcpPort()));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  Load(cluster, *c);
  Rows want, got;
  ASSERT_EQ(c->Exec(kQueries[0], &want), "");
  pid_t helper = cluster.NodePid(3);
  ASSERT_GT(helper, 0);
  ASSERT_EQ(c->Exec("SET wattdb_offload = 3"), "");
  ASSERT_EQ(c->Exec("SET statement_timeout = 1000"), "");
  ASSERT_EQ(::kill(helper, SIGSTOP), 0);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c->Exec(kQueries[0], &got), sqlstate::kQueryCanceled);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 10) << "the timeout did not end the wait for the frozen helper";
  ASSERT_EQ(::kill(helper, SIGCONT), 0);
  ASSERT_EQ(c->Exec("SET statement_timeout = 0"), "");
  ASSERT_EQ(c->Exec(kQueries[0], &got), "");
  EXPECT_EQ(Text(got), Text(want));
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

// A join on a foreign key that leads the other table's key runs one part per segment on the
// node owning it; the answers are the master's, also while segments move between nodes.
TEST(PartitionedJoins, PartsRunOnTheOwnersAndAnswerAsTheMasterWould) {
  MiniClusterOptions o;
  o.nodes = 3;
  o.segment_bytes = 16 << 10;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE ord (ok BIGINT PRIMARY KEY, prio TEXT, day INT)"), "");
  ASSERT_EQ(
      c->Exec("CREATE TABLE li (ok BIGINT, ln INT, price NUMERIC(12,2), PRIMARY KEY (ok, ln))"),
      "");
  ASSERT_EQ(
      c->Exec("INSERT INTO ord SELECT i, 'p' || (i % 5), i % 365 FROM generate_series(1, 1500) i"),
      "");
  ASSERT_EQ(c->Exec("INSERT INTO li SELECT i / 4 + 1, i % 4, (i % 97) * 1.25 FROM "
                    "generate_series(0, 5999) i"),
            "");
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'li'", "3", 30000));
  // EXPLAIN ANALYZE below checks that parts ran on every owner: start once the load's splits
  // and moves are over (under a concurrent test load, a run during them listed two owners).
  WaitSettled(*c);
  const char* q =
      "SELECT prio, count(*), sum(price), min(li.ok) FROM li JOIN ord ON li.ok = ord.ok WHERE day "
      "< 200 "
      "GROUP BY prio ORDER BY prio";
  Rows want, got, plan;
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = off"), "");
  ASSERT_EQ(c->Exec(q, &want), "");
  ASSERT_EQ(want.size(), 5u);
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = on"), "");
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ANALYZE ") + q, &plan), "");
  std::string text = Text(plan);
  EXPECT_NE(text.find("Partition per segment of li on [#0]"), std::string::npos) << text;
  for (const char* node : {"n1: rows=", "n2: rows=", "n3: rows="}) {
    EXPECT_NE(text.find(node), std::string::npos) << text;  // parts ran on every owner
  }
  EXPECT_EQ(text.find("not collected"), std::string::npos)
      << text;  // the scans below the parts' Exchanges too
  ASSERT_EQ(c->Exec(q, &got), "");
  EXPECT_EQ(Text(got), Text(want));
  // The join key range of a query narrows the parts.
  Rows narrow_want, narrow_got;
  std::string narrow =
      "SELECT count(*), sum(price) FROM li JOIN ord ON li.ok = ord.ok WHERE li.ok BETWEEN 300 AND "
      "700";
  ASSERT_EQ(c->Exec(narrow, &narrow_got), "");
  ASSERT_EQ(c->Exec("SET wattdb_partition_joins = off"), "");
  ASSERT_EQ(c->Exec(narrow, &narrow_want), "");
  EXPECT_EQ(Text(narrow_got), Text(narrow_want));
  EXPECT_EQ(narrow_want[0][0], "1604");
  ASSERT_EQ(c->Exec(q, &got), "");
  EXPECT_EQ(Text(got), Text(want));
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ") + q, &plan), "");
  EXPECT_EQ(Text(plan).find("Partition"), std::string::npos) << Text(plan);
  ASSERT_EQ(c->Exec("SET wattdb_partition_joins = on"), "");
  // Inside a transaction the parts see its own writes, on both sides of the join.
  const char* mine =
      "SELECT count(*), sum(price) FROM li JOIN ord ON li.ok = ord.ok WHERE ord.prio = 'mine'";
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("INSERT INTO ord VALUES (5000, 'mine', 1)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO li VALUES (5000, 1, 10.50), (5000, 2, 4.25)"), "");
  ASSERT_EQ(c->Exec("UPDATE li SET price = 100 WHERE ok = 1 AND ln = 1"), "");
  ASSERT_EQ(c->Exec("UPDATE ord SET prio = 'mine' WHERE ok = 1"), "");
  Rows in_txn;
  ASSERT_EQ(c->Exec(mine, &in_txn), "");
  // Order 1: lines 0..3 at 0, 100 (updated), 2.50, 3.75; order 5000: 10.50 and 4.25.
  EXPECT_EQ(Text(in_txn), "6|121.00|\n");
  ASSERT_EQ(c->Exec("ROLLBACK"), "");
  ASSERT_EQ(c->Exec(mine, &in_txn), "");
  EXPECT_EQ(Text(in_txn), "0|NULL|\n");

  // Segments of both tables move between nodes while the join runs again and again: a part
  // whose segment moved away runs on the master; the answer never changes.
  std::atomic<bool> stop{false};
  std::atomic<int> moves{0};
  std::thread mover([&] {
    auto admin = cluster.Connect();
    for (int i = 0; !stop; i++) {
      Rows segs;
      if (admin->Exec("SELECT table_name, segment_id FROM wattdb_segments WHERE table_name IN "
                      "('li', 'ord')",
                      &segs) != "" ||
          segs.empty()) {
        continue;
      }
      const auto& seg = segs[i % segs.size()];
      if (admin
              ->Exec(fmt::format("ALTER TABLE {} MOVE SEGMENT {} TO NODE {}", seg[0], seg[1],
                                 1 + i % 3))
              .empty()) {
        moves++;
      }
    }
  });
  int runs = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       std::chrono::steady_clock::now() < deadline; runs++) {
    std::string msg;
    ASSERT_EQ(c->Exec(q, &got, &msg), "") << msg;
    ASSERT_EQ(Text(got), Text(want)) << "run " << runs;
  }
  stop = true;
  mover.join();
  EXPECT_GT(runs, 3);
  EXPECT_GT(moves.load(), 3);
}

}  // namespace
}  // namespace wattdb::testing
