// The master node of the paper: a node that lives in the master process (power = "master").
// Its segments are read without a message; everything else about it is a node's.
#include <signal.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

void Load(PgConn& c, int n) {
  ASSERT_EQ(c.Exec("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  for (int start = 0; start < n; start += 250) {
    std::string sql = "INSERT INTO t VALUES ";
    for (int i = start; i < start + 250 && i < n; i++) {
      sql += fmt::format("{}({}, {}, 'padding padding padding padding {}')", i == start ? "" : ",",
                         i, i % 7, i);
    }
    std::string msg;
    ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  }
}

// `nodes` nodes, node 1 in the master process.
MiniClusterOptions WithMasterNode(int nodes) {
  MiniClusterOptions o;
  o.nodes = nodes;
  o.hosted_node = 1;
  return o;
}

// sum(v) of Load's first `n` rows.
int64_t LoadedSum(int n) {
  int64_t sum = 0;
  for (int i = 0; i < n; i++) sum += i % 7;
  return sum;
}

TEST(HostedNode, ServesReadsAndWritesBesideASeparateNode) {
  MiniCluster cluster(WithMasterNode(2));
  ASSERT_TRUE(cluster.Start());
  auto c = cluster.Connect();
  ASSERT_TRUE(c->ok()) << c->error();
  const int n = 3000;
  Load(*c, n);
  // The table splits and spreads: the master holds some of it, node 2 the rest.
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "2", 30000));
  const std::string want_sum = std::to_string(LoadedSum(n));
  // Reads, and a transaction that sees its own writes on both nodes before it commits and
  // nothing after a rollback: with fragments on the nodes (the master node's run in the
  // master's thread) and with every row shipped to the master.
  for (const char* pushdown : {"on", "off"}) {
    ASSERT_EQ(c->Exec(fmt::format("SET wattdb_pushdown = {}", pushdown)), "");
    EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(n)) << pushdown;
    EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), want_sum) << pushdown;
    EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 5"), "5") << pushdown;
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM t WHERE id = {}", n - 1)),
              std::to_string((n - 1) % 7))
        << pushdown;
    ASSERT_EQ(c->Exec("BEGIN"), "");
    ASSERT_EQ(c->Exec("INSERT INTO t VALUES (-1, 100, 'low'), (1000000, 100, 'high')"), "");
    ASSERT_EQ(c->Exec("UPDATE t SET v = 50 WHERE id = 0 OR id = 2999"), "");
    ASSERT_EQ(c->Exec("UPDATE t SET v = 60 WHERE id = 1"), "");
    EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(n + 2)) << pushdown;
    EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t WHERE id IN (-1, 0, 1, 2999, 1000000)"), "360")
        << pushdown;
    EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 1"), "60") << pushdown;
    ASSERT_EQ(c->Exec("ROLLBACK"), "");
    EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(n)) << pushdown;
    EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), want_sum) << pushdown;
  }
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = on"), "");
  // Committed writes through the same path.
  ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1 WHERE id < 10"), "");
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t WHERE id < 10"), "34");  // 0..6 and 0..2, plus 10
  // A statement whose writes to a node exceed what one in-process call carries (64 KiB)
  // sends them over the node's data port instead.
  ASSERT_EQ(c->Exec("UPDATE t SET pad = repeat('y', 300) WHERE id % 2 = 0"), "");
  EXPECT_EQ(c->Scalar("SELECT sum(length(pad)) FROM t WHERE id % 2 = 0"),
            std::to_string(300 * n / 2));
  // Its power follows the master's.
  std::string msg;
  EXPECT_EQ(c->Exec("ALTER NODE 1 POWER OFF", nullptr, &msg), sqlstate::kFeatureNotSupported);
  EXPECT_NE(msg.find("lives in the master process"), std::string::npos) << msg;
  EXPECT_EQ(c->Exec("ALTER NODE 1 SUSPEND", nullptr, &msg), sqlstate::kFeatureNotSupported) << msg;
}

// New tables start in the master node (small tables then share single-node commits there);
// a drained master node sends them elsewhere.
TEST(HostedNode, NewTablesStartInTheMasterNode) {
  MiniCluster cluster(WithMasterNode(3));
  ASSERT_TRUE(cluster.Start());
  auto c = cluster.Connect();
  ASSERT_TRUE(c->ok()) << c->error();
  for (const char* t : {"a", "b", "c"})
    ASSERT_EQ(c->Exec(fmt::format("CREATE TABLE {} (k INT PRIMARY KEY)", t)), "");
  EXPECT_EQ(c->Scalar("SELECT string_agg(DISTINCT node_id::text, ',') FROM wattdb_segments"), "1");
  std::string msg;
  ASSERT_EQ(c->Exec("ALTER NODE 1 DRAIN", nullptr, &msg), "") << msg;
  ASSERT_EQ(c->Exec("CREATE TABLE d (k INT PRIMARY KEY)"), "");
  EXPECT_NE(c->Scalar("SELECT node_id FROM wattdb_segments WHERE table_name = 'd'"), "1");
}

// The paper's smallest configuration: the master alone, holding every segment. What it
// acknowledged survives kill -9.
TEST(HostedNode, TheMasterAloneLosesNothingAcknowledgedWhenKilled) {
  MiniCluster cluster(WithMasterNode(1));
  ASSERT_TRUE(cluster.Start());
  {
    auto c = cluster.Connect();
    ASSERT_TRUE(c->ok()) << c->error();
    Load(*c, 1000);
    for (int i = 0; i < 50; i++) {
      std::string msg;
      ASSERT_EQ(c->Exec(fmt::format("UPDATE t SET v = v + 10 WHERE id = {}", i), nullptr, &msg), "")
          << msg;
    }
  }
  cluster.SignalMaster(SIGKILL);
  ASSERT_TRUE(cluster.StartMaster());
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  auto c = cluster.Connect();
  ASSERT_TRUE(c->ok()) << c->error();
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "1000");
  int64_t want = LoadedSum(1000) + 500;  // and the 50 updates
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string(want));
}

// The master dies in a distributed commit, and with it the node it hosts: before the commit
// decision is logged the statement leaves no trace on either node; after it, the statement is
// on both once the master is back (the hosted node's prepare was durable, the other node
// still holds its own). Either way no row stays locked.
class MasterCrash : public ::testing::TestWithParam<std::string> {};

TEST_P(MasterCrash, ADistributedCommitIsAllOrNothing) {
  MiniCluster cluster(WithMasterNode(2));
  ASSERT_TRUE(cluster.Start());
  const int n = 3000;
  {
    auto c = cluster.Connect();
    ASSERT_TRUE(c->ok()) << c->error();
    Load(*c, n);
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "2", 30000));
  const int64_t sum = LoadedSum(n);
  cluster.ArmFailpoint(GetParam());
  {
    auto c = cluster.Connect();
    std::string msg;
    EXPECT_NE(c->Exec("UPDATE t SET v = v + 100", nullptr, &msg), "")
        << "the master was to die in the commit";
  }
  for (int i = 0; i < 200 && cluster.MasterAlive(); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_FALSE(cluster.MasterAlive()) << "failpoint " << GetParam() << " did not fire";
  ASSERT_TRUE(cluster.StartMaster());
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "2", 30000));
  bool decided = GetParam() == "master.commit.after_decision";
  ASSERT_TRUE(cluster.WaitFor("SELECT sum(v) FROM t", std::to_string(decided ? sum + 100 * n : sum),
                              30000));
  auto c = cluster.Connect();
  std::string msg;
  ASSERT_EQ(c->Exec("UPDATE t SET v = v + 1", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string((decided ? sum + 100 * n : sum) + n));
}

INSTANTIATE_TEST_SUITE_P(HostedNode, MasterCrash,
                         ::testing::Values("master.commit.before_decision",
                                           "master.commit.after_decision"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "master.commit.before_decision"
                                      ? std::string("BeforeTheDecision")
                                      : std::string("AfterTheDecision");
                         });

}  // namespace
}  // namespace wattdb::testing
