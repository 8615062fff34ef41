// ExprBinder: binds one expression of a statement (names -> column indexes, types checked,
// untyped literals coerced, aggregates rewritten to aggregate-output columns). Used by the
// statement binder (binder.cc); internal to the plan layer. Not thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "query/plan/binder.h"
#include "query/plan/plan.h"
#include "query/sql/ast.h"

namespace wattdb::plan {

using sql::Expr;

struct ScopeColumn {
  std::string table;  // qualifier: the FROM item's alias or table name
  std::string name;
  SqlType type;
  bool hidden = false;  // not visible by name (row ids, the right side of USING)
};

// The columns an expression may read, and the scope of the enclosing query (for correlated
// references). `correlated` is set when an expression bound in this scope, or in a scope
// nested in it, read a column of an enclosing scope.
struct Scope {
  std::vector<ScopeColumn> columns;
  const Scope* parent = nullptr;
  mutable bool correlated = false;
};

// Binds a subquery whose enclosing scope is `outer`.
using SubqueryBindFn =
    std::function<Result<BoundSelect>(const sql::SelectStmt&, const Scope* outer)>;

// "unknown" for the type of an untyped NULL, else the SQL spelling.
std::string TypeName(const SqlType& t);
bool IsAggregateName(const std::string& n);
// Numeric result type of combining numeric types a and b.
SqlType NumericUnion(const SqlType& a, const SqlType& b);
// `e` itself, or a NULL constant of its type if `e` is a strict operator or function with a
// NULL constant argument (PostgreSQL's planner folds these before execution).
BoundExprPtr FoldStrictNull(BoundExprPtr e);
// `e` itself, or its value if it is integer +, -, * or unary minus of integer constants (as
// PostgreSQL's planner folds constant expressions: `id BETWEEN $1 AND $1 + 99` then bounds
// the key range of the scan). An overflow is not folded: it fails when evaluated.
BoundExprPtr FoldIntegerArithmetic(BoundExprPtr e);
// A CHAR(n) expression as text (trailing blanks dropped, as PostgreSQL's bpchar -> text).
BoundExprPtr CharAsText(BoundExprPtr e);

class ExprBinder {
 public:
  // `scope` is borrowed and must outlive the binder.
  explicit ExprBinder(const Scope* scope) : scope_(scope) {}

  // Binds `e`. `untyped` reports whether the result is a string literal whose type is not
  // yet decided (PostgreSQL's "unknown"), so that context may coerce it.
  Result<BoundExprPtr> Bind(const Expr& e, bool* untyped = nullptr);

  // Aggregation mode: expressions are bound over the aggregate's output
  // (groups then aggregates).
  void EnterAggMode(std::vector<BoundExprPtr>* groups, std::vector<AggSpec>* aggs) {
    groups_ = groups;
    aggs_ = aggs;
    group_strings_.clear();
    for (const auto& g : *groups) group_strings_.push_back(g->ToString());
  }
  bool agg_mode() const { return groups_ != nullptr; }
  void set_allow_aggregates(bool a, const char* where) {
    allow_aggs_ = a;
    agg_context_ = where;
  }

  // Describe mode: parameters bind as kParam; an untyped one takes the type its context
  // coerces it to, recorded in `types` (indexed by parameter number - 1; kNull = unknown).
  void set_params(std::vector<SqlType>* types) { params_ = types; }
  // now() and CURRENT_TIMESTAMP bind to this time (PostgreSQL-epoch microseconds) or, in
  // describe mode, to a placeholder for the executing statement's time (kTimeParam).
  // Unset: the time of binding.
  void set_now(int64_t now_us) { now_us_ = now_us; }
  // Enables subqueries (without it they are refused).
  void set_subquery_binder(SubqueryBindFn fn) { subquery_ = std::move(fn); }

  // Coerces `e` (an untyped literal if `untyped`) to `t` for comparison or assignment.
  Result<BoundExprPtr> Coerce(BoundExprPtr e, bool untyped, const SqlType& t, int pos);

 private:
  Result<BoundExprPtr> BindInner(const Expr& e, bool* untyped);
  Result<BoundExprPtr> BindColumn(const Expr& e);
  Result<BoundExprPtr> BindBinary(const Expr& e);
  Status BindArithmetic(const Expr& e, BoundExprPtr* l, bool ul, BoundExprPtr* r, bool ur,
                        SqlType* type);
  Result<BoundExprPtr> BindFunc(const Expr& e, bool* untyped);
  Result<BoundExprPtr> BindUnary(const Expr& e);
  Result<BoundExprPtr> BindBetween(const Expr& e);
  Result<BoundExprPtr> BindInList(const Expr& e);
  Result<BoundExprPtr> BindLike(const Expr& e);
  Result<BoundExprPtr> BindCase(const Expr& e);
  Result<BoundExprPtr> BindParam(const Expr& e, bool* untyped);
  Result<BoundExprPtr> BindCast(const Expr& e);
  Result<BoundExprPtr> BindAggregate(const Expr& e);
  // version(), now() and the other functions of no arguments the binder answers, if `e` is one.
  std::optional<BoundExprPtr> BindNiladic(const Expr& e);

  // A function call's bound arguments, and which of them are untyped literals.
  struct CallArgs {
    const Expr& e;
    std::vector<BoundExprPtr> args;
    std::vector<bool> unt;
    // 42883 "function f(types) does not exist".
    Status NoSuchFunction() const;
  };
  // Each binds one family of functions (BindFunc's table says which names and how many
  // arguments): coerces the arguments in `c` and sets `out`'s function and type.
  Status BindAbs(CallArgs& c, BoundExpr* out);
  Status BindRound(CallArgs& c, BoundExpr* out);
  Status BindCaseOrLength(CallArgs& c, BoundExpr* out);
  Status BindCommonType(CallArgs& c, BoundExpr* out);
  Status BindNullIf(CallArgs& c, BoundExpr* out);
  Status BindTruthTest(CallArgs& c, BoundExpr* out);
  Status BindAnyAll(CallArgs& c, BoundExpr* out);
  Status BindArrayCtor(CallArgs& c, BoundExpr* out);
  Status BindSubscript(CallArgs& c, BoundExpr* out);
  Status BindArrayFunc(CallArgs& c, BoundExpr* out);
  Status BindConcat(CallArgs& c, BoundExpr* out);
  Status BindLibraryFunc(CallArgs& c, BoundExpr* out);
  Result<BoundExprPtr> BindBool(const Expr& e, const char* what);
  Result<BoundExprPtr> BindSubquery(const Expr& e);
  // A binder over the same scope and settings, outside aggregation.
  ExprBinder Plain() const;
  // Brings two operands to a common comparable type.
  Status Unify(BoundExprPtr* a, bool ua, BoundExprPtr* b, bool ub, int pos, const char* op);

  const Scope* scope_;
  SubqueryBindFn subquery_;
  std::vector<SqlType>* params_ = nullptr;  // borrowed; set in describe mode
  std::optional<int64_t> now_us_;
  std::vector<BoundExprPtr>* groups_ = nullptr;  // borrowed; set in agg mode
  std::vector<AggSpec>* aggs_ = nullptr;
  std::vector<std::string> group_strings_;
  bool allow_aggs_ = false;
  const char* agg_context_ = "WHERE";
  bool in_aggregate_ = false;
};

}  // namespace wattdb::plan
