#include "query/plan/binder.h"

#include <map>

#include "common/clock.h"
#include "common/codec.h"
#include "common/sqlstate.h"
#include "query/plan/query_binder.h"
#include "query/sql/parser.h"

namespace wattdb::plan {

int64_t PgNowMicros() { return Clock::Real().WallMicros() - kPgEpochUnixMicros; }

int64_t CatalogReader::StatementTime() const { return PgNowMicros(); }

namespace {

Scope TableScope(const TableSchema& t, const std::string& alias = "") {
  Scope s;
  for (const auto& c : t.columns)
    s.columns.push_back({alias.empty() ? t.name : alias, c.name, c.type, c.hidden});
  return s;
}

PlanPtr MakeScan(const TableSchema& t, const BoundExpr* where) {
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = t.id;
  scan->table_name = t.name;
  for (const auto& c : t.columns) scan->types.push_back(c.type);
  DeriveKeyRange(where, t, &scan->lo, &scan->hi);
  double est = -1;
  ChooseScanIndex(where, t, scan.get(), &est);
  return scan;
}

}  // namespace

Result<int64_t> ConstInt(const Expr& e, const char* what) {
  if (e.kind == Expr::Kind::kLiteral && e.value.is_null()) return -1;
  if (e.kind != Expr::Kind::kLiteral || !SqlType{e.value.type()}.IsInteger()) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("{} must be an integer constant", what), e.pos);
  }
  if (e.value.as_int() < 0) {
    return Status::Sql(sqlstate::kInvalidRowCountInLimitClause,
                       fmt::format("{} must not be negative", what), e.pos);
  }
  return e.value.as_int();
}

PlanPtr Wrap(PlanNode::Kind kind, PlanPtr child) {
  auto p = std::make_unique<PlanNode>();
  p->kind = kind;
  p->types = child->types;
  p->children.push_back(std::move(child));
  return p;
}

namespace {

// Bounds on a sequence of columns (a primary key, or an index with per-column directions)
// derived from conjuncts: equalities on a prefix, then a range on the next column.
struct KeyBounds {
  std::string lo, hi;  // "" = unbounded
  size_t eq_cols = 0;  // leading columns bound by equalities
  bool range = false;  // the next column is bounded too
  bool empty = false;  // no key satisfies the bounds
};

// `v` as a value of column type `to` for key encoding, if that is exact.
std::optional<Value> KeyValue(const Value& v, TypeId to) {
  auto integer = [](TypeId id) { return id == TypeId::kInt32 || id == TypeId::kInt64; };
  if (v.is_null()) return std::nullopt;
  if (integer(v.type()) && integer(to)) return v;
  if (integer(v.type()) && to == TypeId::kDouble && v.as_int() > -(1LL << 53) &&
      v.as_int() < (1LL << 53)) {
    return Value::Double(static_cast<double>(v.as_int()));
  }
  if (v.type() == to) return v;
  return std::nullopt;
}

BinOp Flip(BinOp op) {
  return op == BinOp::kLt   ? BinOp::kGt
         : op == BinOp::kLe ? BinOp::kGe
         : op == BinOp::kGt ? BinOp::kLt
         : op == BinOp::kGe ? BinOp::kLe
                            : op;
}

// Per key column: its comparisons with constants (op in encoded order, encoded value).
using ColumnComparisons = std::vector<std::vector<std::pair<BinOp, std::string>>>;

// Collects the comparisons of the conjuncts with constants, per key column `cols[k]`.
// `desc` null: primary-key encoding (EncodeKeyValue); else index encoding with directions.
class ComparisonCollector {
 public:
  ComparisonCollector(const TableSchema& t, const std::vector<int>& cols,
                      const std::vector<bool>* desc)
      : t_(t), cols_(cols), desc_(desc), bounds_(cols.size()) {}

  void Add(const BoundExpr* e) {
    if (e->kind == BoundExpr::Kind::kInList && !e->negated &&
        e->children[0]->kind == BoundExpr::Kind::kColumn) {
      AddInList(e);
      return;
    }
    if (e->kind != BoundExpr::Kind::kBinary || e->op < BinOp::kEq || e->op == BinOp::kNe ||
        e->op > BinOp::kGe) {
      return;
    }
    const BoundExpr* a = e->children[0].get();
    const BoundExpr* b = e->children[1].get();
    BinOp op = e->op;
    if (a->kind == BoundExpr::Kind::kConst && b->kind == BoundExpr::Kind::kColumn) {
      std::swap(a, b);
      op = Flip(op);
    }
    if (a->kind != BoundExpr::Kind::kColumn || b->kind != BoundExpr::Kind::kConst) return;
    for (size_t k = 0; k < cols_.size(); k++) {
      if (cols_[k] != a->column) continue;
      auto v = KeyValue(b->value, t_.columns[cols_[k]].type.id);
      if (!v) break;
      bounds_[k].emplace_back(desc_ && (*desc_)[k] ? Flip(op) : op, Encode(k, *v));
    }
  }

  ColumnComparisons Take() { return std::move(bounds_); }

 private:
  std::string Encode(size_t k, const Value& v) const {
    std::string enc;
    if (desc_) {
      EncodeIndexColumn(v, (*desc_)[k], &enc);
    } else {
      EncodeKeyValue(v, &enc);
    }
    return enc;
  }

  // col IN (c1, ...): the range from the smallest to the largest constant.
  void AddInList(const BoundExpr* e) {
    for (size_t k = 0; k < cols_.size(); k++) {
      if (cols_[k] != e->children[0]->column) continue;
      std::optional<std::string> mn, mx;
      if (e->children.size() <= 1) return;
      for (size_t i = 1; i < e->children.size(); i++) {
        const BoundExpr* c = e->children[i].get();
        auto v = c->kind == BoundExpr::Kind::kConst
                     ? KeyValue(c->value, t_.columns[cols_[k]].type.id)
                     : std::nullopt;
        if (!v) return;
        std::string enc = Encode(k, *v);
        if (!mn || enc < *mn) mn = enc;
        if (!mx || enc > *mx) mx = enc;
      }
      if (*mn == *mx) {
        bounds_[k].emplace_back(BinOp::kEq, *mn);
      } else {
        bounds_[k].emplace_back(BinOp::kGe, *mn);
        bounds_[k].emplace_back(BinOp::kLe, *mx);
      }
    }
  }

  const TableSchema& t_;
  const std::vector<int>& cols_;
  const std::vector<bool>* desc_;
  ColumnComparisons bounds_;
};

// The key range the comparisons allow: the longest prefix of columns compared for equality,
// then the range of the next column's comparisons.
KeyBounds RangeOf(const ColumnComparisons& bounds) {
  KeyBounds out;
  std::string prefix;
  size_t k = 0;
  for (; k < bounds.size(); k++) {
    auto eq = std::find_if(bounds[k].begin(), bounds[k].end(),
                           [](const auto& b) { return b.first == BinOp::kEq; });
    if (eq == bounds[k].end()) break;
    prefix += eq->second;
  }
  out.eq_cols = k;
  out.lo = prefix;
  out.hi = prefix.empty() ? "" : PrefixSuccessor(prefix);
  if (k < bounds.size()) {
    for (const auto& [op, enc] : bounds[k]) {
      std::string at = prefix + enc;
      std::string after = PrefixSuccessor(at);
      out.range = true;
      switch (op) {
        case BinOp::kGt:
          if (after.empty()) {
            out.lo = out.hi = at;
            out.empty = true;
            return out;
          }
          out.lo = std::max(out.lo, after);
          break;
        case BinOp::kGe:
          out.lo = std::max(out.lo, at);
          break;
        case BinOp::kLt:
          if (out.hi.empty() || at < out.hi) out.hi = at;
          break;
        case BinOp::kLe:
          if (!after.empty() && (out.hi.empty() || after < out.hi)) out.hi = after;
          break;
        default:
          break;
      }
    }
  }
  if (!out.hi.empty() && out.lo >= out.hi) {
    out.hi = out.lo;  // empty range
    out.empty = true;
  }
  return out;
}

// `desc` null: primary-key encoding (EncodeKeyValue); else index encoding with directions.
KeyBounds DeriveBounds(const std::vector<const BoundExpr*>& conj, const TableSchema& t,
                       const std::vector<int>& cols, const std::vector<bool>* desc) {
  ComparisonCollector collect(t, cols, desc);
  for (const BoundExpr* e : conj) collect.Add(e);
  return RangeOf(collect.Take());
}

}  // namespace

std::vector<const BoundExpr*> Conjuncts(const BoundExpr* pred) {
  std::vector<const BoundExpr*> conj;
  std::vector<const BoundExpr*> stack = {pred};
  while (!stack.empty()) {
    const BoundExpr* e = stack.back();
    stack.pop_back();
    if (e->kind == BoundExpr::Kind::kBinary && e->op == BinOp::kAnd) {
      stack.push_back(e->children[0].get());
      stack.push_back(e->children[1].get());
    } else {
      conj.push_back(e);
    }
  }
  return conj;
}

bool AppendKeyValue(const Value& v, TypeId to, std::string* out) {
  auto k = KeyValue(v, to);
  if (!k) return false;
  EncodeKeyValue(*k, out);
  return true;
}

void DeriveKeyRange(const BoundExpr* pred, const TableSchema& t, std::string* lo, std::string* hi,
                    bool* point) {
  lo->clear();
  hi->clear();
  if (point) *point = false;
  if (!pred || t.HasHiddenKey()) return;
  KeyBounds b = DeriveBounds(Conjuncts(pred), t, t.key_columns, nullptr);
  *lo = b.lo;
  *hi = b.hi;
  if (point) *point = b.eq_cols == t.key_columns.size();
}

void ChooseScanIndex(const BoundExpr* pred, const TableSchema& t, PlanNode* scan, double* est) {
  if (!pred || t.indexes.empty()) return;
  auto conj = Conjuncts(pred);
  KeyBounds pk = t.HasHiddenKey() ? KeyBounds{} : DeriveBounds(conj, t, t.key_columns, nullptr);
  if (pk.eq_cols > 0 || pk.empty) return;  // the primary key narrows the scan already
  const IndexDef* best = nullptr;
  KeyBounds best_b;
  auto rank = [](const KeyBounds& b, const IndexDef& ix) {
    return std::make_tuple(b.eq_cols, b.range, ix.unique && b.eq_cols == ix.spec.columns.size());
  };
  for (const auto& ix : t.indexes) {
    KeyBounds b = DeriveBounds(conj, t, ix.spec.columns, &ix.spec.desc);
    if (b.eq_cols == 0 && !b.range) continue;
    if (!best || rank(b, ix) > rank(best_b, *best)) {
      best = &ix;
      best_b = b;
    }
  }
  if (!best) return;
  // A range on the leading primary-key column beats an index range, not an index equality.
  if (pk.range && best_b.eq_cols == 0) return;
  scan->index = best->spec.id;
  scan->index_name = best->name;
  scan->lo = best_b.lo;
  scan->hi = best_b.hi;
  if (best->unique && best_b.eq_cols == best->spec.columns.size()) *est = 1;
}

Result<BoundSelect> BindSelect(const sql::SelectStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  QueryBinder qb(catalog, params);
  return qb.BindQuery(s, nullptr);
}

namespace {

// Assignment of a value of type `from` to a column of type `to` (PostgreSQL assignment casts).
bool Assignable(const SqlType& from, const SqlType& to) {
  if (from.id == TypeId::kNull || from.id == to.id) return true;
  if (from.IsNumeric() && to.IsNumeric()) return true;
  if (to.id == TypeId::kText) return true;
  return false;
}

Result<BoundExprPtr> BindAssignment(ExprBinder& b, const Expr& e, const Column& col) {
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr v, b.Bind(e, &u));
  if (!u && !Assignable(v->type, col.type)) {
    return Status::Sql(sqlstate::kDatatypeMismatch,
                       fmt::format("column \"{}\" is of type {} but expression is of type {}",
                                   col.name, col.type.ToString(), TypeName(v->type)),
                       e.pos);
  }
  return b.Coerce(std::move(v), u, col.type, e.pos);
}

}  // namespace

Result<BoundExprPtr> BindDefault(const Column& col) {
  if (col.default_sql.empty()) return MakeConst(Value(), col.type);
  ASSIGN_OR_RETURN(sql::ExprPtr e, sql::ParseExpression(col.default_sql));
  Scope empty;
  ExprBinder b(&empty);
  auto v = BindAssignment(b, *e, col);
  if (!v.ok()) {
    return Status::Sql(v.status().sqlstate(), fmt::format("invalid DEFAULT for column \"{}\": {}",
                                                          col.name, v.status().message()));
  }
  return v;
}

namespace {

// The columns an INSERT names, as indexes into `table` (all visible columns if none).
Result<std::vector<int>> InsertTargets(const sql::InsertStmt& s, const TableSchema& table) {
  std::vector<int> targets;
  if (s.columns.empty()) {
    for (size_t i = 0; i < table.columns.size(); i++) {
      if (!table.columns[i].hidden) targets.push_back(static_cast<int>(i));
    }
  } else {
    for (size_t i = 0; i < s.columns.size(); i++) {
      int idx = table.ColumnIndex(s.columns[i]);
      if (idx < 0 || table.columns[idx].hidden) {
        return Status::Sql(sqlstate::kUndefinedColumn,
                           fmt::format("column \"{}\" of relation \"{}\" does not exist",
                                       s.columns[i], table.name),
                           s.column_pos[i]);
      }
      for (int prev : targets) {
        if (prev == idx) {
          return Status::Sql(sqlstate::kDuplicateColumn,
                             fmt::format("column \"{}\" specified more than once", s.columns[i]),
                             s.column_pos[i]);
        }
      }
      targets.push_back(idx);
    }
  }
  return targets;
}

// INSERT ... SELECT: a projection of the query's rows onto every column of `table`.
Result<PlanPtr> BindInsertSelect(const sql::InsertStmt& s, const TableSchema& table,
                                 const std::vector<int>& targets, BoundSelect& sel) {
  if (sel.types.size() > targets.size()) {
    return Status::Sql(sqlstate::kSyntaxError, "INSERT has more expressions than target columns",
                       s.table_pos);
  }
  if (sel.types.size() < targets.size()) {
    return Status::Sql(sqlstate::kSyntaxError, "INSERT has more target columns than expressions",
                       s.table_pos);
  }
  Scope row_scope;
  for (size_t i = 0; i < sel.types.size(); i++)
    row_scope.columns.push_back({"", sel.names[i], sel.types[i]});
  ExprBinder rb(&row_scope);
  auto p = std::make_unique<PlanNode>();
  p->kind = PlanNode::Kind::kProject;
  p->exprs.resize(table.columns.size());
  for (size_t i = 0; i < targets.size(); i++) {
    const Column& col = table.columns[targets[i]];
    const SqlType& from = sel.types[i];
    if (!Assignable(from, col.type)) {
      return Status::Sql(sqlstate::kDatatypeMismatch,
                         fmt::format("column \"{}\" is of type {} but expression is of type {}",
                                     col.name, col.type.ToString(), TypeName(from)),
                         s.table_pos);
    }
    ASSIGN_OR_RETURN(p->exprs[targets[i]], rb.Coerce(MakeColumn(static_cast<int>(i), from), false,
                                                     col.type, s.table_pos));
  }
  for (size_t i = 0; i < p->exprs.size(); i++) {
    if (!p->exprs[i]) {
      ASSIGN_OR_RETURN(p->exprs[i], BindDefault(table.columns[i]));
    }
    p->types.push_back(table.columns[i].type);
  }
  p->children.push_back(std::move(sel.plan));
  return PlanPtr(std::move(p));
}

// INSERT ... VALUES: each row's expression for every column of `table`.
Result<std::vector<std::vector<BoundExprPtr>>> BindInsertValues(const sql::InsertStmt& s,
                                                                const TableSchema& table,
                                                                const std::vector<int>& targets,
                                                                QueryBinder& qb) {
  std::vector<std::vector<BoundExprPtr>> rows;
  Scope empty;
  ExprBinder binder = qb.MakeExprBinder(&empty);
  // The columns no row names take their defaults: bound once, copied into every row.
  std::vector<BoundExprPtr> defaults(table.columns.size());
  for (size_t i = 0; i < table.columns.size(); i++) {
    if (std::find(targets.begin(), targets.end(), static_cast<int>(i)) == targets.end()) {
      ASSIGN_OR_RETURN(defaults[i], BindDefault(table.columns[i]));
    }
  }
  for (const auto& row : s.rows) {
    if (row.size() > targets.size()) {
      return Status::Sql(sqlstate::kSyntaxError, "INSERT has more expressions than target columns",
                         row[targets.size()]->pos);
    }
    if (row.size() < targets.size()) {
      return Status::Sql(sqlstate::kSyntaxError, "INSERT has more target columns than expressions",
                         row.empty() ? 0 : row.back()->pos);
    }
    std::vector<BoundExprPtr> full(table.columns.size());
    for (size_t i = 0; i < targets.size(); i++) {
      ASSIGN_OR_RETURN(full[targets[i]],
                       BindAssignment(binder, *row[i], table.columns[targets[i]]));
    }
    for (size_t i = 0; i < full.size(); i++) {
      if (!full[i]) full[i] = defaults[i]->Clone();
    }
    rows.push_back(std::move(full));
  }
  return rows;
}

}  // namespace

Result<BoundInsert> BindInsert(const sql::InsertStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundInsert out;
  out.table = std::move(t).value();
  const TableSchema& table = out.table;
  ASSIGN_OR_RETURN(std::vector<int> targets, InsertTargets(s, table));
  QueryBinder qb(catalog, params);
  std::optional<BoundSelect> selected;
  if (s.select) {
    ASSIGN_OR_RETURN(selected, qb.BindQuery(*s.select, nullptr));
  }
  // Without a column list, fewer values than columns fill the leading columns (the rest take
  // their defaults), as in PostgreSQL.
  size_t width = selected         ? selected->types.size()
                 : s.rows.empty() ? targets.size()
                                  : s.rows[0].size();
  if (s.columns.empty() && width < targets.size()) targets.resize(width);
  for (size_t i = 0; i < table.columns.size(); i++) {
    if (table.columns[i].serial &&
        std::find(targets.begin(), targets.end(), static_cast<int>(i)) == targets.end()) {
      out.generated.push_back(static_cast<int>(i));
    }
  }
  if (selected) {
    ASSIGN_OR_RETURN(out.source, BindInsertSelect(s, table, targets, *selected));
  } else {
    ASSIGN_OR_RETURN(out.rows, BindInsertValues(s, table, targets, qb));
  }
  return out;
}

namespace {

// Binds the WHERE clause of an UPDATE or DELETE into a scan + filter over every column.
Status BindSource(ExprBinder& binder, const sql::ExprPtr& where_ast, BoundModify* out) {
  BoundExprPtr where;
  if (where_ast) {
    ASSIGN_OR_RETURN(where, binder.Bind(*where_ast));
    if (where->type.id != TypeId::kBool && where->type.id != TypeId::kNull) {
      return Status::Sql(
          sqlstate::kDatatypeMismatch,
          fmt::format("argument of WHERE must be type boolean, not type {}", TypeName(where->type)),
          where_ast->pos);
    }
  }
  out->source = MakeScan(out->table, where.get());
  if (where) {
    out->source = Wrap(PlanNode::Kind::kFilter, std::move(out->source));
    out->source->predicate = std::move(where);
  }
  return Status::OK();
}

}  // namespace

Result<BoundModify> BindUpdate(const sql::UpdateStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundModify out;
  out.table = std::move(t).value();
  Scope scope = TableScope(out.table);
  QueryBinder qb(catalog, params);
  ExprBinder binder = qb.MakeExprBinder(&scope);
  for (size_t i = 0; i < s.sets.size(); i++) {
    int idx = out.table.ColumnIndex(s.sets[i].first);
    if (idx < 0 || out.table.columns[idx].hidden) {
      return Status::Sql(sqlstate::kUndefinedColumn,
                         fmt::format("column \"{}\" of relation \"{}\" does not exist",
                                     s.sets[i].first, out.table.name),
                         s.set_pos[i]);
    }
    for (const auto& [prev, e] : out.sets) {
      if (prev == idx) {
        return Status::Sql(
            sqlstate::kSyntaxError,
            fmt::format("multiple assignments to same column \"{}\"", s.sets[i].first),
            s.set_pos[i]);
      }
    }
    ASSIGN_OR_RETURN(BoundExprPtr v,
                     BindAssignment(binder, *s.sets[i].second, out.table.columns[idx]));
    out.sets.emplace_back(idx, std::move(v));
  }
  RETURN_NOT_OK(BindSource(binder, s.where, &out));
  return out;
}

Result<BoundModify> BindDelete(const sql::DeleteStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundModify out;
  out.table = std::move(t).value();
  Scope scope = TableScope(out.table, s.alias);
  QueryBinder qb(catalog, params);
  ExprBinder binder = qb.MakeExprBinder(&scope);
  RETURN_NOT_OK(BindSource(binder, s.where, &out));
  return out;
}

}  // namespace wattdb::plan
