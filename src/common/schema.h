// Table schemas as the catalog stores them and every layer reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/value.h"

namespace wattdb {

using TableId = uint32_t;
using SegmentId = uint64_t;
using NodeId = uint32_t;
using Timestamp = uint64_t;  // commit/snapshot timestamps, assigned by the master

struct Column {
  std::string name;
  SqlType type;
  bool not_null = false;
  bool hidden = false;  // the row id of a table declared without a primary key
  std::string default_sql;  // DEFAULT expression (SQL text), "" = NULL
};

struct TableSchema {
  TableId id = 0;
  std::string name;
  std::vector<Column> columns;
  std::vector<int> key_columns;  // indexes into columns; never empty (hidden row id if needed)

  // Index of column `name` (case-sensitive, names are folded at parse time), or -1.
  int ColumnIndex(const std::string& name) const;
  bool HasHiddenKey() const { return key_columns.size() == 1 && columns[key_columns[0]].hidden; }
  // Number of columns a user sees (SELECT *).
  int VisibleColumns() const;

  void Serialize(std::string* out) const;
  static Result<TableSchema> Deserialize(std::string_view in);
};

}  // namespace wattdb
