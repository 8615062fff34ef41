// Bound expressions: names resolved to column indexes, types checked, literals coerced.
// Immutable after binding and serializable, so a plan fragment can be shipped to a node.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "common/value.h"

namespace wattdb::plan {

enum class BinOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,
  kConcat,
  kEq,
  kNe,
  kLt,
  kLe,
  kGt,
  kGe,
  kAnd,
  kOr,
};

enum class Func : uint8_t {
  kAbs,
  kLower,
  kUpper,
  kLength,
  kCoalesce,
  kNullIf,
  kIsTrue,
  kIsFalse,
  kRound,
  kGreatest,
  kLeast,
  kBpcharText,  // CHAR(n) value as text: trailing blanks removed
  kRegex,  // children[0] ~ children[1] (POSIX-like regular expression; negated, case_insensitive)
  kAny,    // children[0] op ANY (children[1], an array); negated = ALL
  kSubscript,      // children[0][children[1]] (1-based; NULL outside)
  kArrayToString,  // array_to_string(array, separator)
  kArrayUpper,     // array_upper(array, dimension)
  kCatalog,        // a function answered from the catalog (ExecContext::catalog); name in `value`
  kMakeArray,      // ARRAY[children...]
  kBuiltin,        // a scalar built-in (plan/builtins.h); name in `value`
};

struct PlanNode;
struct BoundExpr;
using BoundExprPtr = std::unique_ptr<BoundExpr>;

// kParam's `column` for now() / CURRENT_TIMESTAMP in a generic plan: the executing
// statement's time (CatalogReader::StatementTime) is put in.
constexpr int kTimeParam = -1;

struct BoundExpr {
  enum class Kind : uint8_t {
    kConst,          // value
    kColumn,         // column of the input batch
    kNeg,            // -children[0]
    kNot,            // NOT children[0]
    kBinary,         // children[0] op children[1]
    kFunc,           // func(children...)
    kIsNull,         // children[0] IS [NOT] NULL (negated)
    kInList,         // children[0] [NOT] IN (children[1..])
    kLike,           // children[0] [NOT] LIKE children[1]; case_insensitive for ILIKE
    kCase,           // WHEN children[2i] THEN children[2i+1] ... ELSE children.back() (has_else)
    kCast,           // children[0]::type
    kParam,          // parameter `column` (0-based), or the statement's time (kTimeParam), in plans
                     // bound for a prepared statement (generic plans); filled in before they run
    kOuterColumn,    // column `column` of the row of the enclosing query `depth` levels up
    kSubquery,       // the single value of `subplan` (NULL if no row; 21000 if several)
    kExists,         // whether `subplan` yields a row
    kInSubquery,     // children[0] [NOT] IN (the rows of `subplan`, one column)
    kArraySubquery,  // ARRAY(subplan): the values of its one column, in order
  };
  Kind kind = Kind::kConst;
  SqlType type;
  Value value;
  int column = 0;
  BinOp op = BinOp::kAdd;
  Func func = Func::kAbs;
  bool negated = false;
  bool case_insensitive = false;
  bool has_else = false;
  int depth = 0;            // kOuterColumn
  bool correlated = false;  // subqueries: reads columns of enclosing queries (else run once)
  std::shared_ptr<const PlanNode> subplan;
  std::vector<BoundExprPtr> children;

  BoundExprPtr Clone() const;
  // True if this expression or one below it runs a subquery.
  bool HasSubquery() const;
  std::string ToString() const;
  std::string PlanId() const;
  void Serialize(ByteWriter& w) const;
  static Result<BoundExprPtr> Deserialize(ByteReader& r, int depth = 0);
};

BoundExprPtr MakeConst(Value v, SqlType t);
BoundExprPtr MakeColumn(int index, SqlType t);
BoundExprPtr MakeParam(int index, SqlType t);  // $index+1 (0-based `index`)
BoundExprPtr MakeBinary(BinOp op, BoundExprPtr a, BoundExprPtr b, SqlType t);

}  // namespace wattdb::plan
