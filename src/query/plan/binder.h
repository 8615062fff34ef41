// Binder: turns parsed statements into bound plans against the catalog. Resolves names
// (42P01 unknown table, 42703 unknown column), checks types (42804, 42883), rewrites
// aggregates (42803), and derives the primary-key range a scan may be pruned to.
// Stateless; safe to call from many sessions at once (the CatalogReader must be too).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "query/plan/plan.h"
#include "query/sql/ast.h"

namespace wattdb::plan {

// The wall clock's time in PostgreSQL-epoch microseconds (what now() yields).
int64_t PgNowMicros();

class CatalogReader {
 public:
  virtual ~CatalogReader() = default;
  // Returns the table's schema, or an error with SQLSTATE 42P01.
  virtual Result<TableSchema> GetTable(const std::string& name) const = 0;
  // The defining query of view `name`, or nullopt if there is no such view.
  virtual std::optional<std::string> GetView(const std::string& name) const { return std::nullopt; }
  // The planner's guess of a table's row count.
  virtual double EstimateRows(const TableSchema& table) const { return 1000; }
  // now() and CURRENT_TIMESTAMP of the statement being bound (PostgreSQL-epoch microseconds):
  // by default the current time.
  virtual int64_t StatementTime() const;
};

struct BoundSelect {
  PlanPtr plan;
  std::vector<std::string> names;
  std::vector<SqlType> types;
  bool correlated = false;  // reads columns of an enclosing query
};

// Rows to insert, one value per table column (schema order): either `rows` of expressions
// evaluated without input (VALUES), or the rows of `source` (INSERT ... SELECT). A table's
// hidden row id column gets NULL; the caller assigns it.
struct BoundInsert {
  TableSchema table;
  std::vector<std::vector<BoundExprPtr>> rows;
  PlanPtr source;
  std::vector<int> generated;  // serial columns the statement does not name: to be drawn
};

// UPDATE / DELETE: `source` yields every column of the matching rows (schema order).
struct BoundModify {
  TableSchema table;
  PlanPtr source;
  std::vector<std::pair<int, BoundExprPtr>> sets;  // UPDATE only: column <- expr over a row
};

// `params` (optional) turns on describe mode for a prepared statement: $n parameters bind
// as placeholders whose types are inferred from context into (*params)[n-1]; entries that
// are not kNull on entry are the client's declared types. The plans of describe mode are
// for their result types only, not for execution.
Result<BoundSelect> BindSelect(const sql::SelectStmt& stmt, const CatalogReader& catalog,
                               std::vector<SqlType>* params = nullptr);
Result<BoundInsert> BindInsert(const sql::InsertStmt& stmt, const CatalogReader& catalog,
                               std::vector<SqlType>* params = nullptr);
Result<BoundModify> BindUpdate(const sql::UpdateStmt& stmt, const CatalogReader& catalog,
                               std::vector<SqlType>* params = nullptr);
Result<BoundModify> BindDelete(const sql::DeleteStmt& stmt, const CatalogReader& catalog,
                               std::vector<SqlType>* params = nullptr);

// The value a column takes when an INSERT does not name it: its DEFAULT expression (no
// column references or subqueries) coerced to the column type, or NULL.
Result<BoundExprPtr> BindDefault(const Column& col);

// The encoded key range [lo, hi) implied by `predicate` ("" = unbounded): equalities on a
// prefix of the key columns, then comparisons on the next one. Conservative: any row satisfying
// the predicate lies in the range. *point (optional): the range is one whole key.
void DeriveKeyRange(const BoundExpr* predicate, const TableSchema& table, std::string* lo,
                    std::string* hi, bool* point = nullptr);
// The AND-ed parts of `predicate`.
std::vector<const BoundExpr*> Conjuncts(const BoundExpr* predicate);
// Appends the key encoding of `v` as a value of a key column of type `to`, as DeriveKeyRange
// encodes `column = v`; false (nothing appended) if `v` is NULL or not exactly such a value.
bool AppendKeyValue(const Value& v, TypeId to, std::string* out);

// Turns `scan` (of `table`, filtered by `predicate`) into a secondary-index scan when an
// index of the table bounds the rows better than the primary key does: its leading columns
// compared with constants (=, <, <=, >, >=, BETWEEN, IN lists). Conservative like
// DeriveKeyRange; the predicate still filters the rows. Sets *est to 1 for a unique lookup.
void ChooseScanIndex(const BoundExpr* predicate, const TableSchema& table, PlanNode* scan,
                     double* est);

}  // namespace wattdb::plan
