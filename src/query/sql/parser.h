// Recursive-descent SQL parser for WattDB's dialect (a PostgreSQL subset plus admin
// statements). Errors carry SQLSTATE 42601 and the position of the offending token.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "query/sql/ast.h"

namespace wattdb::sql {

// Parses one or more ';'-separated statements. Empty input yields one EmptyStmt.
Result<std::vector<Statement>> Parse(const std::string& sql);

// Parses a single expression (a column DEFAULT, stored as text in the catalog).
Result<ExprPtr> ParseExpression(const std::string& sql);

// The highest $n parameter number in `sql` (0 if none or if it does not lex).
int MaxParamIndex(const std::string& sql);

}  // namespace wattdb::sql
