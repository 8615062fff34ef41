#include "node/plan_cache.h"

#include <gtest/gtest.h>

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
  filter->predicate = plan::MakeBinary(plan::BinOp::kEq, plan::MakeColumn(0, SqlType{TypeId::kInt32}),
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

}  // namespace
}  // namespace wattdb::node
