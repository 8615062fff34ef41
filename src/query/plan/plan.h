// Physical plan nodes. A plan is an immutable tree; operators (query/exec) hold the
// per-execution state. Every node serializes, so a fragment can be shipped to a node.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "query/plan/expr.h"

namespace wattdb::plan {

enum class AggFunc : uint8_t { kCountStar, kCount, kSum, kMin, kMax, kAvg, kStringAgg };

// How a kAggregate node aggregates (exec/aggregate.h): all of it, the partial states of its
// input's share (on a node), or the final results from such states (on the master).
enum class AggMode : uint8_t { kComplete, kPartial, kFinal };

struct AggSpec {
  AggFunc func = AggFunc::kCountStar;
  BoundExprPtr arg;        // null for count(*)
  SqlType type;            // result type
  bool distinct = false;   // agg(DISTINCT arg): each distinct non-null value counts once
  BoundExprPtr separator;  // string_agg(arg, separator)
};

struct SortKey {
  BoundExprPtr expr;
  bool desc = false;
  bool nulls_first = false;
};

struct PlanNode;
using PlanPtr = std::unique_ptr<PlanNode>;

struct PlanNode {
  enum class Kind : uint8_t {
    kScan,
    kValues,
    kFilter,
    kProject,
    kAggregate,
    kSort,
    kLimit,
    kHashJoin,
    kNestedLoopJoin,
    kSetOp,
    kIndexJoin,
    kGenerateSeries,
    kUnnest,
    kExchange,
    kOffload,
    kPartition,
    kGather,
  };
  enum class JoinType : uint8_t { kInner, kLeft };
  enum class SetOpType : uint8_t { kUnion, kExcept, kIntersect };
  Kind kind = Kind::kValues;
  std::vector<SqlType> types;  // output column types
  std::vector<PlanPtr> children;

  // kScan: every column of `table` in schema order, rows with encoded keys in [lo, hi).
  // With `index` nonzero: the rows whose keys in that secondary index lie in [lo, hi)
  // (common/codec.h EncodeIndexKey), in no particular order.
  TableId table = 0;
  std::string table_name;
  std::string lo, hi;
  uint32_t index = 0;
  std::string index_name;
  // kValues: constant rows.
  std::vector<std::vector<Value>> rows;
  // kFilter: predicate. kProject: exprs.
  BoundExprPtr predicate;
  std::vector<BoundExprPtr> exprs;
  // kAggregate: output = group keys then aggregates (kPartial: a state column per aggregate;
  // kFinal: input = group keys then those state columns, and `groups` are column 0..g-1).
  std::vector<BoundExprPtr> groups;
  std::vector<AggSpec> aggs;
  AggMode agg_mode = AggMode::kComplete;
  // kExchange: the rows of children[0], a fragment whose leaf is a Scan, run on the nodes
  // owning the scan's segments (each segment's share apart, in parallel), in no order.
  // kOffload: the rows of children[0], run on helper node `index` (0: chosen when it runs;
  // see plan/offload.h), or in place when no helper suits.
  // kPartition: the rows of children[0] run once per segment of `table`, whose rows the
  // Exchange at pre-order position `index` of children[0] reads; `exprs` are that table's
  // leading key columns the other Exchanges' keys are (plan/partition.h). In no order.
  // kGather: the rows of children[0] -- single-input operators over one Exchange, whose scan
  // reads `table` -- run once per segment of that scan's range, several segments at once on
  // threads of the reading process, each part's Exchange reading only its segment's range;
  // the parts' outputs follow one another in key order. Meant for an output small next to
  // its input (the partial half of an aggregation): a part's output is held until it is read.
  // kSort
  std::vector<SortKey> keys;
  // kLimit: -1 = no limit
  int64_t limit = -1;
  int64_t offset = 0;
  // Joins: output = left row then right row (children[0], children[1]). kHashJoin matches
  // rows whose left_keys equal right_keys (NULL keys never match); both kinds then require
  // `predicate` (if any) over the joined row. kLeft adds unmatched left rows padded with NULLs.
  JoinType join_type = JoinType::kInner;
  std::vector<BoundExprPtr> left_keys, right_keys;
  // kGenerateSeries: one column of integers from exprs[0] to exprs[1] by exprs[2]
  // (expressions without columns, evaluated when the operator opens).
  // kUnnest: the elements of the array exprs[0] (evaluated when the operator opens), in order.
  // kIndexJoin: for each row of children[0], `left_keys` (over that row) give the leading
  // primary-key columns of `table`; the rows with that key prefix are looked up in the
  // segments owning it (the segment's own key index) and joined as above.
  // kSetOp over children[0] and children[1] with equal column types; `set_all` keeps duplicates.
  SetOpType set_op = SetOpType::kUnion;
  bool set_all = false;
  // The planner's estimate of the rows this node yields (EXPLAIN); < 0 if none.
  double est_rows = -1;

  // A deep copy (subqueries' plans stay shared: they are immutable).
  PlanPtr Clone() const;
  // Indented tree for EXPLAIN and logs.
  std::string ToString(int indent = 0) const;
  void Serialize(std::string* out) const;
  static Result<PlanPtr> Deserialize(std::string_view in);
  // Serialize()'s form of this subtree, made at the first call and kept: a prepared
  // statement's fragment travels to the nodes with each execution. The subtree must not
  // change after that call; Clone() starts without it. Thread-safe.
  const std::string& Encoded() const;

 private:
  mutable std::atomic<std::shared_ptr<const std::string>> encoded_;
  void SerializeTo(ByteWriter& w) const;
  static Result<PlanPtr> DeserializeFrom(ByteReader& r, int depth);
};

}  // namespace wattdb::plan
