// QueryBinder: binds one statement's queries: set operations, SELECT cores, FROM lists with
// joins, derived tables and views, and subqueries (which re-enter it with their enclosing
// scope). Internal to the plan layer; one instance binds one statement.
#pragma once

#include <vector>

#include "query/plan/binder.h"
#include "query/plan/expr_binder.h"

namespace wattdb::plan {

class QueryBinder {
 public:
  QueryBinder(const CatalogReader& catalog, std::vector<SqlType>* params)
      : catalog_(catalog), params_(params) {}

  // Binds a query whose enclosing query has scope `outer` (null at top level).
  Result<BoundSelect> BindQuery(const sql::SelectStmt& s, const Scope* outer);

  // An expression binder over `scope` with this statement's parameters and subqueries.
  ExprBinder MakeExprBinder(const Scope* scope);

  // The FROM list and WHERE clause of `s` as one plan whose output columns are `scope`'s
  // columns in order (filled here; scope->parent must be set). Used by BindQuery.
  Result<PlanPtr> BindFrom(const sql::SelectStmt& s, Scope* scope);

 private:
  Result<BoundSelect> BindSetOp(const sql::SelectStmt& s, const Scope* outer);
  Result<BoundSelect> BindCore(const sql::SelectStmt& s, const Scope* outer);

  const CatalogReader& catalog_;
  std::vector<SqlType>* params_;
  int depth_ = 0;  // nesting of queries and views being bound
};

// Helpers shared by the binder files.
// True if `e` calls an aggregate function outside subqueries.
bool ContainsAggregate(const sql::Expr& e);
// The name PostgreSQL gives a select-list item without an alias ("?column?" if none).
std::string OutputName(const sql::Expr& e);
Result<int64_t> ConstInt(const sql::Expr& e, const char* what);
PlanPtr Wrap(PlanNode::Kind kind, PlanPtr child);

}  // namespace wattdb::plan
