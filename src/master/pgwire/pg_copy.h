// COPY data formats: text (delimiter-separated, \N for NULL, backslash escapes) and CSV
// (RFC 4180 quoting; an unquoted NULL string, empty by default, is NULL).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/value.h"
#include "master/sql/copy_rows.h"
#include "query/sql/ast.h"

namespace wattdb::master::pg {

// Splits a piece of the COPY stream into rows of fields, appended to `out` (the header line
// skipped if asked). Errors (an unterminated CSV quote) carry SQLSTATE 22P04 and the line
// number. With `used`, the piece may end inside a row: that row is left out and *used is the
// length of the rows parsed (the caller keeps the rest for the next piece).
Status ParseCopyData(std::string_view data, const sql::CopyStmt& s, CopyRows* out,
                     size_t* used = nullptr);

// The length of the longest prefix of `data` that holds whole rows only (ends right after a
// row's newline; CSV newlines inside quotes do not end rows). COPY data is parsed piece by
// piece at these boundaries.
size_t WholeRowsPrefix(std::string_view data, const sql::CopyStmt& s);

// One output line, newline included.
std::string FormatCopyRow(const std::vector<Value>& row, const sql::CopyStmt& s);

}  // namespace wattdb::master::pg
