// A crash at every step of a move and of a split, on the master, the source and the target,
// a crash or freeze of a node rewriting a segment to drop old versions, and a crash or freeze
// in the middle of a hot row's update (failpoints, common/failpoint.h): afterwards every
// acknowledged write is there once, each segment has one owner, and the table can be written,
// moved and split again.
#include <signal.h>

#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

constexpr int kRows = 2000;

// t(id, v, pad) with kRows rows, all on one node; then v = 1 for the lower half (acknowledged).
void Load(MiniCluster& cluster, PgConn& c) {
  ASSERT_EQ(c.Exec("CREATE TABLE t (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  for (int start = 0; start < kRows; start += 200) {
    std::string sql = "INSERT INTO t VALUES ";
    for (int i = start; i < start + 200; i++) {
      sql += fmt::format("{}({}, 0, 'padding padding padding padding {}')", i == start ? "" : ",",
                         i, i);
    }
    std::string msg;
    ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  }
  std::string msg;
  ASSERT_EQ(c.Exec(fmt::format("UPDATE t SET v = 1 WHERE id < {}", kRows / 2), nullptr, &msg), "")
      << msg;
}

// Waits until the failpoint killed a process (the master, or a node: restarted here), then
// brings the cluster back. Returns what died.
std::string AwaitCrashAndRecover(MiniCluster& cluster, int nodes) {
  std::string died;
  for (int i = 0; i < 400 && died.empty(); i++) {
    if (!cluster.MasterAlive())
      died = "master";
    else if (cluster.RestartDeadNodes() > 0)
      died = "node";
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (died == "master") {
    (void)cluster.RestartDeadNodes();
    if (!cluster.StartMaster()) return "master (did not restart)";
  }
  if (!cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'",
                       std::to_string(nodes), 30000)) {
    return died + " (nodes did not come back)";
  }
  return died;
}

// Retries a statement that may meet a move or recovery in progress (55006, 57P03, 40001).
std::string ExecSettled(PgConn& c, const std::string& sql, std::string* msg) {
  std::string st;
  for (int i = 0; i < 100; i++) {
    st = c.Exec(sql, nullptr, msg);
    if (st.empty() ||
        (st != sqlstate::kObjectInUse && st != sqlstate::kCannotConnectNow &&
         st != sqlstate::kSerializationFailure && st != sqlstate::kObjectNotInPrerequisiteState))
      return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return st;
}

// What must hold after any crash: all rows once, the acknowledged UPDATE, one owner per
// segment, and the table writable.
void ExpectIntactAndWritable(MiniCluster& cluster, PgConn& c) {
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM t", std::to_string(kRows), 30000))
      << "got " << c.Scalar("SELECT count(*) FROM t") << "; logs in " << cluster.dir();
  EXPECT_EQ(c.Scalar("SELECT count(DISTINCT id) FROM t"), std::to_string(kRows));
  EXPECT_EQ(c.Scalar("SELECT sum(v) FROM t"), std::to_string(kRows / 2));
  EXPECT_EQ(c.Scalar(fmt::format("SELECT count(*) FROM t WHERE id >= {}", kRows / 2)),
            std::to_string(kRows / 2));
  EXPECT_EQ(c.Scalar("SELECT count(*) - count(DISTINCT segment_id) FROM wattdb_segments"), "0");
  std::string msg;
  ASSERT_EQ(ExecSettled(c, "UPDATE t SET v = v + 1", &msg), "") << msg;
  EXPECT_EQ(c.Scalar("SELECT sum(v) FROM t"), std::to_string(kRows / 2 + kRows));
}

std::string TestName(const ::testing::TestParamInfo<const char*>& info) {
  std::string n = info.param;
  for (auto& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
}

class MoveCrash : public ::testing::TestWithParam<const char*> {};

TEST_P(MoveCrash, NothingAcknowledgedIsLost) {
  MiniCluster cluster(MiniClusterOptions{2, 1 << 20, 200, /*balance=*/false});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(Load(cluster, *c));
  std::vector<std::vector<std::string>> seg;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 't'", &seg),
            "");
  ASSERT_EQ(seg.size(), 1u);
  const std::string id = seg[0][0];
  const int from = std::stoi(seg[0][1]), to = 3 - from;

  cluster.ArmFailpoint(GetParam());
  std::string msg;
  std::string st =
      c->Exec(fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}", id, to), nullptr, &msg);
  std::string died = AwaitCrashAndRecover(cluster, 2);
  ASSERT_TRUE(died == "master" || died == "node")
      << "failpoint " << GetParam() << ": " << died << "; move said " << st << " " << msg
      << "; logs in " << cluster.dir();
  c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(ExpectIntactAndWritable(cluster, *c));
  // The move can be made (again), and carries everything.
  std::string owner =
      c->Scalar(fmt::format("SELECT node_id FROM wattdb_segments WHERE segment_id = {}", id));
  const int target = owner == std::to_string(to) ? from : to;
  ASSERT_EQ(
      ExecSettled(*c, fmt::format("ALTER TABLE t MOVE SEGMENT {} TO NODE {}", id, target), &msg),
      "")
      << msg;
  EXPECT_EQ(c->Scalar(fmt::format("SELECT node_id FROM wattdb_segments WHERE segment_id = {}", id)),
            std::to_string(target));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(kRows));
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string(kRows / 2 + kRows));
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, MoveCrash,
    ::testing::Values("master.move.after_intent",      // master, before the pull
                      "node.export.after_checkpoint",  // source, exported
                      "node.pull.after_files",         // target, files received
                      "node.pull.after_import",        // target, imported, no reply
                      "master.move.after_pull",        // master, before the switch
                      "master.move.after_switch"),     // master, before dropping the source
    TestName);

class SplitCrash : public ::testing::TestWithParam<const char*> {};

// Maintenance splits the segment once the master restarts with small segments; the crash
// comes during that split.
TEST_P(SplitCrash, NothingAcknowledgedIsLost) {
  MiniCluster cluster(MiniClusterOptions{1, 1 << 20, 200, /*balance=*/false});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(Load(cluster, *c));
  ASSERT_EQ(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 't'"), "1");
  c.reset();
  cluster.StopMaster();
  cluster.ArmFailpoint(GetParam());
  std::string out;
  ASSERT_EQ(RunCommand("sed -i 's/^segment_bytes = .*/segment_bytes = 4096/' " + cluster.dir() +
                           "/cluster.toml",
                       &out),
            0)
      << out;
  ASSERT_TRUE(cluster.StartMaster());
  std::string died = AwaitCrashAndRecover(cluster, 1);
  ASSERT_TRUE(died == "master" || died == "node")
      << "failpoint " << GetParam() << ": " << died << "; logs in " << cluster.dir();
  c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(ExpectIntactAndWritable(cluster, *c));
  // Splits go on (settled or redone) and keep every row.
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) > 2 FROM wattdb_segments WHERE table_name = 't'",
                              "t", 30000));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(kRows));
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string(kRows / 2 + kRows));
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, SplitCrash,
    ::testing::Values("master.split.after_intent",  // master, before asking the node
                      "node.split.after_create",    // node, new segment created, rows not moved
                      "node.split.after_ingest",    // node, rows in the new segment, not recorded
                      "node.split.after_write",     // node, split written, no reply
                      "node.split.before_compact",  // node, answered, moved range not compacted
                      "master.split.after_node_split"),  // master, before recording it
    TestName);

// The node of `nodes` whose process is stopped (SIGSTOP at a failpoint), or 0.
int StoppedNode(MiniCluster& cluster, int nodes) {
  for (int n = 1; n <= nodes; n++) {
    if (ProcState(cluster.NodePid(n)) == 'T') return n;
  }
  return 0;
}

// Restarts the master with 4 KiB segments (its maintenance then splits what it finds) and
// 3 s RPC deadlines, `failpoint` armed.
void RestartWithTinySegments(MiniCluster& cluster, const std::string& failpoint) {
  cluster.StopMaster();
  cluster.ArmFailpoint(failpoint);
  std::string out;
  ASSERT_EQ(RunCommand("sed -i -e 's/^segment_bytes = .*/segment_bytes = 4096/' -e "
                       "'s/^\\[cluster\\]$/[cluster]\\nrpc_timeout_ms = 3000/' " +
                           cluster.dir() + "/cluster.toml",
                       &out),
            0)
      << out;
  ASSERT_TRUE(cluster.StartMaster());
}

// The node freezes in the middle of a cut into many pieces (the rows in the new segments'
// table files, nothing recorded): statements meet it and end within their deadlines, so does
// the master's request, leaving its logged intent; once the node goes on, the split is
// settled and splits go on, every row kept.
TEST(SplitFreeze, AFrozenCutIsSettledOnceTheNodeGoesOn) {
  MiniCluster cluster(MiniClusterOptions{1, 1 << 20, 200, /*balance=*/false});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(Load(cluster, *c));
  c.reset();
  ASSERT_NO_FATAL_FAILURE(RestartWithTinySegments(cluster, "node.split.after_ingest stop"));
  const std::string armed = cluster.dir() + "/failpoints";
  for (int i = 0; i < 300 && std::filesystem::exists(armed); i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_FALSE(std::filesystem::exists(armed)) << "no split froze; logs in " << cluster.dir();
  c = cluster.Connect();
  auto t0 = std::chrono::steady_clock::now();
  std::string msg;
  std::string st = c->Exec("SELECT count(*) FROM t", nullptr, &msg);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30)) << st << " " << msg;
  EXPECT_NE(st, "") << "a read of the frozen node's segment answered";
  pid_t pid = cluster.NodePid(1);
  ASSERT_GT(pid, 0);
  kill(pid, SIGCONT);
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000))
      << "logs in " << cluster.dir();
  c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(ExpectIntactAndWritable(cluster, *c));
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) > 2 FROM wattdb_segments WHERE table_name = 't'",
                              "t", 30000));
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), std::to_string(kRows));
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM t"), std::to_string(kRows / 2 + kRows));
}

// A node freezes right after writing a cut, so the master never hears that it cut; the
// master's maintenance goes on cutting and spreading another table, a long pass of many
// moves. Once the node goes on, its cut is settled before the next of those moves, not when
// the pass is over: a read of the cut table, which retries while its segment disagrees with
// the map, answers meanwhile (it would give up, 40001, if the settling waited for the pass).
// The cut table is small enough that one cut leaves nothing to cut again: no later split of
// its segment settles the lost one on the way.
TEST(SplitFreeze, ALostCutIsSettledWhileMaintenanceKeepsMovingAnotherTable) {
  MiniCluster cluster(MiniClusterOptions{3, 64 << 20, 200, /*balance=*/true});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE small (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  ASSERT_EQ(
      c->Exec("INSERT INTO small SELECT g, g, repeat('s', 80) FROM generate_series(1, 500) g"), "");
  ASSERT_EQ(c->Exec("CREATE TABLE big (id INT PRIMARY KEY, pad TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO big SELECT g, repeat('b', 200) FROM generate_series(1, 20000) g"),
            "");
  // small on node 1 (cut first: maintenance visits the nodes in order), big on node 2.
  for (auto [table, node] : {std::pair<const char*, int>{"small", 1}, {"big", 2}}) {
    std::string id = c->Scalar(
        fmt::format("SELECT segment_id FROM wattdb_segments WHERE table_name = '{}'", table));
    std::string msg;
    ASSERT_EQ(c->Exec(fmt::format("ALTER TABLE {} MOVE SEGMENT {} TO NODE {}", table, id, node),
                      nullptr, &msg),
              "")
        << msg;
  }
  c.reset();
  ASSERT_NO_FATAL_FAILURE(RestartWithTinySegments(cluster, "node.split.after_write stop"));
  // The master gives up on the frozen node's reply (its intent stays logged).
  bool unknown = false;
  for (int i = 0; i < 600 && !unknown; i++) {
    std::ifstream log(cluster.dir() + "/master.log");
    std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    unknown = text.find("split outcome unknown") != std::string::npos;
    if (!unknown) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(unknown) << "no split reply was lost; logs in " << cluster.dir();
  // Node 1's cut usually comes first; should node 2's cut of big win the race to the
  // failpoint, that node is the one to let go on (its lost cut is settled the same way).
  int frozen = StoppedNode(cluster, 3);
  ASSERT_GT(frozen, 0) << "no node is stopped; logs in " << cluster.dir();
  pid_t pid = cluster.NodePid(frozen);
  ASSERT_GT(pid, 0);
  kill(pid, SIGCONT);
  c = cluster.Connect();
  std::string msg;
  std::vector<std::vector<std::string>> result;
  EXPECT_EQ(c->Exec("SELECT count(*), sum(v) FROM small", &result, &msg), "")
      << msg << "; logs in " << cluster.dir();
  if (result.size() == 1) {
    EXPECT_EQ(result[0][0], "500");
    EXPECT_EQ(result[0][1], "125250");
  }
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) > 1 FROM wattdb_segments WHERE table_name = 'small'",
                              "t", 30000));
  ASSERT_EQ(ExecSettled(*c, "UPDATE small SET v = v + 1", &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM small"), "125750");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM big"), "20000");
  EXPECT_EQ(c->Scalar("SELECT count(*) - count(DISTINCT segment_id) FROM wattdb_segments"), "0");
}

class CollectCrash : public ::testing::TestWithParam<const char*> {};

// Hot rows: each round adds a version of ids 0..99 and scans them, so that the node's scans
// step over more and more old versions until its upkeep thread rewrites the segment; the
// node dies or freezes there.
TEST_P(CollectCrash, NothingAcknowledgedIsLost) {
  MiniCluster cluster(MiniClusterOptions{1, 1 << 20, 200, /*balance=*/false});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_NO_FATAL_FAILURE(Load(cluster, *c));
  const std::string param = GetParam();
  const bool freeze = param.ends_with(" stop");
  cluster.ArmFailpoint(param);
  const std::string armed = cluster.dir() + "/failpoints";
  int acked = 0;
  bool ambiguous = false;  // the last UPDATE failed: it may or may not have committed
  for (int round = 0; round < 400 && std::filesystem::exists(armed); round++) {
    std::string msg;
    if (!c->Exec("UPDATE t SET v = v + 1 WHERE id < 100", nullptr, &msg).empty()) {
      ambiguous = true;
      break;
    }
    acked++;
    (void)c->Scalar("SELECT sum(v) FROM t WHERE id < 100");
  }
  ASSERT_FALSE(std::filesystem::exists(armed))
      << "no collection after " << acked << " rounds; logs in " << cluster.dir();
  if (freeze) {
    // Statements meet the frozen node and fail within their deadlines instead of hanging;
    // once it goes on, it finishes the rewrite and serves again.
    std::string msg;
    auto t0 = std::chrono::steady_clock::now();
    std::string st = c->Exec("UPDATE t SET v = v + 1 WHERE id < 100", nullptr, &msg);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << st << " " << msg;
    if (st.empty())
      acked++;
    else
      ambiguous = true;
    pid_t pid = cluster.NodePid(1);
    if (pid > 0) kill(pid, SIGCONT);
    ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000))
        << "logs in " << cluster.dir();
  } else {
    std::string died = AwaitCrashAndRecover(cluster, 1);
    ASSERT_EQ(died, "node") << "failpoint " << param << "; logs in " << cluster.dir();
  }
  c = cluster.Connect();
  // Every acknowledged round is there (and the one that failed either wholly or not at all);
  // the other rows are untouched.
  std::string msg;
  ASSERT_EQ(ExecSettled(*c, "SELECT 1", &msg), "") << msg;
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM t", std::to_string(kRows), 30000))
      << "logs in " << cluster.dir();
  std::string hot = c->Scalar("SELECT sum(v) FROM t WHERE id < 100");
  std::string want = std::to_string(100 * (1 + acked)), maybe = std::to_string(100 * (2 + acked));
  EXPECT_TRUE(hot == want || (ambiguous && hot == maybe))
      << hot << " want " << want << "; logs in " << cluster.dir();
  EXPECT_EQ(c->Scalar("SELECT count(DISTINCT v) FROM t WHERE id < 100"), "1");
  EXPECT_EQ(c->Scalar(fmt::format("SELECT sum(v) FROM t WHERE id >= 100")),
            std::to_string(kRows / 2 - 100));
  ASSERT_EQ(ExecSettled(*c, "UPDATE t SET v = v + 1 WHERE id < 100", &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT count(DISTINCT v) FROM t WHERE id < 100"), "1");
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, CollectCrash,
    ::testing::Values("node.collect.before_compact",        // counter reset, nothing rewritten
                      "node.collect.after_compact",         // rewritten, not counted
                      "node.collect.before_compact stop"),  // frozen before the rewrite
    TestName);

// A hot row updated by key and read back after each update: its reads come from the
// segment's newest-version cache and its updates check their conflicts against their own read
// (storage/newest_rows.h, SeenLatest); commits go to logs written over zeros
// (storage/log_prefill_fs.h). Then one more update dies or freezes on the node (a process of
// its own, or in the master: the master dies with it) after its prepare (not committed: it
// must vanish) or after its commit was applied and synced, before the answer (it must stay).
// Reads by key and by range agree with every acknowledged update, and updates go on. Rows
// of a table without a primary key, written blind beside them (hidden row ids), all stay too.
struct HotRowCase {
  const char* failpoint;
  bool hosted;  // the node lives in the master process
};

class HotRowCrash : public ::testing::TestWithParam<HotRowCase> {};

TEST_P(HotRowCrash, NothingAcknowledgedIsLost) {
  const HotRowCase hc = GetParam();
  const std::string fp = hc.failpoint;
  const bool freeze = fp.ends_with(" stop"),
             committed = fp.starts_with("node.after_commit_applied");
  MiniClusterOptions o{1, 1 << 20, 200, /*balance=*/false};
  if (hc.hosted) o.hosted_node = 1;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE h (id INT PRIMARY KEY, v BIGINT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO h SELECT i, 0 FROM generate_series(1, 100) i"), "");
  // An index on v: each update replaces row 7's entry, from the row its own read saw.
  ASSERT_EQ(c->Exec("CREATE INDEX h_v ON h (v)"), "");
  // Whole scans give the segment its column image, which the updates then keep current.
  for (int i = 0; i < 2; i++) ASSERT_EQ(c->Scalar("SELECT sum(v) FROM h"), "0");
  ASSERT_EQ(c->Exec("CREATE TABLE journal (n INT)"), "");
  int acked = 0;
  for (; acked < 30; acked++) {
    std::string msg;
    ASSERT_EQ(c->Exec("UPDATE h SET v = v + 1 WHERE id = 7", nullptr, &msg), "") << msg;
    ASSERT_EQ(c->Scalar("SELECT v FROM h WHERE id = 7"), std::to_string(acked + 1));
    ASSERT_EQ(c->Exec(fmt::format("INSERT INTO journal VALUES ({})", acked), nullptr, &msg), "")
        << msg;
  }
  cluster.ArmFailpoint(fp);
  std::string msg;
  auto t0 = std::chrono::steady_clock::now();
  std::string st = c->Exec("UPDATE h SET v = v + 1 WHERE id = 7", nullptr, &msg);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60)) << st << " " << msg;
  EXPECT_FALSE(std::filesystem::exists(cluster.dir() + "/failpoints"))
      << "failpoint " << fp << " did not fire";
  if (freeze) {
    pid_t pid = cluster.NodePid(1);
    if (pid > 0) kill(pid, SIGCONT);
  } else {
    std::string died = AwaitCrashAndRecover(cluster, 1);
    ASSERT_EQ(died, hc.hosted ? "master" : "node")
        << "failpoint " << fp << "; logs in " << cluster.dir();
  }
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000))
      << "logs in " << cluster.dir();
  c = cluster.Connect();
  ASSERT_EQ(ExecSettled(*c, "SELECT 1", &msg), "") << msg;
  const std::string want = std::to_string(acked + (committed ? 1 : 0));
  EXPECT_TRUE(cluster.WaitFor("SELECT v FROM h WHERE id = 7", want, 30000))
      << "by key " << c->Scalar("SELECT v FROM h WHERE id = 7") << " want " << want
      << " (update said " << st << "); logs in " << cluster.dir();
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM h"), want) << "by range";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM h"), "100");
  EXPECT_EQ(c->Scalar(fmt::format("SELECT string_agg(id::text, ',') FROM h WHERE v = {}", want)),
            "7")
      << "by index";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM h WHERE v = 0"), "99") << "by index";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM h WHERE v >= 0"), "100")
      << "by index: one entry per row";
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(n) FROM journal"), "30 435");
  ASSERT_EQ(ExecSettled(*c, "INSERT INTO journal VALUES (30)", &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || count(DISTINCT n) FROM journal"), "31 31");
  for (int i = 1; i <= 5; i++) {
    ASSERT_EQ(ExecSettled(*c, "UPDATE h SET v = v + 1 WHERE id = 7", &msg), "") << msg;
    std::string now = std::to_string(std::stoi(want) + i);
    EXPECT_EQ(c->Scalar("SELECT v FROM h WHERE id = 7"), now);
    EXPECT_EQ(c->Scalar("SELECT sum(v) FROM h"), now);
    EXPECT_EQ(c->Scalar(fmt::format("SELECT string_agg(id::text, ',') FROM h WHERE v = {}", now)),
              "7");
  }
}

std::string HotRowName(const ::testing::TestParamInfo<HotRowCase>& info) {
  std::string n = std::string(info.param.failpoint) + (info.param.hosted ? " hosted" : "");
  for (auto& ch : n) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(
    EveryStep, HotRowCrash,
    ::testing::Values(HotRowCase{"node.update_key.after_prepare",
                                 false},                               // prepared, not committed
                      HotRowCase{"node.after_commit_applied", false},  // committed, no answer
                      HotRowCase{"node.after_commit_applied stop", false},  // frozen there
                      HotRowCase{"node.update_key.after_prepare", true},    // the master dies
                      HotRowCase{"node.after_commit_applied", true}),
    HotRowName);

// For writers running on a one-node cluster and counting their acknowledged transactions in
// `acked`: once `first` are acknowledged, fires `hc`'s failpoint, brings the node back (killed:
// restarted, with the master if it hosts the node) or lets it go on (frozen), then checks that
// `then` more get acknowledged.
void FireMidRun(MiniCluster& cluster, const HotRowCase& hc, const std::atomic<int>& acked,
                int first, int then) {
  const std::string fp = hc.failpoint;
  auto await_acked = [&](int n) {
    for (int i = 0; i < 1200 && acked < n; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    return acked >= n;
  };
  EXPECT_TRUE(await_acked(first));
  cluster.ArmFailpoint(fp);
  for (int i = 0; i < 1200 && std::filesystem::exists(cluster.dir() + "/failpoints"); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_FALSE(std::filesystem::exists(cluster.dir() + "/failpoints"))
      << "failpoint " << fp << " did not fire";
  if (fp.ends_with(" stop")) {
    ASSERT_TRUE(AwaitProcState(cluster.NodePid(1), 'T', 10000)) << "the node did not freeze";
    kill(cluster.NodePid(1), SIGCONT);
  } else {
    std::string died = AwaitCrashAndRecover(cluster, 1);
    EXPECT_EQ(died, hc.hosted ? "master" : "node")
        << "failpoint " << fp << "; logs in " << cluster.dir();
  }
  EXPECT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "1", 30000));
  const int before = acked;
  EXPECT_TRUE(await_acked(before + then)) << "the writers did not go on; logs in " << cluster.dir();
}

// Writers, each on a connection of its own, until Stop: `step(t, n, conn)` makes writer t's
// n-th attempt on `conn` (which may be broken) and says whether it was acknowledged (counted
// in acked()); after an attempt that was not, the writer pauses and connects again if its
// connection broke.
class Writers {
 public:
  using Step = std::function<bool(int t, int n, PgConn* conn)>;
  Writers(MiniCluster& cluster, int writers, std::chrono::milliseconds pause, Step step) {
    for (int t = 0; t < writers; t++) {
      threads_.emplace_back([this, &cluster, pause, step, t] {
        std::unique_ptr<PgConn> conn = cluster.Connect();
        for (int n = 0; !stop_; n++) {
          if (step(t, n, conn.get())) {
            acked_++;
            continue;
          }
          std::this_thread::sleep_for(pause);
          if (!conn || !conn->ok()) conn = cluster.Connect();
        }
      });
    }
  }
  ~Writers() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  const std::atomic<int>& acked() const { return acked_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> acked_{0};
  std::vector<std::thread> threads_;
};

// Writers of disjoint rows of one segment, in autocommit, each update reading its row through
// the segment's column image: whenever another writer commits between an update's read and
// its prepare, the prepare checks the row against the segment's recording of commits instead
// of storage (SeenLatest::recent_base). Mid-run one commit dies or freezes on the node (its
// own process, or the master with it) after it was applied and synced. Afterwards every row
// holds every acknowledged update and at most the unanswered ones besides, by key and by range,
// and the writers go on.
class ConcurrentWritersCrash : public ::testing::TestWithParam<HotRowCase> {};

TEST_P(ConcurrentWritersCrash, NothingAcknowledgedIsLost) {
  const HotRowCase hc = GetParam();
  MiniClusterOptions o{1, 1 << 20, 200, /*balance=*/false};
  if (hc.hosted) o.hosted_node = 1;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  constexpr int kWriters = 3, kKeysEach = 10;
  ASSERT_EQ(c->Exec("CREATE TABLE w (id INT PRIMARY KEY, v BIGINT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO w SELECT i, 0 FROM generate_series(1, 100) i"), "");
  for (int i = 0; i < 2; i++) ASSERT_EQ(c->Scalar("SELECT sum(v) FROM w"), "0");  // the image
  std::vector<std::array<int, kKeysEach>> acked(kWriters), unknown(kWriters);
  for (int t = 0; t < kWriters; t++) {
    acked[t].fill(0);
    unknown[t].fill(0);
  }
  Writers writers(
      cluster, kWriters, std::chrono::milliseconds(50), [&](int t, int n, PgConn* conn) {
        const int k = n % kKeysEach;
        std::string msg;
        std::string st = conn && conn->ok()
                             ? conn->Exec(fmt::format("UPDATE w SET v = v + 1 WHERE id = {}",
                                                      1 + t * kKeysEach + k),
                                          nullptr, &msg)
                             : sqlstate::kConnectionFailure;
        if (st.empty()) {
          acked[t][k]++;
          return true;
        }
        unknown[t][k]++;  // it may or may not have committed
        return false;
      });
  FireMidRun(cluster, hc, writers.acked(), 150, 60);
  writers.Stop();
  c = cluster.Connect();
  std::string msg;
  ASSERT_EQ(ExecSettled(*c, "SELECT 1", &msg), "") << msg;
  std::vector<std::vector<std::string>> rows;
  ASSERT_EQ(c->Exec("SELECT id, v FROM w ORDER BY id", &rows), "");
  ASSERT_EQ(rows.size(), 100u);
  int64_t sum = 0;
  for (const auto& r : rows) {
    const int id = std::stoi(r[0]);
    const int64_t v = std::stoll(r[1]);
    sum += v;
    if (id > kWriters * kKeysEach) {
      EXPECT_EQ(v, 0) << "row " << id;
      continue;
    }
    const int t = (id - 1) / kKeysEach, k = (id - 1) % kKeysEach;
    EXPECT_GE(v, acked[t][k]) << "row " << id << " lost an acknowledged update; logs in "
                              << cluster.dir();
    EXPECT_LE(v, acked[t][k] + unknown[t][k]) << "row " << id;
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM w WHERE id = {}", id)), r[1]) << "by key";
  }
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM w"), std::to_string(sum)) << "by range";
}

INSTANTIATE_TEST_SUITE_P(
    OnTheCommitPath, ConcurrentWritersCrash,
    ::testing::Values(HotRowCase{"node.after_commit_applied", false},       // killed
                      HotRowCase{"node.after_commit_applied stop", false},  // frozen
                      HotRowCase{"node.after_commit_applied", true}),       // the master dies
    HotRowName);

// Writers of one row, in transactions that also journal each update: a commit lets the row's
// lock go before its log sync (node/participant.h, early lock release), so the next writer
// updates the row on top of a commit that is not durable yet. One such commit dies or freezes
// between the release and its sync (on a node process, or in the master hosting the node).
// Afterwards the row counts exactly the journal's rows (no update survives without its
// journal row, nor one built on a lost commit), every acknowledged transaction is there, and
// the writers go on.
class EarlyReleaseCrash : public ::testing::TestWithParam<HotRowCase> {};

TEST_P(EarlyReleaseCrash, NothingAcknowledgedIsLostNorBuiltOnALostCommit) {
  const HotRowCase hc = GetParam();
  MiniClusterOptions o{1, 1 << 20, 200, /*balance=*/false};
  if (hc.hosted) o.hosted_node = 1;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE r (id INT PRIMARY KEY, v BIGINT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO r VALUES (1, 0)"), "");
  ASSERT_EQ(c->Exec("CREATE TABLE journal (w INT, n INT)"), "");
  constexpr int kWriters = 3;
  std::atomic<int> total_unknown{0};
  std::vector<std::vector<int>> acked(kWriters);  // each writer's acknowledged transactions
  Writers writers(
      cluster, kWriters, std::chrono::milliseconds(20), [&](int t, int n, PgConn* conn) {
        std::string st = conn && conn->ok() ? conn->Exec("BEGIN") : sqlstate::kConnectionFailure;
        if (st.empty()) st = conn->Exec("UPDATE r SET v = v + 1 WHERE id = 1");
        if (st.empty()) st = conn->Exec(fmt::format("INSERT INTO journal VALUES ({}, {})", t, n));
        if (st.empty()) {
          st = conn->Exec("COMMIT");
          if (st.empty()) {
            acked[t].push_back(n);
            return true;
          }
          total_unknown++;  // it may or may not have committed
        }
        if (conn && conn->ok()) (void)conn->Exec("ROLLBACK");
        return false;
      });
  FireMidRun(cluster, hc, writers.acked(), 60, 30);
  writers.Stop();
  const int total_acked = writers.acked();
  c = cluster.Connect();
  std::string msg;
  ASSERT_EQ(ExecSettled(*c, "SELECT 1", &msg), "") << msg;
  const std::string journaled = c->Scalar("SELECT count(*) FROM journal");
  EXPECT_EQ(c->Scalar("SELECT v FROM r WHERE id = 1"), journaled)
      << "by key; logs in " << cluster.dir();
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM r"), journaled) << "by range";
  EXPECT_GE(std::stoi(journaled), total_acked);
  EXPECT_LE(std::stoi(journaled), total_acked + total_unknown);
  for (int t = 0; t < kWriters; t++) {
    std::vector<std::vector<std::string>> rows;
    ASSERT_EQ(c->Exec(fmt::format("SELECT n FROM journal WHERE w = {} ORDER BY n", t), &rows), "");
    std::set<int> have;
    for (const auto& r : rows) have.insert(std::stoi(r[0]));
    EXPECT_EQ(have.size(), rows.size()) << "writer " << t << " journaled a transaction twice";
    for (int n : acked[t])
      EXPECT_TRUE(have.count(n)) << "writer " << t << " lost acknowledged transaction " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(
    BetweenLockReleaseAndSync, EarlyReleaseCrash,
    ::testing::Values(HotRowCase{"node.commit.locks_released", false},       // killed
                      HotRowCase{"node.commit.locks_released stop", false},  // frozen
                      HotRowCase{"node.commit.locks_released", true}),       // the master dies
    HotRowName);

}  // namespace
}  // namespace wattdb::testing
