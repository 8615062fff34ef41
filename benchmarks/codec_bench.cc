// Micro-benchmarks of hot paths: key and row encoding, expression evaluation over a batch.
#include <benchmark/benchmark.h>

#include "common/codec.h"
#include "query/exec/eval.h"
#include "query/plan/expr.h"

namespace wattdb {
namespace {

void BM_EncodeRow(benchmark::State& state) {
  std::vector<Value> row = {Value::Int64(123456), Value::Text("owner42"), Value::Int64(999), Value::Double(2.5)};
  std::string out;
  for (auto _ : state) {
    out.clear();
    EncodeRow(row, &out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_EncodeRow);

void BM_DecodeRow(benchmark::State& state) {
  std::string enc;
  EncodeRow({Value::Int64(123456), Value::Text("owner42"), Value::Int64(999), Value::Double(2.5)}, &enc);
  std::vector<Value> row;
  for (auto _ : state) {
    benchmark::DoNotOptimize(DecodeRow(enc, &row));
  }
}
BENCHMARK(BM_DecodeRow);

void BM_EncodeKey(benchmark::State& state) {
  std::string out;
  int64_t i = 0;
  for (auto _ : state) {
    out.clear();
    EncodeKeyValue(Value::Int64(i++), &out);
    EncodeKeyValue(Value::Text("region-north"), &out);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_EncodeKey);

// WHERE v > 500 AND v < 900 over a 1024-row batch.
void BM_FilterBatch(benchmark::State& state) {
  exec::Batch b;
  b.Reset(1);
  for (int i = 0; i < 1024; i++) b.AppendRow({Value::Int64(i)});
  auto cmp = [](plan::BinOp op, int64_t c) {
    auto e = std::make_unique<plan::BoundExpr>();
    e->kind = plan::BoundExpr::Kind::kBinary;
    e->op = op;
    e->type = {TypeId::kBool};
    e->children.push_back(plan::MakeColumn(0, {TypeId::kInt64}));
    e->children.push_back(plan::MakeConst(Value::Int64(c), {TypeId::kInt64}));
    return e;
  };
  plan::BoundExpr both;
  both.kind = plan::BoundExpr::Kind::kBinary;
  both.op = plan::BinOp::kAnd;
  both.type = {TypeId::kBool};
  both.children.push_back(cmp(plan::BinOp::kGt, 500));
  both.children.push_back(cmp(plan::BinOp::kLt, 900));
  for (auto _ : state) {
    int n = 0;
    for (size_t r = 0; r < b.rows; r++) n += exec::Eval(both, b, r)->as_bool();
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations() * 1024);
}
BENCHMARK(BM_FilterBatch);

}  // namespace
}  // namespace wattdb
