// Expression evaluation over one row of a batch, with PostgreSQL semantics: three-valued
// logic, integer overflow (22003), division by zero (22012), failed casts (22P02/22003).
#pragma once

#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "query/plan/expr.h"

namespace wattdb::exec {

// `ctx` is needed by expressions with subqueries or outer columns (an error without it).
Result<Value> Eval(const plan::BoundExpr& e, const Batch& b, size_t row,
                   ExecContext* ctx = nullptr);
// Characters in UTF-8 text (bytes that are not continuation bytes), eight bytes at a time.
int64_t Utf8Chars(std::string_view s);
// Evaluates an expression that reads no columns.
Result<Value> EvalConst(const plan::BoundExpr& e);
// SQL LIKE with % and _ and backslash escapes.

}  // namespace wattdb::exec
