// An in-memory table `t` (id INT key, grp TEXT, v BIGINT with NULLs, d DOUBLE, w INT in no
// order) that plans scan and run, in place or per "segment" as nodes would (MemCatalog::ship),
// for the query tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/sqlstate.h"
#include "query/exec/batch_codec.h"
#include "query/exec/operator.h"
#include "query/plan/binder.h"
#include "query/plan/fragment.h"
#include "query/plan/offload.h"
#include "query/sql/parser.h"

namespace wattdb::test {

class MemCatalog : public plan::CatalogReader, public exec::ScanProvider {
 public:
  MemCatalog() {
    TableSchema t;
    t.id = 1;
    t.name = "t";
    t.columns = {{"id", {TypeId::kInt32}, true},
                 {"grp", {TypeId::kText}},
                 {"v", {TypeId::kInt64}},
                 {"d", {TypeId::kDouble}},
                 {"w", {TypeId::kInt32}}};
    t.key_columns = {0};
    tables_["t"] = t;
    for (int i = 1; i <= 2500; i++) {
      rows_.push_back({Value::Int32(i),
                       Value::Text(i % 3 == 0   ? "a"
                                   : i % 3 == 1 ? "b"
                                                : "c"),
                       i % 10 == 0 ? Value() : Value::Int64(i * 2), Value::Double(i / 4.0),
                       Value::Int32(i * 37 % 1001 - 500)});  // no order, no NULLs, some negative
    }
  }
  Result<TableSchema> GetTable(const std::string& name) const override {
    auto it = tables_.find(name);
    if (it == tables_.end()) {
      return Status::Sql(sqlstate::kUndefinedTable,
                         fmt::format("relation \"{}\" does not exist", name));
    }
    return it->second;
  }
  Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode& scan) override {
    last_lo = scan.lo;
    last_hi = scan.hi;
    struct Src : exec::RowSource {
      const std::vector<std::vector<Value>>* rows;
      size_t next = 0;
      Result<bool> Next(exec::Batch& out) override {
        while (next < rows->size() && out.rows < exec::kBatchRows) {
          auto r = (*rows)[next++];
          out.AppendRow(std::move(r));
        }
        return out.rows > 0;
      }
    };
    auto s = std::make_unique<Src>();
    s->rows = &rows_;
    return std::unique_ptr<exec::RowSource>(std::move(s));
  }
  std::string last_lo, last_hi;
  // When set, Exchanges run their fragment (serialized and read back, as a node would) once
  // per "segment" of three -- ids 1..800, 801..1600, the rest -- and return the outputs in
  // segment order, each batch encoded and decoded as it crosses the wire (its bytes kept:
  // integer columns stay packed until read, Vector::packed).
  bool ship = false;
  Result<std::unique_ptr<exec::RowSource>> OpenExchange(const plan::PlanNode& x,
                                                        const exec::ExecContext&) override {
    if (!ship) return std::unique_ptr<exec::RowSource>();
    std::string bytes;
    x.children[0]->Serialize(&bytes);
    ASSIGN_OR_RETURN(plan::PlanPtr frag, plan::PlanNode::Deserialize(bytes));
    struct Segment : exec::ScanProvider {
      std::vector<std::vector<Value>> rows;
      Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode&) override {
        struct Src : exec::RowSource {
          const std::vector<std::vector<Value>>* rows;
          size_t next = 0;
          Result<bool> Next(exec::Batch& out) override {
            while (next < rows->size() && out.rows < exec::kBatchRows)
              out.AppendRow(std::vector<Value>((*rows)[next++]));
            return out.rows > 0;
          }
        };
        auto src = std::make_unique<Src>();
        src->rows = &rows;
        return std::unique_ptr<exec::RowSource>(std::move(src));
      }
    };
    struct Out : exec::RowSource {
      std::vector<exec::Batch> batches;
      size_t next = 0;
      Result<bool> Next(exec::Batch& out) override {
        if (next == batches.size()) return false;
        out = std::move(batches[next++]);
        return true;
      }
    };
    auto out = std::make_unique<Out>();
    for (int seg = 0; seg < 3; seg++) {
      Segment provider;
      for (const auto& r : rows_) {
        int64_t id = r[0].as_int();
        if ((seg == 0 && id <= 800) || (seg == 1 && id > 800 && id <= 1600) ||
            (seg == 2 && id > 1600)) {
          provider.rows.push_back(r);
        }
      }
      exec::ExecContext ctx{&provider, nullptr};
      RETURN_NOT_OK(exec::Execute(*frag, ctx, [&](const exec::Batch& b) {
        auto bytes = std::make_shared<std::string>();
        exec::EncodeBatch(b, bytes.get());
        out->batches.emplace_back();
        return exec::DecodeBatch(*bytes, &out->batches.back(),
                                 std::make_shared<const exec::TextArena>(bytes));
      }));
    }
    return std::unique_ptr<exec::RowSource>(std::move(out));
  }

 private:
  std::map<std::string, TableSchema> tables_;
  std::vector<std::vector<Value>> rows_;
};

// Runs a SELECT and returns rows as "a|b|c" strings (NULL for nulls).
// `pushdown`: split the plan into fragments (run as cat.ship says).
inline Result<std::vector<std::string>> RunSql(MemCatalog& cat, const std::string& sql,
                                               bool roundtrip = false, bool pushdown = false,
                                               std::string* explain = nullptr, bool offload = false,
                                               const plan::PushDownOptions* options = nullptr) {
  ASSIGN_OR_RETURN(auto stmts, sql::Parse(sql));
  auto& sel = std::get<sql::SelectStmt>(stmts[0]);
  ASSIGN_OR_RETURN(plan::BoundSelect b, plan::BindSelect(sel, cat));
  plan::PlanPtr p = std::move(b.plan);
  if (pushdown) {
    plan::PushDownOptions all{[](const plan::PlanNode&) { return true; }};
    p = plan::PushDownFragments(std::move(p), options ? *options : all);
  }
  if (offload) p = plan::PlaceOffload(std::move(p), 0);
  if (explain) *explain = p->ToString();
  if (roundtrip) {
    std::string bytes;
    p->Serialize(&bytes);
    ASSIGN_OR_RETURN(p, plan::PlanNode::Deserialize(bytes));
  }
  std::vector<std::string> out;
  exec::ExecContext ctx{&cat, nullptr};
  RETURN_NOT_OK(exec::Execute(*p, ctx, [&](const exec::Batch& batch) {
    for (size_t r = 0; r < batch.rows; r++) {
      std::string s;
      for (size_t c = 0; c < batch.cols.size(); c++) {
        Value v = batch.Get(c, r);
        s += (c ? "|" : "") + (v.is_null() ? "NULL" : v.ToText());
      }
      out.push_back(s);
    }
    return Status::OK();
  }));
  return out;
}

inline std::string Err(MemCatalog& cat, const std::string& sql) {
  auto r = RunSql(cat, sql);
  return r.ok() ? "ok" : r.status().sqlstate();
}

}  // namespace wattdb::test
