// Physical plan nodes. A plan is an immutable tree; operators (query/exec) hold the
// per-execution state. Every node serializes, so a fragment can be shipped to a node.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "query/plan/expr.h"

namespace wattdb::plan {

enum class AggFunc : uint8_t { kCountStar, kCount, kSum, kMin, kMax, kAvg };

struct AggSpec {
  AggFunc func = AggFunc::kCountStar;
  BoundExprPtr arg;  // null for count(*)
  SqlType type;      // result type
  bool distinct = false;  // agg(DISTINCT arg): each distinct non-null value counts once
};

struct SortKey {
  BoundExprPtr expr;
  bool desc = false;
  bool nulls_first = false;
};

struct PlanNode;
using PlanPtr = std::unique_ptr<PlanNode>;

struct PlanNode {
  enum class Kind : uint8_t { kScan, kValues, kFilter, kProject, kAggregate, kSort, kLimit };
  Kind kind = Kind::kValues;
  std::vector<SqlType> types;  // output column types
  std::vector<PlanPtr> children;

  // kScan: every column of `table` in schema order, rows with encoded keys in [lo, hi).
  TableId table = 0;
  std::string table_name;
  std::string lo, hi;
  // kValues: constant rows.
  std::vector<std::vector<Value>> rows;
  // kFilter: predicate. kProject: exprs.
  BoundExprPtr predicate;
  std::vector<BoundExprPtr> exprs;
  // kAggregate: output = group keys then aggregates.
  std::vector<BoundExprPtr> groups;
  std::vector<AggSpec> aggs;
  // kSort
  std::vector<SortKey> keys;
  // kLimit: -1 = no limit
  int64_t limit = -1;
  int64_t offset = 0;

  // Indented tree for EXPLAIN and logs.
  std::string ToString(int indent = 0) const;
  void Serialize(std::string* out) const;
  static Result<PlanPtr> Deserialize(std::string_view in);

 private:
  void SerializeTo(ByteWriter& w) const;
  static Result<PlanPtr> DeserializeFrom(ByteReader& r, int depth);
};

}  // namespace wattdb::plan
