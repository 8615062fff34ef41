// Snapshot isolation across nodes: concurrent transfers in transaction blocks, readers that
// must always see the same total, and segment moves underneath.
#include <atomic>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

constexpr int kAccounts = 300;
constexpr int kInitial = 1000;

TEST(Bank, TransfersKeepTheTotalUnderConcurrencyAndMoves) {
  MiniCluster cluster(MiniClusterOptions{3, 4096, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE acc (id INT PRIMARY KEY, balance BIGINT, note TEXT)"), "");
  std::string sql = "INSERT INTO acc VALUES ";
  for (int i = 0; i < kAccounts; i++) {
    sql += fmt::format("{}({}, {}, 'account number {} with some padding')", i ? "," : "", i,
                       kInitial, i);
  }
  ASSERT_EQ(c->Exec(sql), "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(*) FROM wattdb_partitions WHERE table_name = 'acc'",
                              "3", 30000));
  const std::string total = std::to_string(kAccounts * kInitial);

  std::atomic<bool> stop{false};
  std::atomic<int> committed{0}, retried{0}, other_errors{0}, sums{0}, bad_sums{0};
  std::string last_error;
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; w++) {
    threads.emplace_back([&, w] {
      auto tc = cluster.Connect();
      std::mt19937 rng(w + 1);
      for (int i = 0; i < 60; i++) {
        int from = static_cast<int>(rng() % kAccounts), to = static_cast<int>(rng() % kAccounts);
        int amount = 1 + static_cast<int>(rng() % 50);
        if (from == to) continue;
        for (int attempt = 0; attempt < 50; attempt++) {
          std::string msg;
          std::string st = Transfer(*tc, from, to, amount, &msg);
          if (st.empty()) {
            committed++;
            break;
          }
          if (st == sqlstate::kSerializationFailure) {
            retried++;
            continue;
          }
          other_errors++;
          last_error = st + " " + msg;
          break;
        }
      }
    });
  }
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&, r] {
      auto rc = cluster.Connect();
      while (!stop) {
        if (r == 0) {
          std::string s = rc->Scalar("SELECT sum(balance) FROM acc");
          sums++;
          if (s != total) bad_sums++;
        } else {
          // Two reads inside one transaction see the same snapshot.
          rc->Exec("BEGIN");
          std::string a = rc->Scalar("SELECT sum(balance) FROM acc");
          std::string b = rc->Scalar("SELECT sum(balance) FROM acc WHERE id >= 0");
          rc->Exec("COMMIT");
          sums += 2;
          if (a != total || b != total) bad_sums++;
        }
      }
    });
  }
  // Moves underneath: they wait for the transactions that hold their segments.
  std::vector<std::vector<std::string>> segs;
  ASSERT_EQ(c->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 'acc' "
                    "ORDER BY segment_id",
                    &segs),
            "");
  for (size_t i = 0; i < segs.size() && i < 6; i += 2) {
    std::string msg;
    std::string st = c->Exec(fmt::format("ALTER TABLE acc MOVE SEGMENT {} TO NODE {}", segs[i][0],
                                         std::stoi(segs[i][1]) % 3 + 1),
                             nullptr, &msg);
    EXPECT_TRUE(st.empty() || st == sqlstate::kObjectInUse)
        << st << " " << msg;  // 55006: undecided writes, try later
  }
  for (int w = 0; w < 4; w++) threads[w].join();
  stop = true;
  for (size_t t = 4; t < threads.size(); t++) threads[t].join();

  EXPECT_EQ(other_errors.load(), 0) << last_error;
  EXPECT_GT(committed.load(), 150);
  EXPECT_GT(sums.load(), 0);
  EXPECT_EQ(bad_sums.load(), 0);
  EXPECT_EQ(c->Scalar("SELECT sum(balance) FROM acc"), total);
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM acc"), std::to_string(kAccounts));
  std::printf("transfers committed=%d retried_after_40001=%d sums_checked=%d\n", committed.load(),
              retried.load(), sums.load());
}

TEST(Bank, SelectForUpdateLocksRowsUntilCommit) {
  MiniCluster cluster(MiniClusterOptions{2, 4 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect();
  auto b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE acct (id INT PRIMARY KEY, bal INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO acct VALUES (1, 100), (2, 200)"), "");
  // b's snapshot (one for the block: REPEATABLE READ) predates a's locking read.
  ASSERT_EQ(b->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  EXPECT_EQ(b->Scalar("SELECT bal FROM acct WHERE id = 2"), "200");
  ASSERT_EQ(a->Exec("BEGIN"), "");
  std::vector<std::vector<std::string>> rows;
  ASSERT_EQ(a->Exec("SELECT id, bal FROM acct AS x WHERE x.id = 1 FOR UPDATE", &rows), "");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][1], "100");
  // While a holds the row, a second locker waits for a to end, then locks a's committed row.
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("BEGIN"), "");
  std::string locked;
  std::thread locker([&] { locked = c->Scalar("SELECT bal FROM acct WHERE id = 1 FOR UPDATE"); });
  EXPECT_TRUE(cluster.WaitFor("SELECT sum(lock_waits) FROM wattdb_nodes", "1", 10000));
  ASSERT_EQ(a->Exec("UPDATE acct SET bal = bal - 10 WHERE id = 1"), "");
  ASSERT_EQ(a->Exec("COMMIT"), "");
  locker.join();
  EXPECT_EQ(locked, "90");
  ASSERT_EQ(c->Exec("ROLLBACK"), "");
  // b's snapshot does not include a's write: locking that row now fails; rows a never
  // touched lock fine.
  EXPECT_EQ(b->Exec("SELECT bal FROM acct WHERE id = 2 FOR UPDATE"), "");
  EXPECT_EQ(b->Exec("SELECT bal FROM acct WHERE id = 1 FOR UPDATE"),
            sqlstate::kSerializationFailure);
  ASSERT_EQ(b->Exec("ROLLBACK"), "");
  // Under READ COMMITTED the locking read is re-run on a snapshot that sees a's commit.
  ASSERT_EQ(b->Exec("BEGIN"), "");
  EXPECT_EQ(b->Scalar("SELECT bal FROM acct WHERE id = 1"), "90");
  ASSERT_EQ(a->Exec("UPDATE acct SET bal = bal - 5 WHERE id = 1"), "");
  EXPECT_EQ(b->Scalar("SELECT bal FROM acct WHERE id = 1 FOR UPDATE"), "85");
  ASSERT_EQ(b->Exec("ROLLBACK"), "");
  EXPECT_EQ(a->Scalar("SELECT bal FROM acct WHERE id = 1 FOR UPDATE"), "85");
  EXPECT_EQ(a->Exec("SELECT * FROM acct a1, acct a2 FOR UPDATE"), sqlstate::kFeatureNotSupported);
}

TEST(Bank, VacuumReclaimsOldVersionsButKeepsOpenSnapshots) {
  MiniCluster cluster(MiniClusterOptions{2, 8 << 20, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect(), reader = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE g (id INT PRIMARY KEY, pad TEXT)"), "");
  std::string sql = "INSERT INTO g VALUES ";
  for (int i = 0; i < 200; i++)
    sql += fmt::format("{}({}, '{}')", i ? "," : "", i, std::string(200, 'a'));
  ASSERT_EQ(c->Exec(sql), "");
  // A transaction that started before the updates must keep seeing the original rows.
  ASSERT_EQ(reader->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ"), "");
  ASSERT_EQ(reader->Scalar("SELECT count(*) FROM g WHERE pad LIKE 'a%'"), "200");
  for (int round = 0; round < 30; round++) {
    ASSERT_EQ(c->Exec(fmt::format("UPDATE g SET pad = '{}'",
                                  std::string(200, static_cast<char>('b' + round % 20)))),
              "");
  }
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT sum(bytes) > 1000000 FROM wattdb_segments WHERE table_name = 'g'", "t", 10000))
      << c->Scalar("SELECT sum(bytes) FROM wattdb_segments WHERE table_name = 'g'");
  ASSERT_EQ(c->Exec("VACUUM g"), "");
  EXPECT_EQ(reader->Scalar("SELECT count(*) FROM g WHERE pad LIKE 'a%'"),
            "200");  // its versions survived
  ASSERT_EQ(reader->Exec("COMMIT"), "");
  // With no old snapshot left, VACUUM reclaims the shadowed versions.
  ASSERT_EQ(c->Exec("VACUUM"), "");
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT sum(bytes) < 200000 FROM wattdb_segments WHERE table_name = 'g'", "t", 10000))
      << c->Scalar("SELECT sum(bytes) FROM wattdb_segments WHERE table_name = 'g'");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM g"), "200");
  EXPECT_EQ(c->Scalar(fmt::format("SELECT count(*) FROM g WHERE pad = '{}'",
                                  std::string(200, 'b' + 29 % 20))),
            "200");
}

// Rows under hidden keys (a table without a primary key) are written without a uniqueness
// read, their keys being drawn fresh by the master; they still count in the table's row
// estimate, in a block as alone, and never collide.
TEST(Bank, RowsUnderHiddenKeysCountInTheRowEstimate) {
  MiniCluster cluster(MiniClusterOptions{2, 8 << 20, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE h (a INT, b TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO h VALUES (1, 'x'), (2, 'y'), (3, 'z')"), "");
  ASSERT_EQ(c->Exec("INSERT INTO h SELECT g, 'w' FROM generate_series(1, 50) g"), "");
  EXPECT_EQ(c->Scalar("SELECT reltuples FROM pg_class WHERE relname = 'h'"), "53");
  ASSERT_EQ(c->Exec("DELETE FROM h WHERE a <= 2"), "");
  ASSERT_EQ(c->Exec("BEGIN"), "");
  ASSERT_EQ(c->Exec("INSERT INTO h VALUES (7, 'q'), (7, 'q')"), "");
  ASSERT_EQ(c->Exec("COMMIT"), "");
  EXPECT_EQ(c->Scalar("SELECT reltuples FROM pg_class WHERE relname = 'h'"), "51");
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || count(DISTINCT a) FROM h"), "51 48");
}

TEST(Bank, MoveGivesUpOnAnIdleTransactionAndSucceedsAfterIt) {
  MiniClusterOptions o{2, 1 << 20, 200};
  o.latch_wait_ms = 300;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto a = cluster.Connect(), b = cluster.Connect();
  ASSERT_EQ(a->Exec("CREATE TABLE k (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(a->Exec("INSERT INTO k VALUES (1, 1), (2, 2)"), "");
  std::string seg = a->Scalar("SELECT segment_id FROM wattdb_segments WHERE table_name = 'k'");
  int to = 3 - std::stoi(a->Scalar("SELECT node_id FROM wattdb_segments WHERE table_name = 'k'"));
  ASSERT_EQ(a->Exec("BEGIN"), "");
  ASSERT_EQ(a->Exec("UPDATE k SET v = 10 WHERE id = 1"), "");
  // The transaction sits idle holding the segment: the move gives up with 55006...
  std::string msg;
  EXPECT_EQ(
      b->Exec(fmt::format("ALTER TABLE k MOVE SEGMENT {} TO NODE {}", seg, to), nullptr, &msg),
      sqlstate::kObjectInUse)
      << msg;
  // ...and other work is not blocked meanwhile.
  EXPECT_EQ(b->Scalar("SELECT v FROM k WHERE id = 1"), "1");
  ASSERT_EQ(a->Exec("COMMIT"), "");
  ASSERT_EQ(
      b->Exec(fmt::format("ALTER TABLE k MOVE SEGMENT {} TO NODE {}", seg, to), nullptr, &msg), "")
      << msg;
  EXPECT_EQ(b->Scalar("SELECT v FROM k WHERE id = 1"), "10");
  EXPECT_EQ(
      b->Scalar(fmt::format("SELECT node_id FROM wattdb_segments WHERE segment_id = {}", seg)),
      std::to_string(to));
}

}  // namespace
}  // namespace wattdb::testing
