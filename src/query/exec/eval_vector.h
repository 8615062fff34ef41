// Expression evaluation over whole batches. Column references, constants, comparisons,
// arithmetic, AND/OR/NOT and IS NULL on typed columns run as loops over arrays; any other
// expression is evaluated row by row (Eval), with the same results and errors.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "query/plan/expr.h"

namespace wattdb::exec {

// Evaluates `e` for every row of `b` into `out` (cleared first).
Status EvalVector(const plan::BoundExpr& e, const Batch& b, ExecContext* ctx, Vector* out);
// Like EvalVector, but a column reference yields b's own column (no copy); anything else is
// evaluated into *scratch. The result is valid while b and *scratch are unchanged.
Result<const Vector*> EvalVectorRef(const plan::BoundExpr& e, const Batch& b, ExecContext* ctx,
                                    Vector* scratch);

// The rows of `b` for which predicate `e` is true, as ascending positions in `sel`; returns
// how many. In `a AND b`, b is evaluated only on the rows where a is true.
Result<size_t> Select(const plan::BoundExpr& e, const Batch& b, ExecContext* ctx,
                      std::vector<uint32_t>* sel);

}  // namespace wattdb::exec
