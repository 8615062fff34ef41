// Single-row UPDATEs and DELETEs by key that the row's node evaluates and prepares in one
// round trip (query/plan/key_update.h, master/cluster/cluster_key_update.cc): the same
// outcomes as the master's scan-then-write path, errors included.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

// The statements of one block, applied to table `t`.
std::vector<std::string> Block(const std::string& t) {
  return {
      "BEGIN",
      fmt::format("UPDATE {} SET v = v + 1 WHERE id = 7", t),
      fmt::format("UPDATE {} SET v = v * 2, s = s || '!' WHERE id = 7", t),  // its own write
      fmt::format("UPDATE {} SET s = CASE WHEN v > 100 THEN 'big' ELSE s END WHERE id = 900", t),
      fmt::format("UPDATE {} SET s = NULL WHERE id = 1500 AND v >= 0", t),  // nullable column
      fmt::format("UPDATE {} SET v = 0 WHERE id = 1501 AND v < 0", t),      // filter fails: 0 rows
      fmt::format("UPDATE {} SET v = 5 WHERE id = 99999", t),               // no such row
      fmt::format("INSERT INTO {} VALUES (5000, 1, 'new')", t),
      fmt::format("UPDATE {} SET v = v + 41 WHERE id = 5000", t),  // a row the block inserted
      fmt::format("DELETE FROM {} WHERE id = 12", t),
      fmt::format("UPDATE {} SET v = 3 WHERE id = 12", t),       // a row the block deleted
      fmt::format("DELETE FROM {} WHERE id = 13 AND v < 0", t),  // filter fails: 0 rows
      fmt::format("DELETE FROM {} WHERE id = 99998", t),         // no such row
      fmt::format("INSERT INTO {} VALUES (5001, 2, 'gone')", t),
      fmt::format("DELETE FROM {} WHERE id = 5001", t),  // a row the block inserted
      "COMMIT",
  };
}

TEST(KeyUpdates, RunOnTheRowsNodeAndAnswerAsTheMasterWould) {
  MiniClusterOptions o{2, 16 << 10, 300};
  int port = FreeTcpPort();
  o.extra_toml = fmt::format("[power]\nmetrics_port = {}\n", port);
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  for (const char* t : {"a", "b"}) {
    ASSERT_EQ(
        c->Exec(fmt::format("CREATE TABLE {} (id INT PRIMARY KEY, v BIGINT NOT NULL, s TEXT)", t)),
        "");
    ASSERT_EQ(c->Exec(fmt::format(
                  "INSERT INTO {} SELECT i, i * 3, 'row' || i FROM generate_series(1, 3000) i", t)),
              "");
  }
  // Rows on both nodes: several segments, spread by the balancer.
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'a'", "2", 30000));
  auto key_updates = [&] {
    int status = 0;
    std::string text = HttpGet(port, "/metrics", &status);
    return status == 0 ? MetricValue(text, "wattdb_key_writes_total") : -1.0;
  };
  double before = key_updates();
  ASSERT_GE(before, 0);

  // Table a through the nodes, table b with everything on the master.
  for (const auto& q : Block("a")) {
    std::string msg, st = c->Exec(q, nullptr, &msg);
    ASSERT_EQ(st, "") << q << ": " << msg;
  }
  double after = key_updates();
  EXPECT_EQ(after - before, 12)
      << "each UPDATE and DELETE by key in the block ran on the row's node";
  auto m = cluster.Connect();
  ASSERT_EQ(m->Exec("SET wattdb_pushdown = off"), "");
  for (const auto& q : Block("b")) {
    std::string msg, st = m->Exec(q, nullptr, &msg);
    ASSERT_EQ(st, "") << q << ": " << msg;
  }
  EXPECT_EQ(key_updates(), after) << "wattdb_pushdown = off keeps updates on the master";
  std::vector<std::vector<std::string>> ra, rb;
  ASSERT_EQ(c->Exec("SELECT id, v, coalesce(s, '<null>') FROM a ORDER BY id", &ra), "");
  ASSERT_EQ(c->Exec("SELECT id, v, coalesce(s, '<null>') FROM b ORDER BY id", &rb), "");
  EXPECT_EQ(ra, rb);
  EXPECT_EQ(c->Scalar("SELECT v || s FROM a WHERE id = 7"), "44row7!");  // (21 + 1) * 2
  EXPECT_EQ(c->Scalar("SELECT v FROM a WHERE id = 5000"), "42");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM a WHERE id IN (12, 5001)"), "0");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM a WHERE id = 13"), "1");
  EXPECT_EQ(c->Scalar("SELECT coalesce(s, 'null') FROM a WHERE id = 1500"), "null");

  // Errors come from the node as from the master; the block fails and rolls back whole.
  for (const auto& [q, state] : std::vector<std::pair<std::string, std::string>>{
           {"UPDATE a SET v = NULL WHERE id = 3", sqlstate::kNotNullViolation},
           {"UPDATE a SET v = v / 0 WHERE id = 3", sqlstate::kDivisionByZero},
           {"UPDATE a SET v = s::bigint WHERE id = 3", sqlstate::kInvalidTextRepresentation}}) {
    ASSERT_EQ(c->Exec("BEGIN"), "");
    ASSERT_EQ(c->Exec("UPDATE a SET v = 1 WHERE id = 3"), "");
    std::string msg, st = c->Exec(q, nullptr, &msg);
    EXPECT_EQ(st, state) << q << ": " << msg;
    EXPECT_EQ(c->Exec("SELECT 1"), sqlstate::kInFailedSqlTransaction);
    ASSERT_EQ(c->Exec("ROLLBACK"), "");
    EXPECT_EQ(c->Scalar("SELECT v FROM a WHERE id = 3"), "9") << q;
  }
  // Not by key, a key column set, or a unique index to check: the master's path, same answers.
  double mid = key_updates();
  ASSERT_EQ(c->Exec("CREATE UNIQUE INDEX a_s ON a (s)"), "");
  ASSERT_EQ(c->Exec("BEGIN"), "");
  EXPECT_EQ(c->Exec("UPDATE a SET s = 'row5' WHERE id = 6"), sqlstate::kUniqueViolation);
  ASSERT_EQ(c->Exec("ROLLBACK"), "");
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("UPDATE a SET id = 7000 WHERE id = 8"), "");
  ASSERT_EQ(c->Exec("UPDATE a SET v = v + 1 WHERE id >= 9 AND id <= 10"), "");
  ASSERT_EQ(c->Exec("COMMIT"), "");
  EXPECT_EQ(key_updates(), mid);
  EXPECT_EQ(c->Scalar("SELECT v FROM a WHERE id = 7000"), "24");
  EXPECT_EQ(c->Scalar("SELECT sum(v) FROM a WHERE id IN (9, 10)"), "59");
}

// REPEATABLE READ: a row changed since the block's snapshot fails the node-run update with
// 40001 (first updater wins); READ COMMITTED runs it again on the newest version.
TEST(KeyUpdates, ConcurrentUpdatesFollowTheIsolationLevel) {
  MiniCluster cluster(MiniClusterOptions{1, 64 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect();
  auto b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE k (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO k VALUES (1, 0), (2, 0)"), "");

  ASSERT_EQ(a->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM k WHERE id = 1"), "0");
  ASSERT_EQ(b->Exec("UPDATE k SET v = v + 10 WHERE id = 1"), "");
  EXPECT_EQ(a->Exec("UPDATE k SET v = v + 1 WHERE id = 1"), sqlstate::kSerializationFailure);
  ASSERT_EQ(a->Exec("ROLLBACK"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM k WHERE id = 1"), "10");

  ASSERT_EQ(a->Exec("BEGIN"), "");  // READ COMMITTED
  EXPECT_EQ(a->Scalar("SELECT v FROM k WHERE id = 2"), "0");
  ASSERT_EQ(b->Exec("UPDATE k SET v = v + 10 WHERE id = 2"), "");
  ASSERT_EQ(a->Exec("UPDATE k SET v = v + 1 WHERE id = 2"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM k WHERE id = 2"), "11");
  // b's update (waiting for a's lock if it comes first) applies to a's committed row.
  std::string b_state = "pending";
  std::thread t([&] { b_state = b->Exec("UPDATE k SET v = v * 2 WHERE id = 2"); });
  ASSERT_EQ(a->Exec("COMMIT"), "");
  t.join();
  EXPECT_EQ(b_state, "");
  EXPECT_EQ(a->Scalar("SELECT v FROM k WHERE id = 2"), "22");
}

// A hot row's reads come from its segment's newest-version cache (wattdb_segments.cached_reads)
// and always show the last committed update, from two sessions, in and out of blocks, while
// the row is updated, deleted and inserted again.
TEST(KeyUpdates, AHotRowsReadsSeeEveryCommittedUpdate) {
  MiniCluster cluster(MiniClusterOptions{1, 64 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect();
  auto b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE h (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO h VALUES (1, 0), (2, 100)"), "");
  for (int i = 1; i <= 60; i++) {
    auto& writer = i % 2 ? a : b;
    auto& reader = i % 2 ? b : a;
    ASSERT_EQ(writer->Exec("UPDATE h SET v = v + 1 WHERE id = 1"), "");
    ASSERT_EQ(reader->Scalar("SELECT v FROM h WHERE id = 1"), std::to_string(i))
        << "after update " << i;
    if (i % 10 == 0) {  // a block: its own write first, then the committed one
      ASSERT_EQ(reader->Exec("BEGIN"), "");
      ASSERT_EQ(reader->Exec("UPDATE h SET v = v + 1000 WHERE id = 1"), "");
      ASSERT_EQ(reader->Scalar("SELECT v FROM h WHERE id = 1"), std::to_string(i + 1000));
      ASSERT_EQ(writer->Scalar("SELECT v FROM h WHERE id = 1"), std::to_string(i));
      ASSERT_EQ(reader->Exec("ROLLBACK"), "");
      ASSERT_EQ(writer->Scalar("SELECT v FROM h WHERE id = 1"), std::to_string(i));
    }
  }
  ASSERT_EQ(a->Exec("DELETE FROM h WHERE id = 1"), "");
  EXPECT_EQ(b->Scalar("SELECT count(*) FROM h WHERE id = 1"), "0");
  ASSERT_EQ(b->Exec("INSERT INTO h VALUES (1, -5)"), "");
  EXPECT_EQ(a->Scalar("SELECT v FROM h WHERE id = 1"), "-5");
  EXPECT_EQ(a->Scalar("SELECT v FROM h WHERE id = 2"), "100");
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT sum(cached_reads) > 0 FROM wattdb_segments WHERE table_name = 'h'", "t", 10000))
      << a->Scalar("SELECT sum(cached_reads) FROM wattdb_segments WHERE table_name = 'h'");
}

}  // namespace
}  // namespace wattdb::testing
