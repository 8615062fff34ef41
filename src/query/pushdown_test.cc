// Plans split into fragments below Exchanges (pushdown, scan-only pushdown with Gathers,
// offloading) give the answers of the plan run in one piece.
#include <gtest/gtest.h>

#include "query/mem_catalog_test_util.h"

namespace wattdb {
namespace {

using test::MemCatalog;
using test::RunSql;

// Fragments pushed below an Exchange (run whole, or per segment with partial and final
// aggregation) give the answers of the plan run in one piece.
// Runs `q` whole, then pushed down (`options`, or every fragment) with its fragments run in
// place and then once per segment (MemCatalog::ship), the plans serialized and read back if
// `roundtrip`; expects the answers of the whole plan. `plans` receives the two plans.
void ExpectPushedAnswersAsWhole(const char* q, bool roundtrip, const plan::PushDownOptions* options,
                                std::vector<std::string>* plans) {
  MemCatalog cat;
  auto whole = RunSql(cat, q);
  ASSERT_TRUE(whole.ok()) << q << ": " << whole.status().ToString();
  for (bool ship : {false, true}) {
    cat.ship = ship;
    std::string plan;
    auto pushed = RunSql(cat, q, roundtrip, true, &plan, false, options);
    ASSERT_TRUE(pushed.ok()) << q << ": " << pushed.status().ToString();
    EXPECT_EQ(*pushed, *whole) << q << (ship ? " (per segment)" : "") << "\n" << plan;
    plans->push_back(plan);
  }
}

// wattdb_pushdown = scan: only scans, filters and projections go to the nodes.
plan::PushDownOptions ScanOnly() {
  plan::PushDownOptions o{[](const plan::PlanNode&) { return true; }};
  o.blocking = false;
  return o;
}

TEST(Select, PushedDownFragmentsGiveTheSameAnswers) {
  const char* queries[] = {
      "SELECT count(*), sum(v), avg(v), min(grp), max(d), count(v), avg(d), sum(d) FROM t",
      "SELECT grp, count(*), sum(v), avg(id), min(d), max(v) FROM t WHERE id % 7 <> 3 GROUP BY grp "
      "ORDER BY grp",
      "SELECT count(*), sum(v) FROM t WHERE id > 5000",
      "SELECT v % 10, count(*) FROM t GROUP BY v % 10 ORDER BY 1",
      "SELECT id, v * 2 FROM t WHERE d > 600 ORDER BY id",
      "SELECT grp, count(DISTINCT v), string_agg(grp, ',') FROM t WHERE id < 20 GROUP BY grp ORDER "
      "BY grp",
      "SELECT id FROM t WHERE v > (SELECT avg(v) FROM t) ORDER BY id DESC LIMIT 3",
      "SELECT grp, sum(v) FROM t GROUP BY grp HAVING sum(v) > 1000 ORDER BY 2 DESC",
      "SELECT id, grp, v FROM t WHERE id > 10 ORDER BY grp DESC, v NULLS FIRST LIMIT 7 OFFSET 3",
      "SELECT v, d FROM t ORDER BY v DESC LIMIT 5",
  };
  for (const char* q : queries) {
    std::vector<std::string> plans;
    ASSERT_NO_FATAL_FAILURE(ExpectPushedAnswersAsWhole(q, false, nullptr, &plans));
    for (const auto& plan : plans) EXPECT_NE(plan.find("Exchange"), std::string::npos) << plan;
  }
  std::string plan;
  MemCatalog cat;
  ASSERT_TRUE(
      RunSql(cat, "SELECT grp, sum(v) FROM t WHERE id > 3 GROUP BY grp", false, true, &plan).ok());
  EXPECT_NE(plan.find("FinalAggregate"), std::string::npos) << plan;
  EXPECT_LT(plan.find("Exchange"), plan.find("PartialAggregate")) << plan;
  EXPECT_LT(plan.find("PartialAggregate"), plan.find("Filter")) << plan;
  ASSERT_TRUE(RunSql(cat, "SELECT id FROM t ORDER BY v LIMIT 4 OFFSET 2", false, true, &plan).ok());
  EXPECT_LT(plan.find("Exchange"), plan.find("Limit 6 offset 0")) << plan;  // a top-N on each node
  // DISTINCT aggregates stay whole, above the exchange.
  ASSERT_TRUE(RunSql(cat, "SELECT count(DISTINCT v) FROM t", false, true, &plan).ok());
  EXPECT_EQ(plan.find("PartialAggregate"), std::string::npos) << plan;
}

// Aggregates without GROUP BY over typed batches of every length, with and without NULLs:
// the loops that take four rows a step (min, max) and sum narrow integers in 64 bits must
// count every row once, skip NULLs, and keep the sign.
TEST(Select, AggregatesWithoutGroupsCountEveryRowOfEveryBatchLength) {
  MemCatalog cat;
  plan::PushDownOptions scan_only = ScanOnly();
  // As received from nodes too: only scans and projections there, the columns aggregated as
  // they arrive (w, in no order, still packed: offsets of 1 or 2 bytes a row from a base,
  // negative in most batches; keys and v as differences, unpacked).
  for (bool shipped : {false, true})
    for (int n : {1, 2, 3, 4, 5, 7, 9, 10, 11, 13, 2499, 2500}) {
      int64_t count_v = 0, sum_v = 0, min_v = INT64_MAX, max_v = INT64_MIN;
      int64_t sum_w = 0, min_w = INT64_MAX, max_w = INT64_MIN;
      for (int i = 1; i <= n; i++) {
        int64_t w = i * 37 % 1001 - 500;
        sum_w += w;
        min_w = std::min(min_w, w);
        max_w = std::max(max_w, w);
        if (i % 10 == 0) continue;  // v is NULL there
        count_v++;
        sum_v += 2 * i;
        min_v = std::min<int64_t>(min_v, 2 * i);
        max_v = std::max<int64_t>(max_v, 2 * i);
      }
      cat.ship = shipped;
      auto r = RunSql(
          cat,
          fmt::format(
              "SELECT count(id), sum(id), min(id), max(id), min(-id), max(-id), count(v), sum(v), "
              "min(v), max(v), min(-v), max(-v), count(w), sum(w), min(w), max(w), avg(w) FROM t "
              "WHERE id <= {}",
              n),
          false, shipped, nullptr, false, &scan_only);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      auto r_avg = RunSql(
          cat, fmt::format("SELECT avg(w) FROM t WHERE id <= {}", n));  // as the master computes it
      ASSERT_TRUE(r_avg.ok()) << r_avg.status().ToString();
      EXPECT_EQ((*r)[0], fmt::format("{}|{}|1|{}|{}|-1|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", n,
                                     int64_t{n} * (n + 1) / 2, n, -n, count_v, sum_v, min_v, max_v,
                                     -max_v, -min_v, n, sum_w, min_w, max_w, (*r_avg)[0]))
          << n << (shipped ? " shipped" : "");
    }
  cat.ship = false;
  // Only NULLs: counted as none, no extreme.
  auto r = RunSql(cat, "SELECT count(v), sum(v), min(v), max(v) FROM t WHERE id % 10 = 0");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0], "0|NULL|NULL|NULL");
}

// Filters and projections only on the nodes (wattdb_pushdown = scan): an aggregation that
// splits still does, its partial half over each segment's rows apart (a Gather, run in place
// by a provider without threads), with the answers of the whole plan.
TEST(Select, ScanOnlyPushdownGathersTheAggregationsPartialHalf) {
  plan::PushDownOptions scan_only = ScanOnly();
  const char* queries[] = {
      "SELECT count(*), sum(v), avg(v), min(grp), max(d), count(v), avg(d), sum(d) FROM t",
      "SELECT grp, count(*), sum(v), avg(id), min(d), max(v) FROM t WHERE id % 7 <> 3 GROUP BY grp "
      "ORDER BY grp",
      "SELECT v % 10, count(*) FROM t GROUP BY v % 10 ORDER BY 1",
      "SELECT grp, sum(v) FROM t GROUP BY grp HAVING sum(v) > 1000 ORDER BY 2 DESC",
      "SELECT max(length(grp)), sum(v * 2), min(w + 1), count(*) FROM t",
      "SELECT lower(grp), count(*), max(length(grp) + w) FROM t WHERE id > 7 GROUP BY lower(grp) "
      "ORDER BY 1",
  };
  for (const char* q : queries) {
    std::vector<std::string> plans;
    ASSERT_NO_FATAL_FAILURE(ExpectPushedAnswersAsWhole(q, true, &scan_only, &plans));
    for (const auto& plan : plans) {
      EXPECT_LT(plan.find("FinalAggregate"), plan.find("Gather per segment of t")) << plan;
      EXPECT_LT(plan.find("Gather per segment of t"), plan.find("PartialAggregate")) << plan;
      EXPECT_LT(plan.find("PartialAggregate"), plan.find("Exchange")) << plan;
      EXPECT_LT(plan.find("Exchange"), plan.find("Scan t")) << plan;
    }
  }
  MemCatalog cat;
  std::string plan;
  // Arguments and keys that are expressions are computed on the nodes, under the Exchange:
  // the values cross, not the columns they are made of.
  ASSERT_TRUE(
      RunSql(cat, "SELECT max(length(grp)), sum(v) FROM t", false, true, &plan, false, &scan_only)
          .ok());
  const size_t partial = plan.find("PartialAggregate"), exchange = plan.find("Exchange");
  ASSERT_LT(partial, exchange) << plan;
  EXPECT_EQ(plan.substr(partial, exchange - partial).find("length("), std::string::npos)
      << plan;  // reads #0
  EXPECT_LT(exchange, plan.rfind("Project")) << plan;
  EXPECT_LT(plan.rfind("Project"), plan.rfind("length(")) << plan;
  EXPECT_LT(plan.rfind("length("), plan.find("Scan t")) << plan;
  // DISTINCT aggregates stay whole; without the option, so does every aggregation.
  ASSERT_TRUE(
      RunSql(cat, "SELECT count(DISTINCT v) FROM t", false, true, &plan, false, &scan_only).ok());
  EXPECT_EQ(plan.find("Gather"), std::string::npos) << plan;
  scan_only.gather = false;
  ASSERT_TRUE(
      RunSql(cat, "SELECT grp, sum(v) FROM t GROUP BY grp", false, true, &plan, false, &scan_only)
          .ok());
  EXPECT_EQ(plan.find("Gather"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("PartialAggregate"), std::string::npos) << plan;
}

// Offload nodes wrap the largest subtree above the exchanges that a node can run and that
// holds a blocking operator; with no helper (this provider has none) it runs in place.
TEST(Select, OffloadWrapsTheBlockingPartAboveTheExchanges) {
  const char* queries[] = {
      "SELECT grp, count(*), sum(v) FROM t GROUP BY grp ORDER BY grp",
      "SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.v GROUP BY a.grp ORDER BY 1",
      "SELECT id, v FROM t WHERE id < 500 ORDER BY v DESC, id",
      "SELECT grp FROM t WHERE id < 50 UNION SELECT grp FROM t WHERE id > 1990 ORDER BY 1",
  };
  for (const char* q : queries) {
    MemCatalog cat;
    auto whole = RunSql(cat, q);
    ASSERT_TRUE(whole.ok()) << q << ": " << whole.status().ToString();
    std::string plan;
    auto offloaded = RunSql(cat, q, true, true, &plan, true);
    ASSERT_TRUE(offloaded.ok()) << q << ": " << offloaded.status().ToString();
    EXPECT_EQ(*offloaded, *whole) << q << "\n" << plan;
    EXPECT_EQ(plan.rfind("Offload", 0), 0u) << plan;  // at the root: all of it can run on a helper
    EXPECT_EQ(plan.find("Offload", 1), std::string::npos) << plan;
  }
  std::string plan;
  MemCatalog cat;
  // A subquery needs the master: the outer part stays there, and so does a plain scan.
  ASSERT_TRUE(RunSql(cat,
                     "SELECT id FROM t WHERE v > (SELECT avg(v) FROM t) ORDER BY id DESC LIMIT 3",
                     false, true, &plan, true)
                  .ok());
  EXPECT_NE(plan.rfind("Offload", 0), 0u) << plan;
  // Nothing worth moving: a plain scan, one state per segment to merge, the nodes' top-N rows.
  for (const char* q : {"SELECT id FROM t WHERE v > 3", "SELECT count(*), sum(v) FROM t",
                        "SELECT id FROM t ORDER BY v DESC, id LIMIT 5"}) {
    ASSERT_TRUE(RunSql(cat, q, false, true, &plan, true).ok());
    EXPECT_EQ(plan.find("Offload"), std::string::npos) << plan;
  }
  // A join's Exchanges in pre-order: the helper learns their segments in that order.
  auto stmts =
      sql::Parse("SELECT a.grp, b.v FROM t a JOIN t b ON a.id = b.v WHERE a.id < 10 AND b.id > 20");
  ASSERT_TRUE(stmts.ok());
  auto bound = plan::BindSelect(std::get<sql::SelectStmt>((*stmts)[0]), cat);
  ASSERT_TRUE(bound.ok());
  auto p =
      plan::PushDownFragments(std::move(bound->plan), {[](const plan::PlanNode&) { return true; }});
  auto xs = plan::Exchanges(*p);
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_NE(xs[0]->ToString().find("(#0 < 10)"), std::string::npos) << p->ToString();
  EXPECT_NE(xs[1]->ToString().find("(#0 > 20)"), std::string::npos) << p->ToString();
}

}  // namespace
}  // namespace wattdb
