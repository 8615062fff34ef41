// Plan fragments on real nodes: filters, projections and partial aggregations run where the
// segments are, their column batches stream back through the exchange, and the answers are
// those of the plan run on the master -- also while segments move and split under the scans.
#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Rows = std::vector<std::vector<std::string>>;

const char* kQueries[] = {
    "SELECT count(*), sum(v), avg(v), min(note), max(d) FROM t",
    // Double sums are rounded: partial sums added in another order differ in the last bits.
    ("SELECT g, count(*), round(sum(d)::numeric, 6), avg(v) FROM t WHERE v % 5 <> 1 GROUP BY g "
     "ORDER BY g"),
    "SELECT id, v * 2 FROM t WHERE d > 1900 ORDER BY id",
    "SELECT count(*) FROM t WHERE id BETWEEN 100 AND 299",
    "SELECT g, max(note) FROM t GROUP BY g HAVING count(*) > 10 ORDER BY 2 DESC LIMIT 3",
};

// Three nodes and 16 KiB segments: a few thousand rows span many segments on every node.
MiniClusterOptions SmallSegments() {
  MiniClusterOptions o;
  o.nodes = 3;
  o.segment_bytes = 16 << 10;
  return o;
}

constexpr const char* kCreateTable =
    "CREATE TABLE t (id INT PRIMARY KEY, g INT, v BIGINT, d DOUBLE PRECISION, note TEXT)";

TEST(Fragments, NodesRunThemAndAnswerAsTheMasterWould) {
  MiniCluster cluster(SmallSegments());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec(kCreateTable), "");
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT i, i % 7, i * 3, i / 1.5, 'n' || (i % 100) FROM "
                    "generate_series(1, 3000) i"),
            "");
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 't'", "3", 30000));
  Rows plan;
  ASSERT_EQ(c->Exec("EXPLAIN SELECT g, sum(v) FROM t WHERE d > 10 GROUP BY g", &plan), "");
  std::string text;
  for (auto& r : plan) text += r[0] + "\n";
  EXPECT_NE(text.find("FinalAggregate"), std::string::npos) << text;
  // Above the exchange: the master, or a helper node when the master is busy (wattdb_offload).
  EXPECT_NE(text.find("Exchange  (on master or a helper node)"), std::string::npos) << text;
  EXPECT_NE(text.find("PartialAggregate groups=[#1] aggs=[sum(#2)]  (on nodes 1,2,3;"),
            std::string::npos)
      << text;
  // EXPLAIN ANALYZE: each node's rows and time for the operators it ran, over its segments.
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT g, sum(v) FROM t WHERE d > 10 GROUP BY g", &plan), "");
  text.clear();
  for (auto& r : plan) text += r[0] + "\n";
  EXPECT_NE(text.find("FinalAggregate groups=[#0] aggs=[sum(#2)]  (on master) (actual rows=7 "),
            std::string::npos)
      << text;
  for (const char* node : {"n1: rows=", "n2: rows=", "n3: rows="}) {
    EXPECT_NE(text.find(node), std::string::npos) << text;
  }
  Rows scanned;
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT count(*) FROM t", &scanned), "");
  int64_t rows = 0;  // the scan's rows, summed over the nodes
  for (auto& r : scanned) {
    if (r[0].find("Scan t") == std::string::npos) continue;
    for (size_t at = r[0].find("rows=", r[0].find("actual")); at != std::string::npos;
         at = r[0].find("rows=", at + 1)) {
      rows += std::stoll(r[0].substr(at + 5));
    }
  }
  EXPECT_EQ(rows, 3000);
  for (const char* q : kQueries) {
    Rows pushed, whole;
    ASSERT_EQ(c->Exec(q, &pushed), "") << q;
    ASSERT_EQ(c->Exec("SET wattdb_pushdown = off"), "");
    ASSERT_EQ(c->Exec(q, &whole), "") << q;
    EXPECT_EQ(pushed, whole) << q;
    EXPECT_FALSE(pushed.empty()) << q;
    // Only filters and projections on the nodes; and segments read one at a time, unbuffered.
    for (const char* mode : {"SET wattdb_pushdown = scan", "SET wattdb_exchange_prefetch = off",
                             "SET wattdb_pushdown = on"}) {
      ASSERT_EQ(c->Exec(mode), "");
      Rows other;
      ASSERT_EQ(c->Exec(q, &other), "") << q;
      EXPECT_EQ(other, whole) << q << " after " << mode;
    }
    ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = on"), "");
  }
  // Only filters and projections on the nodes: every row crosses, and the master aggregates
  // each segment's rows apart on its threads, several segments at once, then merges.
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = scan"), "");
  ASSERT_EQ(c->Exec("EXPLAIN SELECT g, sum(v) FROM t WHERE d > 10 GROUP BY g", &plan), "");
  text.clear();
  for (auto& r : plan) text += r[0] + "\n";
  EXPECT_NE(text.find("Gather per segment of t  (on master)"), std::string::npos) << text;
  EXPECT_NE(
      text.find(
          "PartialAggregate groups=[#1] aggs=[sum(#2)]  (on master, up to 4 segments at once)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("Filter (#3 > 10)  (rows=1000)  (on nodes 1,2,3;"), std::string::npos)
      << text;
  // Without read-ahead the parts run in place, one segment at a time, on the statement's thread.
  ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = off"), "");
  ASSERT_EQ(c->Exec("EXPLAIN SELECT g, sum(v) FROM t WHERE d > 10 GROUP BY g", &plan), "");
  text.clear();
  for (auto& r : plan) text += r[0] + "\n";
  EXPECT_NE(text.find("PartialAggregate groups=[#1] aggs=[sum(#2)]  (on master)\n"),
            std::string::npos)
      << text;
  ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = on"), "");
  // EXPLAIN ANALYZE: the partial aggregates' rows summed over the segments (each segment's
  // groups apart: more than the 7 groups), the nodes' scans over all rows.
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT g, sum(v) FROM t GROUP BY g", &plan), "");
  int64_t partial_rows = -1, scan_rows = 0;
  text.clear();
  for (auto& r : plan) {
    text += r[0] + "\n";
    if (r[0].find("PartialAggregate") != std::string::npos &&
        r[0].find("(actual rows=") != std::string::npos) {
      partial_rows = std::stoll(r[0].substr(r[0].find("(actual rows=") + 13));
    }
    if (r[0].find("Scan t") == std::string::npos) continue;
    for (size_t at = r[0].find("rows=", r[0].find("actual")); at != std::string::npos;
         at = r[0].find("rows=", at + 1)) {
      scan_rows += std::stoll(r[0].substr(at + 5));
    }
  }
  int segments =
      std::stoi(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 't'"));
  EXPECT_GT(partial_rows, 7) << text;
  EXPECT_LE(partial_rows, 7 * segments) << text;
  EXPECT_EQ(scan_rows, 3000) << text;
  EXPECT_NE(text.find("FinalAggregate groups=[#0] aggs=[sum(#2)]  (on master) (actual rows=7 "),
            std::string::npos)
      << text;
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = on"), "");
  std::string msg;
  EXPECT_EQ(c->Exec("SET wattdb_pushdown = maybe", nullptr, &msg), sqlstate::kInvalidParameterValue)
      << msg;
  EXPECT_EQ(c->Exec("SET wattdb_exchange_prefetch = scan", nullptr, &msg),
            sqlstate::kInvalidParameterValue)
      << msg;
  EXPECT_EQ(c->Scalar("SHOW wattdb_exchange_prefetch"), "on");
  // A transaction's own writes are in what the nodes read for it.
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("DELETE FROM t WHERE id <= 1000"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "2000");
  ASSERT_EQ(c->Exec("ROLLBACK"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "3000");
}

// `nodes` node processes and 256 KiB segments holding t's 30,000 rows (several segments of
// several batches each); every row's columns cross as batches (wattdb_pushdown = scan).
MiniClusterOptions StreamingScans(int nodes, int metrics_port) {
  MiniClusterOptions o;
  o.nodes = nodes;
  o.segment_bytes = 1 << 20;  // segments of several batches: a stream sends some before its last
  o.extra_toml = fmt::format("[power]\nmetrics_port = {}\n", metrics_port);
  return o;
}

constexpr int kStreamRows = 120000;
constexpr const char* kStreamScan = "SELECT id, note FROM t";

void LoadStreamingScans(MiniCluster& cluster, PgConn& c) {
  ASSERT_EQ(c.Exec(kCreateTable), "");
  ASSERT_EQ(
      c.Exec(fmt::format(
          "INSERT INTO t SELECT i, i % 7, i, i, repeat('n', 40) || i FROM generate_series(1, {}) i",
          kStreamRows)),
      "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) >= 4 FROM wattdb_segments WHERE table_name = 't'",
                              "t", 30000));
  ASSERT_EQ(c.Exec("SET wattdb_pushdown = scan"), "");
}

// The rows of kStreamScan: whole and in key order.
void ExpectStreamedRows(const Rows& rows) {
  ASSERT_EQ(rows.size(), static_cast<size_t>(kStreamRows));
  for (size_t i = 0; i < rows.size(); i++) {
    ASSERT_EQ(rows[i][0], std::to_string(i + 1)) << "row " << i;
    ASSERT_EQ(rows[i][1], std::string(40, 'n') + std::to_string(i + 1)) << "row " << i;
  }
}

double StreamsTakenOver(int metrics_port) {
  int status = 0;
  std::string text = HttpGet(metrics_port, "/metrics", &status);
  return status == 0 ? MetricValue(text, "wattdb_exchange_streams_taken_over_total") : -1.0;
}

// A streaming fragment over segments of many batches each, with the prefetch buffer: once
// a segment is the one the master reads, the master takes its stream over from the producer
// (wattdb_exchange_streams_taken_over_total), and the rows still come whole and in key order.
TEST(Fragments, TheSegmentAtHandIsReadOffItsStreamInKeyOrder) {
  int port = FreeTcpPort();
  MiniCluster cluster(StreamingScans(2, port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(LoadStreamingScans(cluster, *c));
  const double before = StreamsTakenOver(port);
  ASSERT_GE(before, 0);
  for (int run = 0; run < 3; run++) {
    Rows rows;
    ASSERT_EQ(c->Exec(kStreamScan, &rows), "");
    ASSERT_NO_FATAL_FAILURE(ExpectStreamedRows(rows));
  }
  EXPECT_GT(StreamsTakenOver(port), before);
  // Without the buffer, one segment at a time: nothing to take over, the same rows.
  ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = off"), "");
  const double without = StreamsTakenOver(port);
  EXPECT_EQ(c->Scalar("SELECT count(*) || '/' || sum(length(note)) FROM t"),
            c->Scalar("SELECT count(*) || '/' || sum(length(note)) FROM t WHERE id > 0"));
  EXPECT_EQ(StreamsTakenOver(port), without);
}

// The node that `query` reads dies (-9 at a failpoint, right after sending a batch), or
// freezes there (SIGSTOP): the statement ends -- with its answer (`expect`), or with an error
// a client retries; a frozen node holds it no longer than its statement_timeout -- and once
// the node is back, the same query answers.
void DieAndFreezeDuring(MiniCluster& cluster, PgConn& c, const char* query,
                        const std::function<void(const Rows&)>& expect) {
  Rows rows;
  std::string msg;
  cluster.ArmFailpoint("node.scan.after_batch");
  std::string st = c.Exec(query, &rows, &msg);
  if (st.empty()) {
    ASSERT_NO_FATAL_FAILURE(expect(rows));
  } else {
    EXPECT_TRUE(st == sqlstate::kCannotConnectNow || st == sqlstate::kIoError) << st << " " << msg;
  }
  int restarted = 0;
  for (int i = 0; i < 250 && restarted == 0; i++) {
    restarted = cluster.RestartDeadNodes();
    if (!restarted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(restarted, 1) << "the node did not die at the failpoint";
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  ASSERT_EQ(c.Exec(query, &rows, &msg), "") << msg;
  ASSERT_NO_FATAL_FAILURE(expect(rows));

  // The timeout ends the statement well before the frozen node's silence (3 s from its last
  // heartbeat, 10 telemetry intervals) has it declared down (57P03).
  cluster.ArmFailpoint("node.scan.after_batch stop");
  ASSERT_EQ(c.Exec("SET statement_timeout = 1000"), "");
  auto t0 = std::chrono::steady_clock::now();
  st = c.Exec(query, &rows, &msg);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(st, sqlstate::kQueryCanceled)
      << msg << " after " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
      << " ms";
  EXPECT_LT(took, std::chrono::seconds(15));
  ASSERT_GT(cluster.NodePid(1), 0);
  kill(cluster.NodePid(1), SIGCONT);
  ASSERT_EQ(c.Exec("SET statement_timeout = 0"), "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  ASSERT_EQ(c.Exec(query, &rows, &msg), "") << msg;
  ASSERT_NO_FATAL_FAILURE(expect(rows));
}

// A stream the master took over from its producer.
TEST(Fragments, AStreamTakenOverEndsWhenItsNodeDiesOrFreezes) {
  int port = FreeTcpPort();
  MiniCluster cluster(StreamingScans(1, port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(LoadStreamingScans(cluster, *c));
  const double before = StreamsTakenOver(port);
  ASSERT_NO_FATAL_FAILURE(DieAndFreezeDuring(cluster, *c, kStreamScan, ExpectStreamedRows));
  EXPECT_GT(StreamsTakenOver(port), before);
}

// An aggregation whose segments' rows the master's threads aggregate apart (a Gather): a part
// that fails fails the statement, the other parts stop, and none of them outlives it.
TEST(Fragments, AGatheredAggregateEndsWhenItsNodeDiesOrFreezes) {
  MiniClusterOptions opts = StreamingScans(1, FreeTcpPort());
  opts.cluster_toml = "scan_frame_kb = 32";  // frames of a few of table d's batches (below)
  MiniCluster cluster(opts);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(LoadStreamingScans(cluster, *c));
  const char* query = "SELECT g, count(*), sum(id), max(note) FROM t GROUP BY g ORDER BY g";
  Rows plan;
  ASSERT_EQ(c->Exec(std::string("EXPLAIN ") + query, &plan), "");
  ASSERT_NE(plan.size(), 0u);
  bool gathered = false;
  for (auto& r : plan)
    gathered = gathered || r[0].find("Gather per segment of t") != std::string::npos;
  ASSERT_TRUE(gathered);
  ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = off"), "");
  Rows whole;  // one segment at a time, aggregated in place
  ASSERT_EQ(c->Exec(query, &whole), "");
  ASSERT_EQ(whole.size(), 7u);
  ASSERT_EQ(c->Exec("SET wattdb_exchange_prefetch = on"), "");
  ASSERT_NO_FATAL_FAILURE(
      DieAndFreezeDuring(cluster, *c, query, [&](const Rows& rows) { EXPECT_EQ(rows, whole); }));
  // A text column of few values, most batches one value: it crosses as dictionaries (one
  // without codes), the master groups and measures it on the codes and lays its texts out
  // only for the answer; the node's connection is a local socket, its frames without a MAC.
  // Each 4,096-row batch of r takes about 12 KiB: a frame carries several batches, a segment
  // several frames, and the node dies (or freezes) between two of them.
  ASSERT_EQ(c->Exec("CREATE TABLE d (id INT PRIMARY KEY, tag TEXT, r INT)"), "");
  ASSERT_EQ(
      c->Exec(fmt::format("INSERT INTO d SELECT i, 'tag ' || (i / 40000), (i * 7919) % 1000003 "
                          "FROM generate_series(1, {}) i",
                          kStreamRows)),
      "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) >= 2 FROM wattdb_segments WHERE table_name = 'd'",
                              "t", 30000));
  const char* tags =
      "SELECT tag, count(*), max(length(tag)), sum(r) FROM d GROUP BY tag ORDER BY tag";
  int64_t sums[4] = {0, 0, 0, 0};
  for (int64_t i = 1; i <= kStreamRows; i++) sums[i / 40000] += (i * 7919) % 1000003;
  const Rows want = {{"tag 0", "39999", "5", std::to_string(sums[0])},
                     {"tag 1", "40000", "5", std::to_string(sums[1])},
                     {"tag 2", "40000", "5", std::to_string(sums[2])},
                     {"tag 3", "1", "5", std::to_string(sums[3])}};
  ASSERT_EQ(c->Exec(tags, &whole), "");
  ASSERT_EQ(whole, want);
  ASSERT_NO_FATAL_FAILURE(
      DieAndFreezeDuring(cluster, *c, tags, [&](const Rows& rows) { EXPECT_EQ(rows, want); }));
}

TEST(Fragments, ScansAndAggregatesStayExactWhileSegmentsMoveAndSplit) {
  MiniCluster cluster(SmallSegments());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec(kCreateTable), "");
  ASSERT_EQ(
      c->Exec(
          "INSERT INTO t SELECT i, i % 7, i, i, repeat('x', 50) FROM generate_series(1, 4000) i"),
      "");
  const std::string count = c->Scalar("SELECT count(*) FROM t WHERE v % 3 = 0");
  const std::string sums = c->Scalar("SELECT sum(v) || '/' || count(*) FROM t");
  ASSERT_EQ(sums, "8002000/4000");
  std::atomic<bool> stop{false};
  std::atomic<int> moves{0};
  std::thread mover([&] {
    auto admin = cluster.Connect();
    std::mt19937 rng(5);
    while (!stop) {
      Rows segs;
      if (admin->Exec("SELECT segment_id FROM wattdb_segments WHERE table_name = 't'", &segs) !=
              "" ||
          segs.empty())
        continue;
      std::string st = admin->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}",
                                               segs[rng() % segs.size()][0], 1 + rng() % 3));
      if (st.empty()) moves++;
    }
  });
  std::thread writer([&] {  // inserts beyond the checked range make segments split
    auto w = cluster.Connect();
    for (int i = 0; !stop; i++)
      w->Exec(fmt::format("INSERT INTO t VALUES ({}, 0, 0, 0, repeat('y', 200))", 100000 + i));
  });
  int checked = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
       std::chrono::steady_clock::now() < deadline;) {
    std::string msg;
    Rows r;
    // Aggregated on the nodes, or on the master's threads a segment at a time (a Gather).
    ASSERT_EQ(c->Exec(checked % 2 ? "SET wattdb_pushdown = scan" : "SET wattdb_pushdown = on"), "");
    std::string st = c->Exec("SELECT sum(v) || '/' || count(*) FROM t WHERE id <= 4000", &r, &msg);
    if (st.empty()) {
      EXPECT_EQ(r[0][0], sums);
      checked++;
    } else {
      EXPECT_TRUE(st == sqlstate::kObjectInUse || st == sqlstate::kCannotConnectNow)
          << st << " " << msg;  // busy or away: retried by clients
    }
    st = c->Exec("SELECT count(*) FROM (SELECT id FROM t WHERE v % 3 = 0 AND id <= 4000) s", &r,
                 &msg);
    if (st.empty()) {
      EXPECT_EQ(r[0][0], count);
    }
  }
  stop = true;
  mover.join();
  writer.join();
  EXPECT_GT(checked, 5);
  EXPECT_GT(moves.load(), 3);
  EXPECT_GT(std::stoi(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 't'")), 3);
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

// Kills node 1 (-9), waits for the master to start it again (manage_nodes) and for it to be up.
void KillNodeAndAwaitItsReturn(MiniCluster& cluster) {
  pid_t pid = cluster.NodePid(1);
  ASSERT_GT(pid, 0);
  kill(pid, SIGKILL);
  for (int i = 0; i < 300 && (cluster.NodePid(1) == 0 || cluster.NodePid(1) == pid); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
}

// Column images (the clusters here build them on every whole-segment scan) are a cache of
// committed rows: a write acknowledged just before the node is killed (-9) is in the answer of
// the restarted node, and a node frozen (SIGSTOP) with images in memory answers, once resumed,
// with the writes committed before it froze and none lost after.
TEST(Fragments, ColumnImagesNeverHideAnAcknowledgedWriteAcrossAKillOrAFreeze) {
  MiniClusterOptions o;
  o.nodes = 1;
  o.segment_bytes = 16 << 10;
  o.manage_nodes = true;  // the master restarts the killed node
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec(kCreateTable), "");
  ASSERT_EQ(c->Exec("INSERT INTO t SELECT i, i % 7, i, i, 'n' FROM generate_series(1, 2000) i"),
            "");
  const char* sum = "SELECT count(*), sum(v) FROM t";  // a partial aggregate on the node: images
  const char* count = "SELECT count(*) FROM t";
  Rows rows;
  ASSERT_EQ(c->Exec(sum, &rows), "");
  ASSERT_EQ(rows[0][0], "2000");
  ASSERT_EQ(rows[0][1], "2001000");

  ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1"), "");  // acknowledged: every image is stale now
  ASSERT_NO_FATAL_FAILURE(KillNodeAndAwaitItsReturn(cluster));
  ASSERT_TRUE(cluster.WaitFor(count, "2000", 30000));
  ASSERT_EQ(c->Exec(sum, &rows), "");
  EXPECT_EQ(rows[0][1], "2003000");  // the restarted node's fresh images include the update

  ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1 WHERE id <= 1000"), "");
  ASSERT_EQ(c->Exec(sum, &rows), "");
  EXPECT_EQ(rows[0][1], "2004000");
  pid_t pid = cluster.NodePid(1);
  kill(pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // frozen with its images
  kill(pid, SIGCONT);
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  ASSERT_TRUE(cluster.WaitFor(count, "2000", 30000));
  ASSERT_EQ(c->Exec("DELETE FROM t WHERE id > 1990"), "");
  ASSERT_EQ(c->Exec(sum, &rows), "");
  EXPECT_EQ(rows[0][0], "1990");
  EXPECT_EQ(rows[0][1], std::to_string(2004000 - (1991 + 1992 + 1993 + 1994 + 1995 + 1996 + 1997 +
                                                  1998 + 1999 + 2000 + 10)));
}

// The same through the exchange (`wattdb_pushdown = scan`), where whole image batches go out
// with their kept encodings (packed keys and values, a flag column's dictionary codes) and the
// master groups by the codes and counts length() per value: an acknowledged update is in the
// answer after the node is killed (-9) and restarted, and a scan running while the node is
// frozen (SIGSTOP) answers in full or fails, never with rows missing; none is lost after.
TEST(Fragments, ShippedImageBatchesNeverHideAnAcknowledgedWriteAcrossAKillOrAFreeze) {
  MiniClusterOptions o;
  o.nodes = 1;
  o.segment_bytes = 16 << 10;
  o.manage_nodes = true;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE s (id INT PRIMARY KEY, v INT, f TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO s SELECT i, i, chr(97 + i % 3) FROM generate_series(1, 3000) i"),
            "");
  std::map<int, std::pair<int64_t, std::string>> model;  // id -> (v, f)
  for (int i = 1; i <= 3000; i++) model[i] = {i, std::string(1, static_cast<char>('a' + i % 3))};
  const char* query = "SELECT f, count(*), sum(v), max(length(f)) FROM s GROUP BY f ORDER BY f";
  auto expected = [&] {
    std::map<std::string, std::pair<int64_t, int64_t>> groups;
    for (const auto& [id, row] : model) {
      groups[row.second].first++;
      groups[row.second].second += row.first;
    }
    Rows want;
    for (const auto& [f, g] : groups) {
      want.push_back(
          {f, std::to_string(g.first), std::to_string(g.second), std::to_string(f.size())});
    }
    return want;
  };
  auto check = [&](PgConn& conn, const char* when) {
    ASSERT_EQ(conn.Exec("SET wattdb_pushdown = scan"), "");
    for (int run = 0; run < 2;
         run++) {  // the first whole scan builds the images, the second reads them
      Rows rows;
      ASSERT_EQ(conn.Exec(query, &rows), "") << when;
      EXPECT_EQ(rows, expected()) << when << ", run " << run;
    }
  };
  check(*c, "loaded");

  ASSERT_EQ(c->Exec("UPDATE s SET v = v + 1, f = 'dd' WHERE id % 10 = 0"), "");  // acknowledged
  for (auto& [id, row] : model) {
    if (id % 10 == 0) row = {row.first + 1, "dd"};
  }
  ASSERT_NO_FATAL_FAILURE(KillNodeAndAwaitItsReturn(cluster));
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM s", "3000", 30000));
  check(*c, "after the kill");

  ASSERT_EQ(c->Exec("UPDATE s SET v = v + 2 WHERE id <= 1500"), "");
  for (auto& [id, row] : model) {
    if (id <= 1500) row.first += 2;
  }
  check(*c, "after an update kept in the images");
  pid_t pid = cluster.NodePid(1);
  std::atomic<bool> scanned{false};
  std::string scan_error;
  Rows during;
  std::thread reader([&] {
    auto r = cluster.Connect();
    r->Exec("SET wattdb_pushdown = scan");
    scan_error = r->Exec(query, &during);
    scanned = true;
  });
  kill(pid, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // frozen with its images, mid-scan
  kill(pid, SIGCONT);
  reader.join();
  ASSERT_TRUE(scanned.load());
  if (scan_error.empty()) {
    EXPECT_EQ(during, expected()) << "a scan across the freeze";
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  ASSERT_EQ(c->Exec("DELETE FROM s WHERE id > 2990"), "");
  for (int id = 2991; id <= 3000; id++) model.erase(id);
  check(*c, "after the freeze and a delete");
}

}  // namespace
}  // namespace wattdb::testing
