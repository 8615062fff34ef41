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
  bool hidden = false;      // the row id of a table declared without a primary key
  std::string default_sql;  // DEFAULT expression (SQL text), "" = NULL
  bool serial = false;      // SERIAL/BIGSERIAL: an INSERT not naming it draws the next number
};

// What storage needs to maintain a secondary index: which row columns form its key, in
// which direction. Travels with every segment of the table (storage::SegmentMeta).
struct IndexKeySpec {
  uint32_t id = 0;           // unique within its table, never reused
  std::vector<int> columns;  // positions in the table's columns
  std::vector<bool> desc;    // per column: descending order

  bool operator==(const IndexKeySpec&) const = default;
};

// A secondary index as the catalog knows it.
struct IndexDef {
  IndexKeySpec spec;
  std::string name;
  bool unique = false;
  bool constraint = false;  // backs a UNIQUE constraint of CREATE TABLE (DROP INDEX refuses)
  // 0 while being built. Readers whose snapshot is at or above it may use the index: every
  // row version they can see has its entry.
  Timestamp ready_ts = 0;
};

struct TableSchema {
  TableId id = 0;
  std::string name;
  std::vector<Column> columns;
  std::vector<int> key_columns;   // indexes into columns; never empty (hidden row id if needed)
  std::vector<IndexDef> indexes;  // secondary indexes
  uint32_t next_index_id = 1;
  // Copies of each segment (leader and followers) the table asks for: WITH (replicas = N);
  // 0: the cluster's replication_factor.
  uint32_t replicas = 0;
  static constexpr uint32_t kMaxReplicas = 7;

  const IndexDef* FindIndex(const std::string& name) const;

  // Index of column `name` (case-sensitive, names are folded at parse time), or -1.
  int ColumnIndex(const std::string& name) const;
  bool HasHiddenKey() const { return key_columns.size() == 1 && columns[key_columns[0]].hidden; }
  // Number of columns a user sees (SELECT *).
  int VisibleColumns() const;

  void Serialize(std::string* out) const;
  static Result<TableSchema> Deserialize(std::string_view in);
};

}  // namespace wattdb
