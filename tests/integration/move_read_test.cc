// Reads while segments split and move, back and forth between nodes: transfers between
// accounts commit on several nodes at once, and every total a statement reads (an aggregate
// pushed to the nodes, filtered or not, and one over the Gather path) must be the invariant.
// WATTDB_MOVE_READ_SECONDS sets how long the moves go on (default 12).
#include <atomic>
#include <chrono>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

int Seconds() {
  const char* s = getenv("WATTDB_MOVE_READ_SECONDS");
  return s && atoi(s) > 0 ? atoi(s) : 12;
}

// With replicas, a move to a follower hands leadership over, and splits and other moves copy
// the followers again: no reader may see a follower's copy as a second one, nor a stale one.
class MoveRead : public ::testing::TestWithParam<int> {};

TEST_P(MoveRead, TotalsStayExactWhileSegmentsSplitAndMoveBackAndForth) {
  MiniClusterOptions o;
  o.nodes = 4;
  o.segment_bytes = 16 << 10;  // updates add versions: segments split as the test runs
  o.telemetry_interval_ms = 200;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  constexpr int kAccounts = 3000;
  ASSERT_EQ(
      c->Exec(fmt::format(
          "CREATE TABLE acc (id INT PRIMARY KEY, balance BIGINT, note TEXT) WITH (replicas = {})",
          GetParam())),
      "");
  ASSERT_EQ(c->Exec(fmt::format(
                "INSERT INTO acc SELECT g, 1000, repeat('x', 80) FROM generate_series(0, {}) g",
                kAccounts - 1)),
            "");
  ASSERT_TRUE(cluster.WaitFor("SELECT count(DISTINCT node_id) FROM wattdb_segments", "4", 30000));
  const std::string total = std::to_string(kAccounts * 1000);

  std::atomic<bool> stop{false};
  std::atomic<int> committed{0}, moves{0}, sums{0}, errors{0};
  std::mutex mu;
  std::vector<std::string> bad;  // the wrong totals, with the query that read them
  std::string last_error;
  auto fail = [&](const std::string& what) {
    errors++;
    std::lock_guard<std::mutex> l(mu);
    last_error = what;
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; w++) {
    threads.emplace_back([&, w] {
      auto tc = cluster.Connect();
      std::mt19937 rng(w + 11);
      while (!stop) {
        int from = static_cast<int>(rng() % kAccounts), to = static_cast<int>(rng() % kAccounts);
        if (from == to) continue;
        std::string msg;
        std::string st = Transfer(*tc, from, to, 7, &msg);
        if (st.empty()) {
          committed++;
          continue;
        }
        if (st != sqlstate::kSerializationFailure && st != sqlstate::kDeadlockDetected)
          fail(st + " " + msg);
      }
    });
  }
  const std::vector<std::string> queries = {
      "SELECT sum(balance) FROM acc WHERE note LIKE 'x%'",
      "SELECT sum(balance) FROM acc",
      "SELECT sum(balance) FROM acc WHERE id >= 0",
  };
  for (size_t r = 0; r < 4; r++) {
    threads.emplace_back([&, r] {
      auto rc = cluster.Connect();
      if (r == 3) (void)rc->Exec("SET wattdb_pushdown = scan");  // the Gather path
      size_t i = r;
      while (!stop) {
        const std::string& q = queries[i++ % queries.size()];
        std::string msg;
        std::vector<std::vector<std::string>> rows;
        std::string st = rc->Exec(q, &rows, &msg);
        sums++;
        if (!st.empty()) {
          fail(st + " " + msg);
        } else if (rows.size() != 1 || rows[0][0] != total) {
          std::lock_guard<std::mutex> l(mu);
          bad.push_back(
              fmt::format("{} (reader {}): {}", q, r, rows.empty() ? "no row" : rows[0][0]));
        }
      }
    });
  }
  // The mover: segments to random other nodes, one at a time, as the controller's refills do.
  auto mover = cluster.Connect();
  std::mt19937 rng(5);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(Seconds());
  while (std::chrono::steady_clock::now() < end) {
    std::vector<std::vector<std::string>> segs;
    ASSERT_EQ(
        mover->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 'acc'",
                    &segs),
        "");
    ASSERT_FALSE(segs.empty());
    const auto& s = segs[rng() % segs.size()];
    int node = (std::stoi(s[1]) + static_cast<int>(rng() % 3)) % 4 + 1;
    std::string msg;
    std::string st = mover->Exec(
        fmt::format("ALTER TABLE acc MOVE SEGMENT {} TO NODE {}", s[0], node), nullptr, &msg);
    if (st.empty()) {
      moves++;
    } else if (st != sqlstate::kObjectInUse && st != sqlstate::kUndefinedObject &&
               st != sqlstate::kObjectNotInPrerequisiteState) {  // busy, split meanwhile
      fail("move: " + st + " " + msg);
    }
  }
  stop = true;
  for (auto& t : threads) t.join();
  std::string bad_list;
  for (const auto& b : bad) bad_list += b + "\n";
  EXPECT_TRUE(bad.empty()) << bad.size() << " wrong totals of " << sums.load() << ":\n" << bad_list;
  EXPECT_EQ(errors.load(), 0) << last_error << "\n"
                              << cluster.LogLines("node down") << cluster.LogLines(" W ");
  EXPECT_GT(committed.load(), 0);
  EXPECT_GT(moves.load(), 0);
  EXPECT_EQ(c->Scalar("SELECT count(*) || ' ' || sum(balance) FROM acc"),
            fmt::format("{} {}", kAccounts, total));
  std::printf("transfers=%d moves=%d totals read=%d segments=%s replicas=%s\n", committed.load(),
              moves.load(), sums.load(),
              c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 'acc'").c_str(),
              c->Scalar("SELECT count(*) FROM wattdb_replicas WHERE table_name = 'acc'").c_str());
}

INSTANTIATE_TEST_SUITE_P(Copies, MoveRead, ::testing::Values(1, 2),
                         [](const auto& p) { return fmt::format("replicas_{}", p.param); });

}  // namespace
}  // namespace wattdb::testing
