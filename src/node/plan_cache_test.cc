#include "node/plan_cache.h"

#include <gtest/gtest.h>

#include "common/codec.h"
#include "query/plan/expr.h"
#include "query/plan/query_binder.h"

namespace wattdb::node {
namespace {

// A Filter ($1 = column 0) over a Scan of table `table`, serialized.
std::string PlanBytes(TableId table) {
  auto scan = std::make_unique<plan::PlanNode>();
  scan->kind = plan::PlanNode::Kind::kScan;
  scan->table = table;
  scan->types = {SqlType{TypeId::kInt32}};
  auto filter = plan::Wrap(plan::PlanNode::Kind::kFilter, std::move(scan));
  filter->predicate =
      plan::MakeBinary(plan::BinOp::kEq, plan::MakeColumn(0, SqlType{TypeId::kInt32}),
                       plan::MakeParam(0, SqlType{TypeId::kInt32}), SqlType{TypeId::kBool});
  std::string out;
  filter->Serialize(&out);
  return out;
}

TEST(PlanCacheTest, APlanIsDecodedOnceAndAnsweredByItsWholeBytes) {
  PlanCache cache(2);
  std::string a = PlanBytes(1), b = PlanBytes(2);
  ASSERT_NE(a, b);
  auto first = cache.Get(a);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  for (int i = 0; i < 5; i++) {
    auto again = cache.Get(a);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->get(), first->get()) << "the same decoded plan";
  }
  EXPECT_EQ(cache.decodes(), 1u);
  auto other = cache.Get(b);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->get(), first->get());
  EXPECT_EQ((*other)->children[0]->table, 2u);
  EXPECT_EQ(cache.decodes(), 2u);
  // Bytes that do not decode: an error, and nothing kept.
  EXPECT_FALSE(cache.Get(a.substr(0, a.size() / 2)).ok());
  EXPECT_FALSE(cache.Get("").ok());
  EXPECT_EQ(cache.size(), 2u);
  // Full: a new plan starts the cache over; plans handed out stay valid.
  auto third = cache.Get(PlanBytes(3));
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ((*first)->children[0]->table, 1u);
  ASSERT_TRUE(cache.Get(a).ok());
  EXPECT_EQ(cache.decodes(), 4u);
}

// A request's plan comes from the cache only with parameter values (a prepared statement's,
// sent again and again), which are decoded; without them it is decoded each time.
TEST(PlanCacheTest, ARequestsPlanWithValuesIsCachedAndItsValuesDecoded) {
  PlanCache cache;
  std::string bytes = PlanBytes(4);
  std::string encoded;
  EncodeRow({Value::Int32(7), Value::Text("x")}, &encoded);
  std::string_view values = encoded;
  std::vector<Value> params;
  for (int i = 0; i < 3; i++) {
    auto p = RequestPlan(cache, bytes, &values, &params);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_EQ((*p)->children[0]->table, 4u);
  }
  EXPECT_EQ(cache.decodes(), 1u);
  ASSERT_EQ(params.size(), 2u);
  EXPECT_EQ(params[0].as_int(), 7);
  EXPECT_EQ(params[1].as_text(), "x");
  for (int i = 0; i < 2; i++) EXPECT_TRUE(RequestPlan(cache, bytes, nullptr, &params).ok());
  EXPECT_EQ(cache.decodes(), 1u) << "a plan without values is not kept";
  std::string_view bad = std::string_view(encoded).substr(0, encoded.size() - 1);
  EXPECT_EQ(RequestPlan(cache, bytes, &bad, &params).status().code(), Status::Code::kCorruption);
  EXPECT_FALSE(RequestPlan(cache, "nonsense", nullptr, &params).ok());
}

}  // namespace
}  // namespace wattdb::node
