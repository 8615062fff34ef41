// COPY data formats: text (delimiter-separated, \N for NULL, backslash escapes) and CSV
// (RFC 4180 quoting; an unquoted NULL string, empty by default, is NULL).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/value.h"
#include "query/sql/ast.h"

namespace wattdb::master::pg {

using CopyRow = std::vector<std::optional<std::string>>;

// Splits the whole COPY stream into rows of fields (the header line skipped if asked).
// Errors (an unterminated CSV quote) carry SQLSTATE 22P04 and the line number.
Result<std::vector<CopyRow>> ParseCopyData(std::string_view data, const sql::CopyStmt& s);

// The length of the longest prefix of `data` that holds whole rows only (ends right after a
// row's newline; CSV newlines inside quotes do not end rows). COPY data is parsed piece by
// piece at these boundaries.
size_t WholeRowsPrefix(std::string_view data, const sql::CopyStmt& s);

// One output line, newline included.
std::string FormatCopyRow(const std::vector<Value>& row, const sql::CopyStmt& s);

}  // namespace wattdb::master::pg
