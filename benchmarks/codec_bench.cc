// Micro-benchmarks of hot paths: key and row encoding, expression evaluation over a batch,
// column batches as a remote scan sends and receives them.
#include <benchmark/benchmark.h>

#include "common/codec.h"
#include "query/exec/batch_codec.h"
#include "query/exec/eval.h"
#include "query/exec/operator.h"
#include "query/plan/expr.h"

namespace wattdb {
namespace {

void BM_EncodeRow(benchmark::State& state) {
  std::vector<Value> row = {Value::Int64(123456), Value::Text("owner42"), Value::Int64(999),
                            Value::Double(2.5)};
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
  EncodeRow({Value::Int64(123456), Value::Text("owner42"), Value::Int64(999), Value::Double(2.5)},
            &enc);
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

// The batches of experiments/remote_scan: a column nobody reads (all NULL), v = k % 1000,
// and the same 100-byte pad in every row (a dictionary).
exec::Batch ScanBatch() {
  exec::Batch b;
  b.Reset(3);
  const std::string pad(100, 'p');
  for (size_t i = 0; i < exec::kBatchRows; i++) {
    b.cols[0].AppendNull();
    b.cols[1].AppendInt(TypeId::kInt32, i % 1000);
    b.cols[2].AppendText(pad);
    b.rows++;
  }
  b.cols[2].AttachDictionary(exec::FindDictionary(b.cols[2], b.rows, 32));
  return b;
}

void BM_EncodeScanBatch(benchmark::State& state) {
  exec::Batch b = ScanBatch();
  std::string out;
  for (auto _ : state) {
    out.clear();
    exec::EncodeBatch(b, &out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations() * b.rows);
  state.counters["bytes"] = static_cast<double>(out.size());  // what a batch costs on the wire
}
BENCHMARK(BM_EncodeScanBatch);

// What the master does with each batch received: decode it into a fresh batch (text values
// views into the message), then drop it.
void BM_DecodeScanBatch(benchmark::State& state) {
  exec::Batch b = ScanBatch();
  std::string enc;
  exec::EncodeBatch(b, &enc);
  auto owner = std::make_shared<const exec::TextArena>();
  for (auto _ : state) {
    exec::Batch d;
    benchmark::DoNotOptimize(exec::DecodeBatch(enc, &d, owner));
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations() * b.rows);
}
BENCHMARK(BM_DecodeScanBatch);

// What the master's thread does per batch of a remote scan's aggregation (wattdb_pushdown =
// scan): decode each message, then SELECT count(*), sum(v), max(length(pad)) over the rows.
void BM_AggregateScanBatches(benchmark::State& state) {
  constexpr int kBatches = 16;
  exec::Batch b = ScanBatch();
  std::string enc;
  exec::EncodeBatch(b, &enc);
  struct Messages : exec::ScanProvider {
    const std::string* enc;
    Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode&) override {
      struct Src : exec::RowSource {
        const std::string* enc;
        std::shared_ptr<const exec::TextArena> owner = std::make_shared<const exec::TextArena>();
        int left = kBatches;
        Result<bool> Next(exec::Batch& out) override {
          if (left-- == 0) return false;
          RETURN_NOT_OK(exec::DecodeBatch(*enc, &out, owner));
          return true;
        }
      };
      auto src = std::make_unique<Src>();
      src->enc = enc;
      return std::unique_ptr<exec::RowSource>(std::move(src));
    }
  } messages;
  messages.enc = &enc;
  auto scan = std::make_unique<plan::PlanNode>();
  scan->kind = plan::PlanNode::Kind::kScan;
  scan->types = {SqlType{TypeId::kInt32}, SqlType{TypeId::kInt32}, SqlType{TypeId::kText}};
  plan::PlanNode agg;
  agg.kind = plan::PlanNode::Kind::kAggregate;
  agg.types = {SqlType{TypeId::kInt64}, SqlType{TypeId::kInt64}, SqlType{TypeId::kInt32}};
  agg.aggs.push_back({plan::AggFunc::kCountStar, nullptr, SqlType{TypeId::kInt64}});
  agg.aggs.push_back(
      {plan::AggFunc::kSum, plan::MakeColumn(1, {TypeId::kInt32}), SqlType{TypeId::kInt64}});
  auto length = std::make_unique<plan::BoundExpr>();
  length->kind = plan::BoundExpr::Kind::kFunc;
  length->func = plan::Func::kLength;
  length->type = {TypeId::kInt32};
  length->children.push_back(plan::MakeColumn(2, {TypeId::kText}));
  agg.aggs.push_back({plan::AggFunc::kMax, std::move(length), SqlType{TypeId::kInt32}});
  agg.children.push_back(std::move(scan));
  for (auto _ : state) {
    exec::ExecContext ctx(&messages);
    int64_t rows = -1;
    Status st = exec::Execute(agg, ctx, [&](exec::Batch& out) {
      rows = out.Get(0, 0).as_int();
      return Status::OK();
    });
    if (!st.ok() || rows != static_cast<int64_t>(kBatches * b.rows))
      state.SkipWithError("wrong answer");
  }
  state.SetItemsProcessed(state.iterations() * kBatches * b.rows);
}
BENCHMARK(BM_AggregateScanBatches);

}  // namespace
}  // namespace wattdb
