// Crash recovery on real processes, driven by failpoints (common/failpoint.h).
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

// Creates t(id, v) with `n` rows and waits until its segments sit on `nodes` nodes.
void LoadSpread(MiniCluster& cluster, PgConn& c, int n, int nodes) {
  ASSERT_EQ(c.Exec("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  for (int start = 0; start < n; start += 200) {
    std::string sql = "INSERT INTO t VALUES ";
    for (int i = start; i < start + 200 && i < n; i++) {
      sql += fmt::format("{}({}, 0, 'padding padding padding padding {}')", i == start ? "" : ",", i, i);
    }
    std::string msg;
    ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_partitions WHERE table_name = 't'",
                              std::to_string(nodes), 30000));
}

// `UPDATE t SET v = v + 1` over both nodes; the first node to receive Commit dies before
// applying it (the decision is logged: the statement is committed). Restarts that node.
void UpdateWhileAParticipantCrashes(MiniCluster& cluster, PgConn& c) {
  cluster.ArmFailpoint("node.before_distributed_commit");
  std::string msg;
  ASSERT_EQ(c.Exec("UPDATE t SET v = v + 1", nullptr, &msg), "") << msg;
  int restarted = 0;
  for (int i = 0; i < 100 && restarted == 0; i++) {
    restarted = cluster.RestartDeadNodes();
    if (!restarted) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(restarted, 1) << "exactly one participant should have crashed";
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "2", 30000));
}

// A participant that crashes before applying a decided commit learns the decision when it
// is back (it reports the transaction in doubt). Once COMMIT succeeded, every later snapshot
// sees the whole transaction, even there: its readers wait until the transaction is
// resolved instead of reading past it. (Before, a reader saw half the UPDATE, and a later
// UPDATE of the same rows overwrote the committed one: a lost update.)
TEST(Recovery, LaterSnapshotsSeeACommitThatACrashedParticipantHasNotApplied) {
  MiniCluster cluster(MiniClusterOptions{2, 4096, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  LoadSpread(cluster, *c, 2000, 2);
  ASSERT_NO_FATAL_FAILURE(UpdateWhileAParticipantCrashes(cluster, *c));
  std::string msg;
  // Reads right after the restart: each either fails or sees all 2000 increments.
  int served = 0;
  for (int i = 0; i < 20; i++) {
    std::vector<std::vector<std::string>> rows;
    if (c->Exec("SELECT sum(v) FROM t", &rows, &msg) != "") continue;
    served++;
    EXPECT_EQ(rows[0][0], "2000") << "read " << i << " saw part of a committed UPDATE";
  }
  EXPECT_GT(served, 0);
  // A second UPDATE of the same rows builds on the first.
  std::string st;
  for (int i = 0; i < 50; i++) {
    st = c->Exec("UPDATE t SET v = v + 1", nullptr, &msg);
    if (st.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(st, "") << msg;
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), "4000");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE v = 2"), "2000");
}

TEST(Recovery, MoveInterruptedByMasterCrashIsRolledBackAfterRestart) {
  // No balancing: the move under test must be the only one.
  MiniCluster cluster(MiniClusterOptions{2, 4096, 200, /*balance=*/false});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  LoadSpread(cluster, *c, 2000, 1);
  std::vector<std::vector<std::string>> seg;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 't' "
                    "ORDER BY segment_id LIMIT 1", &seg), "");
  std::string id = seg[0][0];
  int to = 3 - std::stoi(seg[0][1]);

  // The master dies after the target imported the segment, before switching ownership.
  cluster.ArmFailpoint("master.move.after_pull");
  EXPECT_NE(c->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}", id, to)), "");
  for (int i = 0; i < 100 && cluster.MasterAlive(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(cluster.MasterAlive());
  c.reset();
  ASSERT_TRUE(cluster.StartMaster());
  // The ownership switch was never logged, and the source may take writes after the
  // restart, so the target's copy is stale: the move is rolled back and that copy dropped.
  c = cluster.Connect();
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "2", 30000));
  std::string msg;
  ASSERT_EQ(c->Exec("UPDATE t SET v = 5 WHERE id = 0", nullptr, &msg), "") << msg;
  EXPECT_TRUE(cluster.WaitFor(fmt::format("SELECT node_id FROM wattdb_segments WHERE segment_id = {}", id),
                              seg[0][1], 30000));
  EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 0"), "5");
  // A move started afresh works and carries the write made after the restart.
  ASSERT_EQ(c->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}", id, to), nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar(fmt::format("SELECT node_id FROM wattdb_segments WHERE segment_id = {}", id)),
            std::to_string(to));
  EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 0"), "5");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "2000");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE id >= 0 AND id < 2000"), "2000");
  ASSERT_EQ(c->Exec("UPDATE t SET v = 7 WHERE id = 0", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 0"), "7");
}

// The master dies right after the node split a segment, before recording the split: the
// logged intent makes the restarted master look for the new segment and record it, so the
// upper half of the key range stays readable and writable. Dying before the node split
// leaves one segment, as before.
TEST(Recovery, SplitInterruptedByMasterCrashIsSettledAfterRestart) {
  for (const char* fp : {"master.split.after_node_split", "master.split.after_intent"}) {
    SCOPED_TRACE(fp);
    MiniCluster cluster(MiniClusterOptions{1, 1 << 20, 200, /*balance=*/false});
    ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
    auto c = cluster.Connect();
    LoadSpread(cluster, *c, 2000, 1);
    ASSERT_EQ(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 't'"), "1");
    c.reset();
    // Restart with small segments: the first maintenance pass splits, and dies.
    cluster.StopMaster();
    cluster.ArmFailpoint(fp);
    std::string toml = cluster.dir() + "/cluster.toml";
    std::string out;
    ASSERT_EQ(RunCommand("sed -i 's/^segment_bytes = .*/segment_bytes = 4096/' " + toml, &out), 0) << out;
    ASSERT_TRUE(cluster.StartMaster());
    for (int i = 0; i < 200 && cluster.MasterAlive(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    ASSERT_FALSE(cluster.MasterAlive()) << "the failpoint was not reached";
    ASSERT_TRUE(cluster.StartMaster());
    c = cluster.Connect();
    EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM t WHERE id >= 1000", "1000", 30000));
    EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "2000");
    std::string msg;
    ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1", nullptr, &msg), "") << msg;
    EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), "2000");
    // Split (again, after a rollback) by the next maintenance passes.
    EXPECT_TRUE(cluster.WaitFor("SELECT count(*) > 1 FROM wattdb_segments WHERE table_name = 't'", "t", 30000));
  }
}

}  // namespace
}  // namespace wattdb::testing
