// RunScanPlan (a key write's row-at-a-time path) yields what RunFragment's operators yield.
#include "node/fragment_runner.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "query/plan/expr.h"
#include "query/plan/query_binder.h"

namespace wattdb::node {
namespace {

using plan::BinOp;
using plan::BoundExpr;
using plan::BoundExprPtr;
using plan::PlanNode;

const SqlType kInt{TypeId::kInt64}, kText{TypeId::kText}, kDouble{TypeId::kDouble},
    kBool{TypeId::kBool};

constexpr auto Bin = plan::MakeBinary;
BoundExprPtr Col(int c) { return plan::MakeColumn(c, c == 0 ? kInt : c == 1 ? kText : kDouble); }
BoundExprPtr Int(int64_t v) { return plan::MakeConst(Value::Int64(v), kInt); }
constexpr auto Param = plan::MakeParam;

plan::PlanPtr Scan() {
  auto s = std::make_unique<PlanNode>();
  s->kind = PlanNode::Kind::kScan;
  s->table = 1;
  s->types = {kInt, kText, kDouble};
  return s;
}
plan::PlanPtr Filter(plan::PlanPtr child, BoundExprPtr pred) {
  auto f = plan::Wrap(PlanNode::Kind::kFilter, std::move(child));
  f->predicate = std::move(pred);
  return f;
}
plan::PlanPtr Project(plan::PlanPtr child, std::vector<BoundExprPtr> exprs) {
  auto p = std::make_unique<PlanNode>();
  p->kind = PlanNode::Kind::kProject;
  for (auto& e : exprs) p->types.push_back(e->type);
  p->exprs = std::move(exprs);
  p->children.push_back(std::move(child));
  return p;
}

class FragmentRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_fragrun_{}", getpid());
    std::filesystem::remove_all(dir_);
    store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
    ASSERT_TRUE(store_->CreateSegment({1, 1, "", ""}).ok());
    participant_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(50));
    std::vector<storage::WriteOp> ops;
    for (int k = 0; k < 100; k++) {
      storage::WriteOp op;
      op.segment = 1;
      EncodeKeyValue(Value::Int64(k), &op.key);
      EncodeRow({Value::Int64(k), Value::Text(fmt::format("name {}", k)), Value::Double(k * 1.5)},
                &op.row);
      ops.push_back(std::move(op));
    }
    ASSERT_TRUE(store_->Apply(10, ops).ok());
  }
  void TearDown() override {
    participant_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  ScanRequest Request(int lo, int hi) {
    ScanRequest r;
    r.segment = 1;
    r.read_ts = 20;
    EncodeKeyValue(Value::Int64(lo), &r.lo);
    EncodeKeyValue(Value::Int64(hi), &r.hi);
    return r;
  }
  // Rows as text, or "ERROR <sqlstate>", each way.
  std::vector<std::string> ByOperators(const PlanNode& p, const ScanRequest& r,
                                       const std::vector<Value>& params) {
    auto rows = SegmentRows::Open(*store_, *participant_, r, nullptr);
    EXPECT_TRUE(rows.ok());
    FragmentOptions opts;
    opts.params = &params;
    std::vector<std::string> out;
    Status st = RunFragment(
        p, **rows, opts,
        [&](exec::Batch& b, const std::string&) {
          for (size_t i = 0; i < b.rows; i++) out.push_back(Text(b.Row(i)));
          return Status::OK();
        },
        nullptr);
    if (!st.ok()) out.push_back("ERROR " + st.sqlstate());
    return out;
  }
  std::vector<std::string> RowByRow(const PlanNode& p, const ScanRequest& r,
                                    const std::vector<Value>& params, std::string* last_key) {
    auto rows = SegmentRows::Open(*store_, *participant_, r, nullptr);
    EXPECT_TRUE(rows.ok());
    FragmentOptions opts;
    opts.params = &params;
    std::vector<std::string> out;
    Status st = RunScanPlan(p, **rows, opts, [&](std::vector<Value>&& row, const std::string& key) {
      out.push_back(Text(row));
      *last_key = key;
      return Status::OK();
    });
    if (!st.ok()) out.push_back("ERROR " + st.sqlstate());
    return out;
  }
  static std::string Text(const std::vector<Value>& row) {
    std::string s;
    for (const auto& v : row)
      s += (s.empty() ? "" : "|") +
           (v.is_null() ? "NULL" : v.ToText() + ":" + std::to_string(int(v.type())));
    return s;
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::SegmentStore> store_;
  std::unique_ptr<Participant> participant_;
};

TEST_F(FragmentRunnerTest, ScanPlansRowByRowYieldWhatTheOperatorsYield) {
  // k % 7 = $1, then (k * 2, name || $2, 10 / (k - 50)): division by zero only at k = 50.
  auto pred = [] {
    return Bin(BinOp::kEq, Bin(BinOp::kMod, Col(0), Int(7), kInt), Param(0, kInt), kBool);
  };
  auto exprs = [] {
    std::vector<BoundExprPtr> e;
    e.push_back(Bin(BinOp::kMul, Col(0), Int(2), kInt));
    e.push_back(Bin(BinOp::kConcat, Col(1), Param(1, kText), kText));
    e.push_back(Bin(BinOp::kDiv, Int(10), Bin(BinOp::kSub, Col(0), Int(50), kInt), kInt));
    return e;
  };
  std::vector<plan::PlanPtr> plans;
  plans.push_back(Scan());
  plans.push_back(Filter(Scan(), pred()));
  plans.push_back(Project(Filter(Scan(), pred()), exprs()));
  plans.push_back(Project(Scan(), exprs()));
  int checked = 0;
  for (const auto& p : plans) {
    for (auto [lo, hi] : {std::pair{7, 8}, std::pair{3, 4}, std::pair{0, 100}, std::pair{40, 60},
                          std::pair{200, 300}}) {
      for (int64_t m : {0, 1, 3}) {
        std::vector<Value> params = {Value::Int64(m), Value::Text("!")};
        std::string last_key;
        auto want = ByOperators(*p, Request(lo, hi), params);
        auto got = RowByRow(*p, Request(lo, hi), params, &last_key);
        EXPECT_EQ(got, want) << p->ToString() << " [" << lo << ", " << hi << ") $1=" << m;
        if (!got.empty() && got.back().rfind("ERROR", 0) != 0) {
          std::string key;
          EncodeKeyValue(Value::Int64(std::min(hi, 100) - 1), &key);
          EXPECT_LE(last_key, key);
        }
        checked += !want.empty();
      }
    }
  }
  EXPECT_GT(checked, 30);
  // The key write's case: one key, its new row; and an error where the operators fail.
  std::vector<Value> params = {Value::Int64(0), Value::Text("!")};
  std::string last_key;
  EXPECT_EQ(RowByRow(*plans[2], Request(7, 8), params, &last_key),
            std::vector<std::string>{fmt::format("14:{}|name 7!:{}|0:{}", int(TypeId::kInt64),
                                                 int(TypeId::kText), int(TypeId::kInt64))});
  EXPECT_EQ(RowByRow(*plans[3], Request(50, 51), params, &last_key),
            std::vector<std::string>{"ERROR 22012"});
  EXPECT_EQ(RowByRow(*plans[2], Request(49, 50), {}, &last_key),
            std::vector<std::string>{"ERROR 08P01"});
  // Anything else is not its to run.
  auto agg = plan::Wrap(PlanNode::Kind::kLimit, Scan());
  EXPECT_EQ(RowByRow(*agg, Request(0, 10), params, &last_key),
            std::vector<std::string>{"ERROR 0A000"});
}

}  // namespace
}  // namespace wattdb::node
