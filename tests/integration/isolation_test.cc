// Isolation levels as PostgreSQL has them: READ COMMITTED (the default) gives each statement
// a fresh snapshot and re-runs a statement that meets a row changed since, so concurrent
// updates of one row neither fail nor get lost; REPEATABLE READ keeps one snapshot and fails
// such an update with 40001. Deadlocks are detected (40P01).
#include <atomic>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

// The tests that take locks run twice: on node processes, and with node 1 in the master
// process (whose lock waits, deadlock breaks and re-checks then run on the sessions' threads).
class Locking : public ::testing::TestWithParam<bool> {
 protected:
  MiniClusterOptions Options(int nodes, uint64_t segment_bytes, int telemetry_ms) const {
    MiniClusterOptions o{nodes, segment_bytes, telemetry_ms};
    if (GetParam()) o.hosted_node = 1;
    return o;
  }
};

// pgbench's TPC-B shape: every transaction updates its own row, then one hot row, then
// inserts a history row; plus one client of single-statement increments. Under snapshot
// isolation most of these would fail with 40001. The updates are by key, so the row's node
// re-checks the newest version itself, holding the row (PostgreSQL's EvalPlanQual): no
// statement is restarted from the master, where a rival could take the row meanwhile.
TEST_P(Locking, ReadCommittedUpdatesOfAHotRowNeitherFailNorGetLost) {
  MiniClusterOptions o = Options(2, 4096, 200);
  int port = FreeTcpPort();
  o.extra_toml = fmt::format("[power]\nmetrics_port = {}\n", port);
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto metric = [&](const char* name) {
    int status = 0;
    std::string text = HttpGet(port, "/metrics", &status);
    return status == 0 ? MetricValue(text, name) : -1.0;
  };
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE counters (id INT PRIMARY KEY, v BIGINT, pad TEXT)"), "");
  ASSERT_EQ(c->Exec("CREATE TABLE hist (id SERIAL PRIMARY KEY, w INT, note TEXT)"), "");
  std::string sql = "INSERT INTO counters VALUES ";
  for (int i = 0; i < 100; i++)
    sql += fmt::format("{}({}, 0, '{}')", i ? "," : "", i, std::string(100, 'x'));
  ASSERT_EQ(c->Exec(sql), "");
  constexpr int kClients = 4, kTxns = 40;
  double restarts = metric("wattdb_statement_restarts_total"),
         key_writes = metric("wattdb_key_writes_total");
  ASSERT_GE(restarts, 0);
  std::atomic<int> errors{0};
  std::string last_error;
  std::vector<std::thread> threads;
  for (int w = 0; w < kClients; w++) {
    threads.emplace_back([&, w] {
      auto tc = cluster.Connect();
      for (int i = 0; i < kTxns; i++) {
        for (const std::string& q :
             {std::string("BEGIN"),
              fmt::format("UPDATE counters SET v = v + 1 WHERE id = {}", 50 + w),
              std::string("UPDATE counters SET v = v + 1 WHERE id = 0"),
              fmt::format("INSERT INTO hist (w, note) VALUES ({}, 'txn {}')", w, i),
              std::string("COMMIT")}) {
          std::string msg, st = tc->Exec(q, nullptr, &msg);
          if (!st.empty()) {
            errors++;
            last_error = q + ": " + st + " " + msg;
            (void)tc->Exec("ROLLBACK");
            break;
          }
        }
      }
    });
  }
  threads.emplace_back([&] {
    auto tc = cluster.Connect();
    for (int i = 0; i < kTxns; i++) {
      std::string msg, st = tc->Exec("UPDATE counters SET v = v + 1 WHERE id = 0", nullptr, &msg);
      if (!st.empty()) {
        errors++;
        last_error = st + " " + msg;
      }
    }
  });
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0) << last_error;
  EXPECT_EQ(c->Scalar("SELECT v FROM counters WHERE id = 0"),
            std::to_string((kClients + 1) * kTxns));
  for (int w = 0; w < kClients; w++) {
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM counters WHERE id = {}", 50 + w)),
              std::to_string(kTxns));
  }
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM hist"), std::to_string(kClients * kTxns));
  EXPECT_EQ(metric("wattdb_key_writes_total") - key_writes, (2 * kClients + 1) * kTxns);
  EXPECT_EQ(metric("wattdb_statement_restarts_total"), restarts);
}

TEST(Isolation, EachLevelSeesWhatPostgresWouldSee) {
  MiniCluster cluster(MiniClusterOptions{2, 64 << 10, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO t VALUES (1, 1), (2, 2)"), "");

  // READ COMMITTED: the second statement sees what committed after the first.
  ASSERT_EQ(a->Exec("BEGIN"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM t WHERE id = 1"), "1");
  ASSERT_EQ(b->Exec("UPDATE t SET v = 5 WHERE id = 1"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM t WHERE id = 1"), "5");
  ASSERT_EQ(a->Exec("COMMIT"), "");

  // REPEATABLE READ: one snapshot for the block; updating a row changed since fails.
  ASSERT_EQ(a->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM t WHERE id = 1"), "5");
  ASSERT_EQ(b->Exec("UPDATE t SET v = 6 WHERE id = 1"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM t WHERE id = 1"), "5");
  EXPECT_EQ(a->Exec("UPDATE t SET v = v + 1 WHERE id = 1"), sqlstate::kSerializationFailure);
  ASSERT_EQ(a->Exec("ROLLBACK"), "");

  // READ COMMITTED, a statement meeting a row another transaction holds: it waits, then
  // applies to the newest version (6 + 100, doubled), and the block's earlier write stays.
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("UPDATE t SET v = v + 10 WHERE id = 2"), "");
  ASSERT_EQ(b->Exec("BEGIN"), "");
  ASSERT_EQ(b->Exec("UPDATE t SET v = v + 100 WHERE id = 1"), "");
  std::string doubled;
  std::thread waiter([&] { doubled = a->Exec("UPDATE t SET v = v * 2 WHERE v > 0 AND id = 1"); });
  ASSERT_EQ(b->Exec("COMMIT"), "");
  waiter.join();
  EXPECT_EQ(doubled, "");
  ASSERT_EQ(a->Exec("COMMIT"), "");
  std::vector<std::vector<std::string>> rows;
  ASSERT_EQ(a->Exec("SELECT id, v FROM t ORDER BY id", &rows), "");
  EXPECT_EQ(rows, (std::vector<std::vector<std::string>>{{"1", "212"}, {"2", "12"}}));

  // A row deleted meanwhile is no longer there to update: the re-run updates nothing.
  ASSERT_EQ(b->Exec("BEGIN"), "");
  ASSERT_EQ(b->Exec("DELETE FROM t WHERE id = 1"), "");
  std::thread deleter([&] { doubled = a->Exec("UPDATE t SET v = 0 WHERE id = 1"); });
  ASSERT_EQ(b->Exec("COMMIT"), "");
  deleter.join();
  EXPECT_EQ(doubled, "");
  EXPECT_EQ(a->Scalar("SELECT count(*) FROM t"), "1");

  // The level a client asks for in its startup packet (PGOPTIONS), as PostgreSQL takes it.
  PgConn rr(cluster.conninfo() +
            " options='-c default_transaction_isolation=repeatable\\\\ read'");  // conninfo
                                                                                 // unescapes once
  ASSERT_TRUE(rr.ok()) << rr.error();
  EXPECT_EQ(rr.Scalar("SHOW transaction_isolation"), "repeatable read");
  PgConn bad(cluster.conninfo() + " options='-c default_transaction_isolation=sometimes'");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("invalid value for parameter"), std::string::npos) << bad.error();
}

// Two blocks each wait for the other's row on one node: one is told 40P01 at once (not after
// the lock wait) and, once it rolls back, the other goes on.
TEST_P(Locking, ADeadlockIsDetectedAndTheOtherTransactionGoesOn) {
  MiniCluster cluster(Options(1, 64 << 10, 200));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO t VALUES (1, 0), (2, 0)"), "");
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(b->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("UPDATE t SET v = v + 1 WHERE id = 1"), "");
  ASSERT_EQ(b->Exec("UPDATE t SET v = v + 10 WHERE id = 2"), "");
  std::string sa, sb;
  std::thread ta([&] {
    sa = a->Exec("UPDATE t SET v = v + 1 WHERE id = 2");
    (void)a->Exec(sa.empty() ? "COMMIT" : "ROLLBACK");
  });
  std::thread tb([&] {
    sb = b->Exec("UPDATE t SET v = v + 10 WHERE id = 1");
    (void)b->Exec(sb.empty() ? "COMMIT" : "ROLLBACK");
  });
  ta.join();
  tb.join();
  ASSERT_NE(sa.empty(), sb.empty()) << sa << " / " << sb;
  EXPECT_EQ(sa.empty() ? sb : sa, sqlstate::kDeadlockDetected);
  std::string sum = a->Scalar("SELECT sum(v) FROM t");
  EXPECT_EQ(sum, sa.empty() ? "2" : "20");  // the survivor's two updates, nothing of the victim's
}

// Tables x and y on different nodes. Returns false (with a test failure) if the move failed.
bool OnTwoNodes(MiniCluster& cluster, PgConn& c) {
  EXPECT_EQ(c.Exec("CREATE TABLE x (id INT PRIMARY KEY, v INT)"), "");
  EXPECT_EQ(c.Exec("CREATE TABLE y (id INT PRIMARY KEY, v INT)"), "");
  EXPECT_EQ(c.Exec("INSERT INTO x VALUES (1, 0)"), "");
  EXPECT_EQ(c.Exec("INSERT INTO y VALUES (1, 0)"), "");
  int nx = std::stoi(c.Scalar("SELECT node_id FROM wattdb_segments WHERE table_name = 'x'"));
  if (std::stoi(c.Scalar("SELECT node_id FROM wattdb_segments WHERE table_name = 'y'")) == nx) {
    std::string msg;
    std::string st = c.Exec(
        fmt::format("ALTER TABLE y MOVE SEGMENT {} TO NODE {}",
                    c.Scalar("SELECT segment_id FROM wattdb_segments WHERE table_name = 'y'"),
                    3 - nx),
        nullptr, &msg);
    EXPECT_EQ(st, "") << msg;
    if (!st.empty()) return false;
  }
  return true;
}

// A cycle through two nodes, which neither node sees alone: the master finds it in the
// nodes' reported waits and one of the two is told 40P01 long before the lock timeout.
TEST_P(Locking, ADeadlockAcrossNodesIsDetected) {
  MiniCluster cluster(Options(2, 64 << 10, 200));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), b = cluster.Connect();
  ASSERT_TRUE(OnTwoNodes(cluster, *a));
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(b->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("UPDATE x SET v = v + 1 WHERE id = 1"), "");
  ASSERT_EQ(b->Exec("UPDATE y SET v = v + 10 WHERE id = 1"), "");
  std::string sa, sb, ma, mb;
  auto t0 = std::chrono::steady_clock::now();
  std::thread ta([&] {
    sa = a->Exec("UPDATE y SET v = v + 1 WHERE id = 1", nullptr, &ma);
    (void)a->Exec(sa.empty() ? "COMMIT" : "ROLLBACK");
  });
  std::thread tb([&] {
    sb = b->Exec("UPDATE x SET v = v + 10 WHERE id = 1", nullptr, &mb);
    (void)b->Exec(sb.empty() ? "COMMIT" : "ROLLBACK");
  });
  ta.join();
  tb.join();
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_NE(sa.empty(), sb.empty()) << sa << " " << ma << " / " << sb << " " << mb;
  EXPECT_EQ(sa.empty() ? sb : sa, sqlstate::kDeadlockDetected) << (sa.empty() ? mb : ma);
  EXPECT_LT(waited, 5.0) << "the lock timeout (10 s) is what ended it";
  std::string x = a->Scalar("SELECT v FROM x"), y = a->Scalar("SELECT v FROM y");
  EXPECT_EQ(x + "/" + y, sa.empty() ? "1/1" : "10/10");  // the survivor's two updates only
}

// A writer waits for a row lock as long as its holder runs (up to lock_timeout_ms, 10 s by
// default), as PostgreSQL does; it used to give up after 1 s with 40001.
TEST_P(Locking, AWriterWaitsOutALongTransaction) {
  MiniCluster cluster(Options(1, 64 << 10, 200));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO t VALUES (1, 1)"), "");
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("UPDATE t SET v = v + 1 WHERE id = 1"), "");
  std::string st, msg;
  std::thread waiter([&] { st = b->Exec("UPDATE t SET v = v * 10 WHERE id = 1", nullptr, &msg); });
  ASSERT_TRUE(cluster.WaitFor("SELECT sum(lock_waits) FROM wattdb_nodes", "1", 10000));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // longer than the old 1 s limit
  ASSERT_EQ(a->Exec("COMMIT"), "");
  waiter.join();
  EXPECT_EQ(st, "") << msg;
  EXPECT_EQ(a->Scalar("SELECT v FROM t"), "20");  // applied to a's committed version
}

// pg_stat_activity shows each session's state and its running or last statement.
TEST(Isolation, PgStatActivityShowsWhatEachSessionDoes) {
  MiniCluster cluster(MiniClusterOptions{1, 64 << 10, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), c = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO t VALUES (1, 1)"), "");
  auto state_of = [&](const std::string& query) {
    std::vector<std::vector<std::string>> rows;
    EXPECT_EQ(
        c->Exec("SELECT state, xact_start IS NOT NULL, usename, datname, backend_type, client_addr "
                "FROM pg_stat_activity WHERE query = '" +
                    query + "'",
                &rows),
        "");
    if (rows.size() != 1) return std::string("rows: ") + std::to_string(rows.size());
    std::string out;
    for (const auto& v : rows[0]) out += (out.empty() ? "" : "|") + v;
    return out;
  };
  EXPECT_EQ(state_of("INSERT INTO t VALUES (1, 1)"),
            "idle|f|wattdb|wattdb|client backend|127.0.0.1");
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("SELECT v FROM t"), "");
  EXPECT_EQ(state_of("SELECT v FROM t"),
            "idle in transaction|t|wattdb|wattdb|client backend|127.0.0.1");
  EXPECT_EQ(a->Exec("SELECT 1 / 0"), sqlstate::kDivisionByZero);
  EXPECT_EQ(state_of("SELECT 1 / 0"),
            "idle in transaction (aborted)|t|wattdb|wattdb|client backend|127.0.0.1");
  ASSERT_EQ(a->Exec("ROLLBACK"), "");
  // A statement running now: waiting for a row lock another session holds.
  auto b = cluster.Connect();
  ASSERT_EQ(b->Exec("BEGIN"), "");
  ASSERT_EQ(b->Exec("UPDATE t SET v = 2 WHERE id = 1"), "");
  std::string st;
  std::thread waiter([&] { st = a->Exec("UPDATE t SET v = 3 WHERE id = 1"); });
  ASSERT_TRUE(cluster.WaitFor("SELECT sum(lock_waits) FROM wattdb_nodes", "1", 10000));
  EXPECT_EQ(state_of("UPDATE t SET v = 3 WHERE id = 1"),
            "active|t|wattdb|wattdb|client backend|127.0.0.1");
  ASSERT_EQ(b->Exec("COMMIT"), "");
  waiter.join();
  EXPECT_EQ(st, "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM pg_stat_activity"), "3");
  b.reset();  // gone once the master has seen the Terminate message
  std::string sessions;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until && sessions != "2";) {
    sessions = c->Scalar("SELECT count(*) FROM pg_stat_activity");
  }
  EXPECT_EQ(sessions, "2");
}

INSTANTIATE_TEST_SUITE_P(Isolation, Locking, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? "MasterNode" : "NodeProcesses";
                         });

}  // namespace
}  // namespace wattdb::testing
