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
      sql += fmt::format("{}({}, 0, 'padding padding padding padding {}')", i == start ? "" : ",",
                         i, i);
    }
    std::string msg;
    ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_partitions WHERE table_name = 't'",
                              std::to_string(nodes), 30000));
}

// `UPDATE t SET v = v + 1` over both nodes while `failpoint` is armed (the first node to reach
// it dies; the decision is logged: the statement is committed). Restarts that node.
void UpdateWhileAParticipantCrashes(
    MiniCluster& cluster, PgConn& c,
    const std::string& failpoint = "node.before_distributed_commit") {
  cluster.ArmFailpoint(failpoint);
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

// Nodes apply a distributed commit without a sync (the logged decision covers it) and the
// master keeps the decision until each node's log is synced past it. Every decision is
// confirmed and forgotten in the end: after plain commits, and after a participant that
// died right after applying its commit (its reply lost) is back.
TEST(Recovery, EveryCommitDecisionIsConfirmedOnceItsParticipantsAreDurable) {
  MiniCluster cluster(MiniClusterOptions{2, 4096, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  LoadSpread(cluster, *c, 2000, 2);
  const std::string open = "SELECT sum(unconfirmed_commits) FROM wattdb_nodes";
  std::string msg;
  for (int i = 0; i < 5; i++)
    ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1", nullptr, &msg), "") << msg;
  EXPECT_TRUE(cluster.WaitFor(open, "0", 30000));

  ASSERT_NO_FATAL_FAILURE(UpdateWhileAParticipantCrashes(cluster, *c, "node.after_commit_applied"));
  EXPECT_TRUE(cluster.WaitFor(open, "0", 30000))
      << "a decision was never confirmed by the restarted node";
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), "12000");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE v = 6"), "2000");
}

}  // namespace
}  // namespace wattdb::testing
