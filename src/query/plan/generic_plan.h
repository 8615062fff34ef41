// Generic plans: a prepared statement's plan bound once with its parameters as placeholders
// (BoundExpr::kParam) and reused by every execution, as PostgreSQL's generic plans are.
// Instantiate puts one execution's values in and derives again what the binder derives from
// constants: the key range (and secondary index) of each scan whose filter reads a parameter.
#pragma once

#include <vector>

#include "query/plan/binder.h"
#include "query/plan/plan.h"

namespace wattdb::plan {

// A copy of `plan` with parameter i replaced by the constant params[i] (in subqueries too).
// A scan right below a filter that reads a parameter gets its key range and index derived
// from the filter again, with the table's schema from `catalog`. 08P01 if a parameter has no
// value; 0A000 if a scanned table is not the one the plan was bound to (re-plan).
Result<PlanPtr> Instantiate(const PlanNode& plan, const std::vector<Value>& params,
                            const CatalogReader& catalog);

// A copy of `e` with its parameters replaced as Instantiate does.
Result<BoundExprPtr> InstantiateExpr(const BoundExpr& e, const std::vector<Value>& params,
                                     const CatalogReader& catalog);

// True if `plan` reads a parameter anywhere.
bool HasParams(const PlanNode& plan);
// True if `plan` reads the statement's time (now(): kTimeParam) anywhere.
bool ReadsStatementTime(const PlanNode& plan);

// True if `a` and `b` are the same plan (they serialize alike), row estimates aside.
bool SamePlan(const PlanNode& a, const PlanNode& b);
// True if `a` and `b` are the same expression (they serialize alike).
bool SameExpr(const BoundExpr& a, const BoundExpr& b);

}  // namespace wattdb::plan
