// End-to-end tests on real processes: master + 3 nodes on loopback, RocksDB segments, libpq.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Rows = std::vector<std::vector<std::string>>;

// Loads rows 1..n into acc(id, owner, balance) with balance = id % 1000.
void Load(PgConn& c, int n) {
  for (int start = 1; start <= n; start += 1000) {
    std::string sql = "INSERT INTO acc VALUES ";
    for (int i = start; i < start + 1000 && i <= n; i++) {
      sql += fmt::format("{}({}, 'owner{}', {})", i == start ? "" : ",", i, i % 97, i % 1000);
    }
    std::string msg;
    ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  }
}

// ALTER TABLE ADD PRIMARY KEY copies the table while a client keeps inserting: every insert
// the server acknowledged is in the re-keyed table (writers wait during the copy; those
// caught when the old table is replaced fail and are not acknowledged).
TEST(Cluster, AddPrimaryKeyKeepsConcurrentWrites) {
  MiniCluster cluster(MiniClusterOptions{2, 16 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE h (n INT, note TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO h SELECT g, 'x' FROM generate_series(1, 3000) g"), "");
  std::atomic<bool> stop{false};
  std::atomic<int> acked{0}, failed{0};
  std::thread writer([&] {
    auto wc = cluster.Connect();
    for (int i = 1; !stop; i++) {
      if (wc->Exec(fmt::format("INSERT INTO h VALUES ({}, 'w')", 100000 + i)) == "") {
        acked++;
      } else {
        failed++;
      }
    }
  });
  while (acked < 20) std::this_thread::yield();
  std::string msg;
  EXPECT_EQ(c->Exec("ALTER TABLE h ADD PRIMARY KEY (n)", nullptr, &msg), "") << msg;
  int after = acked;
  while (acked < after + 20) std::this_thread::yield();  // and writes into the new table go on
  stop = true;
  writer.join();
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM h WHERE n > 100000"), std::to_string(acked.load()))
      << failed.load() << " inserts failed";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM h WHERE n <= 3000"), "3000");
  EXPECT_EQ(c->Scalar("SELECT primary_key FROM wattdb_tables WHERE table_name = 'h'"), "n");
}

// One statement's writes over many segments in no key order (an INSERT … SELECT of scrambled
// keys; a key update's deletes and inserts): each lands in the segment whose range holds its
// key, where a point read (which reads that segment alone) finds it.
TEST(Cluster, AStatementsScrambledWritesOverManySegmentsLandEachInItsOwn) {
  MiniCluster cluster(MiniClusterOptions{2, 16 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE d (id INT PRIMARY KEY, v INT, pad TEXT)"), "");
  ASSERT_EQ(
      c->Exec("INSERT INTO d SELECT i * 2, i, repeat('p', 80) FROM generate_series(1, 6000) i"),
      "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) > 12 FROM wattdb_segments WHERE table_name = 'd'",
                              "t", 60000))
      << c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 'd'");
  // Odd keys in the order 7919 * i mod 12007 (a prime): each write in another segment.
  std::string msg;
  ASSERT_EQ(
      c->Exec("INSERT INTO d SELECT (v * 7919) % 12007 * 2 + 1, -v, 'q' FROM d", nullptr, &msg), "")
      << msg;
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(v) FROM d"), "12000 0");
  for (int i = 1; i <= 6000; i += 97) {
    int key = (i * 7919) % 12007 * 2 + 1;
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM d WHERE id = {}", key)), std::to_string(-i))
        << key;
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM d WHERE id = {}", 2 * i)), std::to_string(i));
  }
  // Every key moves: its delete in one segment, its insert in another.
  ASSERT_EQ(c->Exec("UPDATE d SET id = 100000 - id", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(v) || ' ' || min(id) FROM d"),
            "12000 0 75987");
  for (int i = 1; i <= 6000; i += 97) {
    int key = 100000 - ((i * 7919) % 12007 * 2 + 1);
    EXPECT_EQ(c->Scalar(fmt::format("SELECT v FROM d WHERE id = {}", key)), std::to_string(-i))
        << key;
  }
}

TEST(Cluster, EndToEnd) {
  MiniCluster cluster;
  ASSERT_TRUE(cluster.Start()) << "cluster did not start; logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_TRUE(c->ok()) << c->error();

  // 1. Schema and 100,000 rows through the wire protocol.
  ASSERT_EQ(c->Exec("CREATE TABLE acc (id BIGINT PRIMARY KEY, owner VARCHAR(20), balance BIGINT)"),
            "");
  Load(*c, 100000);
  const std::string kTotals = "100000|49950000|1|100000";
  auto totals = [](PgConn& conn) {
    Rows r;
    std::string st = conn.Exec("SELECT count(*), sum(balance), min(id), max(id) FROM acc", &r);
    if (!st.empty() || r.size() != 1) return "ERROR " + st;
    return r[0][0] + "|" + r[0][1] + "|" + r[0][2] + "|" + r[0][3];
  };
  EXPECT_EQ(totals(*c), kTotals);
  EXPECT_EQ(c->Scalar("SELECT owner FROM acc WHERE id = 4242"), "owner71");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM acc WHERE id BETWEEN 500 AND 1499"), "1000");
  Rows groups;
  ASSERT_EQ(
      c->Exec("SELECT owner, count(*), sum(balance) FROM acc WHERE owner IN ('owner1', 'owner2') "
              "GROUP BY owner ORDER BY owner",
              &groups),
      "");
  ASSERT_EQ(groups.size(), 2u);
  Rows top;
  ASSERT_EQ(c->Exec("SELECT id, balance FROM acc ORDER BY balance DESC, id LIMIT 3", &top), "");
  ASSERT_EQ(top, (Rows{{"999", "999"}, {"1999", "999"}, {"2999", "999"}}));

  // Segments split as the table grew and spread over all three nodes.
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_partitions WHERE table_name = 'acc'",
                              "3", 30000))
      << "segments did not spread over the nodes";
  int segments =
      std::stoi(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 'acc'"));
  EXPECT_GT(segments, 10);

  // 2. Moves under a concurrent reader (count and sum stay exact) and a concurrent writer
  //    (every statement succeeds; none is lost).
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, bad_reads{0}, writes{0}, failed_writes{0};
  std::string last_bad;
  std::thread reader([&] {
    auto rc = cluster.Connect();
    while (!stop) {
      std::string t = totals(*rc);
      reads++;
      if (t != kTotals) {
        bad_reads++;
        last_bad = t;
      }
    }
  });
  ASSERT_EQ(c->Exec("CREATE TABLE log (seq INT PRIMARY KEY, note TEXT)"), "");
  std::thread writer([&] {
    auto wc = cluster.Connect();
    for (int i = 1; !stop; i++) {
      std::string msg;
      if (wc->Exec(fmt::format("INSERT INTO log VALUES ({}, 'n{}')", i, i), nullptr, &msg) != "") {
        failed_writes++;
      }
      // Writes to the moving table too, without changing its totals: owner only.
      if (wc->Exec(
              fmt::format("UPDATE acc SET owner = 'w{}' WHERE id = {}", i, 1 + (i * 7919) % 100000),
              nullptr, &msg) != "") {
        failed_writes++;
      }
      writes++;
    }
  });
  Rows segs;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 'acc' "
                    "ORDER BY segment_id",
                    &segs),
            "");
  int moves = 0;
  for (size_t i = 0; i < segs.size() && moves < 12; i += 2) {
    int to = std::stoi(segs[i][1]) % 3 + 1;
    std::string msg;
    ASSERT_EQ(c->Exec(fmt::format("ALTER TABLE acc MOVE SEGMENT {} TO NODE {}", segs[i][0], to),
                      nullptr, &msg),
              "")
        << msg;
    moves++;
  }
  while (reads < 20) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  reader.join();
  writer.join();
  EXPECT_EQ(bad_reads.load(), 0) << "last bad read: " << last_bad;
  EXPECT_EQ(failed_writes.load(), 0);
  EXPECT_GT(reads.load(), 0);
  int logged = writes.load();
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM log"), std::to_string(logged));
  EXPECT_EQ(totals(*c), kTotals);

  // 3. Drain node 3 and power it off; the data stays complete.
  std::string msg;
  EXPECT_EQ(c->Exec("ALTER NODE 3 POWER OFF", nullptr, &msg),
            sqlstate::kObjectNotInPrerequisiteState)
      << "a node with segments must refuse";
  ASSERT_EQ(c->Exec("ALTER NODE 3 DRAIN", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE node_id = 3"), "0");
  ASSERT_EQ(c->Exec("ALTER NODE 3 POWER OFF", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT state FROM wattdb_nodes WHERE node_id = 3"), "down");
  EXPECT_EQ(totals(*c), kTotals);
  ASSERT_EQ(c->Exec("ALTER NODE 3 POWER ON", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT state FROM wattdb_nodes WHERE node_id = 3"), "up");
  ASSERT_EQ(
      c->Exec(fmt::format("ALTER TABLE acc MOVE SEGMENT {} TO NODE 3", segs[0][0]), nullptr, &msg),
      "")
      << msg;
  // Its replica set: the leader on node 3, a new epoch for each move (it moved at least twice).
  const std::string replicas_of_moved = fmt::format(
      "SELECT node_id, role, state, epoch FROM wattdb_replicas WHERE segment_id = {}", segs[0][0]);
  Rows replicas;
  ASSERT_EQ(c->Exec(replicas_of_moved, &replicas), "");
  ASSERT_EQ(replicas.size(), 1u);
  EXPECT_EQ(replicas[0][0], "3");
  EXPECT_EQ(replicas[0][1], "leader");
  EXPECT_EQ(replicas[0][2], "live");
  EXPECT_GE(std::stoi(replicas[0][3]), 3);

  // 4. Restart the master: catalog, partition map and every row are intact.
  std::string owner4242 = c->Scalar("SELECT owner FROM acc WHERE id = 4242");
  Rows groups_before;
  ASSERT_EQ(c->Exec("SELECT owner, count(*), sum(balance) FROM acc GROUP BY owner ORDER BY owner",
                    &groups_before),
            "");
  Rows before;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id, lo, hi FROM wattdb_segments ORDER BY segment_id",
                    &before),
            "");
  c.reset();
  cluster.StopMaster();
  ASSERT_TRUE(cluster.StartMaster());
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'", "3", 30000));
  c = cluster.Connect();
  EXPECT_EQ(totals(*c), kTotals);
  EXPECT_EQ(c->Scalar("SELECT owner FROM acc WHERE id = 4242"), owner4242);
  Rows replicas_after;
  ASSERT_EQ(c->Exec(replicas_of_moved, &replicas_after), "");
  EXPECT_EQ(replicas_after, replicas) << "the replica set and its epoch survive a master restart";
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM log"), std::to_string(logged));
  Rows after;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id, lo, hi FROM wattdb_segments ORDER BY segment_id",
                    &after),
            "");
  // The map survived: every segment is still there, on its node, from the same low key. (The
  // new master's maintenance may already have split an oversized one, adding boundaries.)
  std::map<std::string, std::vector<std::string>> after_by_id;
  for (const auto& r : after) after_by_id[r[0]] = r;
  for (const auto& r : before) {
    ASSERT_TRUE(after_by_id.count(r[0])) << "segment " << r[0] << " is gone";
    EXPECT_EQ(after_by_id[r[0]][1], r[1]) << "segment " << r[0] << " changed node";
    EXPECT_EQ(after_by_id[r[0]][2], r[2]) << "segment " << r[0] << " changed its low key";
  }
  Rows groups_after;
  ASSERT_EQ(c->Exec("SELECT owner, count(*), sum(balance) FROM acc GROUP BY owner ORDER BY owner",
                    &groups_after),
            "");
  EXPECT_EQ(groups_before, groups_after);
  // New writes after the restart get fresh timestamps and are visible.
  ASSERT_EQ(c->Exec("INSERT INTO acc VALUES (100001, 'late', 5)"), "");
  EXPECT_EQ(c->Scalar("SELECT balance FROM acc WHERE id = 100001"), "5");
}

TEST(Cluster, BadInputIsContained) {
  MiniCluster cluster(MiniClusterOptions{2, 1 << 20, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (a INT PRIMARY KEY, b TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t VALUES (1, 'x'), (2, 'y')"), "");
  std::string msg;
  EXPECT_EQ(c->Exec("SELEC 1", nullptr, &msg), sqlstate::kSyntaxError);
  EXPECT_EQ(c->Exec("SELECT * FROM nope"), sqlstate::kUndefinedTable);
  EXPECT_EQ(c->Exec("SELECT zz FROM t"), sqlstate::kUndefinedColumn);
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (1, 'dup')"), sqlstate::kUniqueViolation);
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES ('one', 'z')"), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (3, true)"), "");  // bool to text is an assignment cast
  EXPECT_EQ(c->Exec("SELECT a FROM t WHERE b"), sqlstate::kDatatypeMismatch);
  // Clauses we do not have yet are named (0A000), not reported as syntax errors.
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (7, 'x') ON CONFLICT DO NOTHING", nullptr, &msg),
            sqlstate::kFeatureNotSupported)
      << msg;
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (7, 'x') RETURNING a", nullptr, &msg),
            sqlstate::kFeatureNotSupported)
      << msg;
  EXPECT_EQ(c->Scalar("SELECT ARRAY[1, 2]"), "{1,2}");
  EXPECT_EQ(c->Exec("SELECT ARRAY[1, 'x']", nullptr, &msg), sqlstate::kInvalidTextRepresentation)
      << msg;
  EXPECT_EQ(c->Exec("CREATE TABLE arr (a INT PRIMARY KEY, b INT[][])", nullptr, &msg),
            sqlstate::kFeatureNotSupported)
      << msg;
  EXPECT_EQ(c->Exec("COPY (SELECT 1) TO STDOUT", nullptr, &msg), sqlstate::kFeatureNotSupported)
      << msg;
  // A multi-row insert that fails on one row leaves nothing behind.
  EXPECT_EQ(c->Exec("INSERT INTO t VALUES (10, 'a'), (2, 'dup'), (11, 'b')"),
            sqlstate::kUniqueViolation);
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t WHERE a >= 10"), "0");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "3");  // the connection is still usable

  // Garbage on the wire closes only that connection.
  for (const std::string& junk :
       {std::string("\x00\x00\x00\x02", 4), std::string("GET / HTTP/1.1\r\n\r\n"),
        std::string("\x00\x00\x00\x08\x04\xd2\x16\x2f", 8) + "Q\xff\xff\xff\xff"}) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(cluster.pg_port());
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ASSERT_EQ(write(fd, junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
    shutdown(fd, SHUT_WR);
    char buf[256];
    while (read(fd, buf, sizeof(buf)) > 0) {
    }
    close(fd);
  }
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM t"), "3");
  // psql's catalog queries work; a bad regular expression is a clean error.
  EXPECT_EQ(
      c->Scalar("SELECT string_agg(c.relname, ',') FROM pg_catalog.pg_class c JOIN pg_namespace n "
                "ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relname !~ '^pg_'"),
      "t,t_pkey");
  EXPECT_EQ(c->Exec("SELECT 'a' ~ '('", nullptr, &msg), sqlstate::kInvalidRegularExpression) << msg;
  EXPECT_EQ(c->Scalar("SELECT columns FROM wattdb_tables WHERE table_name = 't'"),
            "a integer not null, b text");
  // Telemetry reaches the views: every node heartbeats with its utilization, and segment
  // write counters count the rows written.
  EXPECT_TRUE(
      cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE heartbeats > 1 AND rss_bytes > 0 "
                      "AND mem_available_bytes > 0 AND disk_bytes > 0",
                      "2", 10000));
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT sum(rows_written) FROM wattdb_segments WHERE table_name = 't'", "3", 10000));
  // EXPLAIN shows where operators run; EXPLAIN ANALYZE counts the rows each produced.
  Rows plan;
  ASSERT_EQ(c->Exec("EXPLAIN SELECT b FROM t WHERE a = 2", &plan), "");
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_NE(plan[0][0].find("Exchange  (on master)"), std::string::npos) << plan[0][0];
  // A point lookup on the whole key is estimated at one row.
  EXPECT_NE(plan[3][0].find("Scan t (key range pruned)  (rows=1)  (on nodes"), std::string::npos)
      << plan[3][0];
  // A join whose outer side is one row looks the inner rows up by key; a join of two whole
  // tables hashes one of them.
  ASSERT_EQ(c->Exec("CREATE TABLE u (a INT, b INT, note TEXT, PRIMARY KEY (a, b))"), "");
  ASSERT_EQ(c->Exec("INSERT INTO u VALUES (1, 1, 'p'), (1, 2, 'q'), (2, 1, 'r')"), "");
  ASSERT_EQ(c->Exec("INSERT INTO u SELECT 3, g, 's' FROM generate_series(1, 100) g"),
            "");  // worth a lookup
  ASSERT_EQ(c->Exec("EXPLAIN SELECT u.note FROM t, u WHERE t.a = 1 AND u.a = t.a", &plan), "");
  EXPECT_NE(plan[1][0].find("IndexJoin inner on u keys=[#0]"), std::string::npos) << plan[1][0];
  Rows joined;
  ASSERT_EQ(c->Exec("SELECT u.note FROM t, u WHERE t.a = 1 AND u.a = t.a ORDER BY 1", &joined), "");
  EXPECT_EQ(joined, (Rows{{"p"}, {"q"}}));
  ASSERT_EQ(c->Exec("EXPLAIN SELECT u1.note FROM u u1, u u2 WHERE u1.b = u2.b", &plan), "");
  std::string text;
  for (const auto& r : plan) text += r[0] + "\n";
  EXPECT_NE(text.find("  ->  HashJoin"), std::string::npos) << text;
  // ANALYZE counts rows for the planner's estimates.
  ASSERT_EQ(c->Exec("ANALYZE t"), "");
  ASSERT_EQ(c->Exec("EXPLAIN SELECT b FROM t", &plan), "");
  EXPECT_NE(plan.back()[0].find("Scan t  (rows=3)"), std::string::npos) << plan.back()[0];
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT count(*) FROM t", &plan), "");
  EXPECT_NE(plan[1][0].find("FinalAggregate"), std::string::npos) << plan[1][0];
  EXPECT_NE(plan[1][0].find("actual rows=1 "), std::string::npos) << plan[1][0];
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = off"), "");
  ASSERT_EQ(c->Exec("EXPLAIN ANALYZE SELECT count(*) FROM t", &plan), "");
  EXPECT_NE(plan[2][0].find("actual rows=3 "), std::string::npos) << plan[2][0];
  ASSERT_EQ(c->Exec("SET wattdb_pushdown = on"), "");
  EXPECT_NE(plan.back()[0].find("Execution Time"), std::string::npos);
  auto fresh = cluster.Connect();
  EXPECT_EQ(fresh->Scalar("SELECT b FROM t WHERE a = 2"), "y");
}

}  // namespace
}  // namespace wattdb::testing
