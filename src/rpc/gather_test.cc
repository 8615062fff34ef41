#include "rpc/gather.h"

#include <gtest/gtest.h>

#include "common/codec.h"

namespace wattdb::rpc {
namespace {

// A table whose segments all live in this process: a part runs its fragment at once, so a
// worker may end before the Gather has started the others.
class LocalMap : public PartMap {
 public:
  explicit LocalMap(int segments) {
    for (int i = 0; i < segments; i++) {
      std::string lo, hi;
      if (i > 0) EncodeKeyValue(Value::Int64(i * 100), &lo);
      if (i + 1 < segments) EncodeKeyValue(Value::Int64((i + 1) * 100), &hi);
      segs_.push_back({static_cast<SegmentId>(i + 1), 1, lo, hi});
    }
  }
  std::vector<SegmentPlace> Segments(TableId, const std::string& lo,
                                     const std::string& hi) override {
    std::vector<SegmentPlace> out;
    for (const auto& s : segs_) {
      if ((hi.empty() || s.lo < hi) && (s.hi.empty() || lo < s.hi)) out.push_back(s);
    }
    return out;
  }
  Result<std::shared_ptr<NodeClient>> Client(NodeId) override {
    return Status::Unavailable("no nodes here");
  }
  bool IsLocal(NodeId) const override { return true; }
  Status RunLocal(SegmentId seg, const std::string&, const std::string&, const plan::PlanNode&,
                  const ExchangeOptions&, const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>*) override {
    exec::Batch b;
    b.Reset(1);
    for (int i = 0; i < 3; i++) b.AppendRow({Value::Int64(static_cast<int64_t>(seg) * 100 + i)});
    return emit(b);
  }

 private:
  std::vector<SegmentPlace> segs_;
};

// Gather(PartialAggregate count(*) (Exchange(Scan t))).
plan::PlanPtr CountPerSegment() {
  auto scan = std::make_unique<plan::PlanNode>();
  scan->kind = plan::PlanNode::Kind::kScan;
  scan->table = 1;
  scan->table_name = "t";
  scan->types = {SqlType{TypeId::kInt64}};
  auto x = std::make_unique<plan::PlanNode>();
  x->kind = plan::PlanNode::Kind::kExchange;
  x->types = scan->types;
  x->children.push_back(std::move(scan));
  auto partial = std::make_unique<plan::PlanNode>();
  partial->kind = plan::PlanNode::Kind::kAggregate;
  partial->agg_mode = plan::AggMode::kPartial;
  partial->types = {SqlType{TypeId::kText}};
  partial->aggs.push_back({plan::AggFunc::kCountStar, nullptr, SqlType{TypeId::kInt64}});
  partial->children.push_back(std::move(x));
  auto g = std::make_unique<plan::PlanNode>();
  g->kind = plan::PlanNode::Kind::kGather;
  g->table = 1;
  g->table_name = "t";
  g->types = partial->types;
  g->children.push_back(std::move(partial));
  return g;
}

// Every part's output comes once, whatever order the workers end in, and the source always
// ends: a worker that finished every part before the next was started once left the Gather
// waiting for a worker that never ran.
TEST(GatherSource, EveryPartIsReadOnceAndTheSourceEndsHoweverFastItsWorkersAre) {
  plan::PlanPtr gather = CountPerSegment();
  for (int segments : {2, 3, 5, 9}) {
    LocalMap map(segments);
    for (int run = 0; run < 2000; run++) {
      exec::ExecContext ctx;
      auto g = GatherSource::Open(map, *gather, ExchangeOptions(), ctx);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      ASSERT_NE(*g, nullptr);
      int rows = 0;
      exec::Batch b;
      while (true) {
        auto more = (*g)->Next(b);
        ASSERT_TRUE(more.ok()) << more.status().ToString();
        if (!*more) break;
        rows += static_cast<int>(b.rows);
      }
      ASSERT_EQ(rows, segments);  // one partial state per segment
      g->reset();                 // joins the workers
    }
  }
  // One segment: nothing to run apart; the caller runs the subtree in place.
  LocalMap one(1);
  exec::ExecContext ctx;
  auto g = GatherSource::Open(one, *gather, ExchangeOptions(), ctx);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g, nullptr);
}

}  // namespace
}  // namespace wattdb::rpc
