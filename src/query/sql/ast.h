// Parsed SQL, before name resolution. Produced by the parser, consumed by the binder.
// Every node remembers the 1-based character position of its first token for error messages.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/value.h"

namespace wattdb::sql {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct SelectStmt;

struct Expr {
  enum class Kind {
    kLiteral,   // value (a string literal has type kText and `untyped` = true)
    kColumn,    // [table.]name
    kStar,      // * or table.* in a select list
    kUnary,     // op: "-", "not"
    kBinary,    // op: + - * / % || = <> < <= > >= and or
    kFunc,      // name(args), distinct, star_arg for count(*)
    kIsNull,    // args[0] IS [NOT] NULL
    kBetween,   // args[0] [NOT] BETWEEN args[1] AND args[2]
    kInList,    // args[0] [NOT] IN (args[1..])
    kLike,      // args[0] [NOT] LIKE args[1]
    kCase,      // CASE [operand] WHEN args[2i] THEN args[2i+1] ... [ELSE else_expr] END
    kCast,      // CAST(args[0] AS cast_type) or args[0]::cast_type
    kParam,     // $param (extended query protocol), 1-based
    kSubquery,  // (SELECT ...) yielding one value
    kExists,    // EXISTS (SELECT ...)
    kInSelect,  // args[0] [NOT] IN (SELECT ...)
    kArray,     // ARRAY(SELECT ...): the values of the query's one column
  };
  Kind kind;
  int pos = 0;
  Value value;
  bool untyped = false;
  std::string table, name;
  std::string op;
  std::vector<ExprPtr> args;
  bool negated = false;
  bool distinct = false;
  bool star_arg = false;
  SqlType cast_type;
  int param = 0;
  ExprPtr operand;                       // CASE operand
  ExprPtr else_expr;                     // CASE ELSE
  std::shared_ptr<SelectStmt> subquery;  // kSubquery, kExists, kInSelect
  int depth = 0;  // levels of the tree below and including this node; 0 = not computed yet

  explicit Expr(Kind k, int p) : kind(k), pos(p) {}
  Expr(Expr&&) = default;
  Expr& operator=(Expr&&) = default;
  // Iterative: a left-deep chain (1 + 1 + ...) can be deeper than recursion allows.
  ~Expr();
};

// Sets `depth` on `e` and every node below it not yet measured (without recursion) and
// returns e's.
int MeasureDepth(Expr& e);

struct SelectItem {
  ExprPtr expr;
  std::string alias;
};

struct OrderItem {
  ExprPtr expr;
  bool desc = false;
  std::optional<bool> nulls_first;
};

enum class JoinType { kInner, kLeft, kRight, kFull, kCross };

// One item of a FROM list: a table or view, a derived table (subquery), or a join of two items.
struct TableRef {
  enum class Kind { kTable, kSubquery, kJoin, kFunction };
  Kind kind = Kind::kTable;
  int pos = 0;
  std::string name;   // kTable
  std::string alias;  // kTable, kSubquery (required there)
  std::shared_ptr<SelectStmt> subquery;
  std::vector<ExprPtr> args;         // kFunction: name(args), a set-returning function
  JoinType join = JoinType::kInner;  // kJoin
  std::unique_ptr<TableRef> left, right;
  ExprPtr on;                              // kJoin: ON condition (null for CROSS)
  std::vector<std::string> using_columns;  // kJoin: USING (...)
};

enum class SetOp { kNone, kUnion, kExcept, kIntersect };

// A query. With set_op != kNone it combines `left` and `right`, and only order_by, limit and
// offset of this node apply; otherwise it is a plain SELECT.
struct SelectStmt {
  SetOp set_op = SetOp::kNone;
  bool set_all = false;
  std::unique_ptr<SelectStmt> left, right;

  bool distinct = false;
  std::vector<SelectItem> items;
  std::vector<TableRef> from;  // comma-separated items
  ExprPtr where;
  std::vector<ExprPtr> group_by;
  ExprPtr having;
  std::vector<OrderItem> order_by;
  ExprPtr limit, offset;
  bool for_update = false;  // SELECT ... FOR UPDATE / FOR SHARE
};

struct ColumnDef {
  std::string name;
  SqlType type;
  bool not_null = false;
  bool primary_key = false;
  int pos = 0;
  std::string default_sql;  // DEFAULT expression as written ("" = none)
  int default_pos = 0;
  bool serial = false;  // SMALLSERIAL, SERIAL or BIGSERIAL
};

// A UNIQUE constraint of CREATE TABLE (column- or table-level); `name` "" = generated.
struct UniqueDef {
  std::string name;
  std::vector<std::string> columns;
  int pos = 0;
};

struct CreateTableStmt {
  std::string name;
  bool if_not_exists = false;
  std::vector<ColumnDef> columns;
  std::vector<std::string> primary_key;  // table-level or column-level PRIMARY KEY
  int pk_pos = 0;
  std::vector<UniqueDef> unique;
  uint32_t replicas = 0;  // WITH (replicas = N); 0: not given
};

// CREATE [UNIQUE] INDEX [CONCURRENTLY] [[IF NOT EXISTS] name] ON table [USING btree]
//   (column [ASC | DESC] [NULLS FIRST | LAST], ...)
struct CreateIndexStmt {
  std::string name;  // "" = generated
  std::string table;
  std::vector<std::string> columns;
  std::vector<bool> desc;
  bool unique = false;
  bool if_not_exists = false;
  int pos = 0;
  int table_pos = 0;
};

// DROP TABLE | VIEW [IF EXISTS] a [, b] [CASCADE | RESTRICT]
struct DropTableStmt {
  bool view = false;   // DROP VIEW
  bool index = false;  // DROP INDEX
  std::vector<std::string> names;
  bool if_exists = false;
  bool cascade = false;
};

struct InsertStmt {
  std::string table;
  int table_pos = 0;
  std::vector<std::string> columns;
  std::vector<int> column_pos;
  std::vector<std::vector<ExprPtr>> rows;
  std::unique_ptr<SelectStmt> select;  // INSERT ... SELECT (then `rows` is empty)
};

struct UpdateStmt {
  std::string table;
  int table_pos = 0;
  std::vector<std::pair<std::string, ExprPtr>> sets;
  std::vector<int> set_pos;
  ExprPtr where;
};

struct DeleteStmt {
  std::string table;
  std::string alias;  // DELETE FROM t [AS] alias
  int table_pos = 0;
  ExprPtr where;
};

// ALTER TABLE t MOVE SEGMENT s TO NODE n
struct MoveSegmentStmt {
  std::string table;
  uint64_t segment = 0;
  uint32_t node = 0;
};

// ALTER TABLE t SET (replicas = n) / RESET (replicas): the table's storage parameters.
struct SetTableOptionsStmt {
  std::string table;
  std::optional<uint32_t> replicas;  // not named: unchanged; 0: RESET (replication_factor)
  int pos = 0;
};

// ALTER TABLE t ADD [CONSTRAINT name] PRIMARY KEY (cols): re-keys a table created without one.
struct AddPrimaryKeyStmt {
  std::string table;
  std::vector<std::string> columns;
  int pos = 0;
};

// CREATE [OR REPLACE] VIEW name AS <query>
struct CreateViewStmt {
  std::string name;
  bool or_replace = false;
  std::string sql;  // the query as written
  std::shared_ptr<SelectStmt> query;
  int pos = 0;
};

// CREATE USER|ROLE name [WITH] [PASSWORD 'p'] ..., ALTER USER name [WITH] PASSWORD 'p',
// DROP USER|ROLE [IF EXISTS] name
struct UserStmt {
  enum class Kind { kCreate, kAlter, kDrop };
  Kind kind = Kind::kCreate;
  std::string name;
  std::optional<std::string> password;
  bool if_exists = false;
};

// CREATE DATABASE name [options] | DROP DATABASE [IF EXISTS] name
struct DatabaseStmt {
  bool create = true;
  std::string name;
  bool if_exists = false;
};

// ALTER NODE n DRAIN | POWER OFF | POWER ON | SUSPEND
struct AlterNodeStmt {
  enum class Action { kDrain, kPowerOff, kPowerOn, kSuspend };
  uint32_t node = 0;
  Action action = Action::kDrain;
};

// ALTER SYSTEM RELOAD ENERGY POLICY: re-reads the master's energy-policy file.
struct AlterSystemStmt {
  enum class Action { kReloadEnergyPolicy };
  Action action = Action::kReloadEnergyPolicy;
};

struct TxnStmt {
  enum class Kind { kBegin, kCommit, kRollback };
  Kind kind;
  // BEGIN's modes: "read committed", "repeatable read", "serializable", "read uncommitted"
  // or "" (the session's default_transaction_isolation); READ ONLY.
  std::string isolation;
  bool read_only = false;
};

struct SetStmt {
  std::string name;
  std::string value;
};

struct ShowStmt {
  std::string name;
};

// TRUNCATE [TABLE] a [, b ...]
struct TruncateStmt {
  std::vector<std::string> names;
  int pos = 0;
};

// COPY t [(cols)] FROM STDIN | TO STDOUT [WITH] (FORMAT text|csv, HEADER, DELIMITER 'c', NULL 's')
struct CopyStmt {
  std::string table;
  int table_pos = 0;
  std::vector<std::string> columns;
  bool from = true;  // FROM STDIN (else TO STDOUT)
  bool csv = false;
  bool header = false;
  char delimiter = '\t';
  std::string null_string = "\\N";
};

struct StatementBox;

// EXPLAIN [ANALYZE] <select>
struct ExplainStmt {
  bool analyze = false;
  std::shared_ptr<StatementBox> inner;
  int pos = 0;
};

// VACUUM [table, ...]: drop versions no snapshot can see (all tables if none named).
struct VacuumStmt {
  std::vector<std::string> names;
  int pos = 0;
  bool analyze = false;       // VACUUM ANALYZE
  bool only_analyze = false;  // ANALYZE [tables]: gather planner statistics only
};

struct EmptyStmt {};

using Statement =
    std::variant<EmptyStmt, SelectStmt, CreateTableStmt, DropTableStmt, InsertStmt, UpdateStmt,
                 DeleteStmt, MoveSegmentStmt, AlterNodeStmt, TxnStmt, SetStmt, ShowStmt,
                 TruncateStmt, CopyStmt, ExplainStmt, VacuumStmt, AddPrimaryKeyStmt, CreateViewStmt,
                 UserStmt, DatabaseStmt, CreateIndexStmt, AlterSystemStmt, SetTableOptionsStmt>;

// The tables and views a query names (FROM items, also inside subqueries and set operations).
void ReferencedRelations(const SelectStmt& s, std::vector<std::string>* out);

struct StatementBox {
  Statement stmt;
};

}  // namespace wattdb::sql
