// FROM planning: resolves FROM items (tables, views, derived tables, joins) into one scope,
// places each WHERE / ON conjunct as low as it can go (a scan's filter and key range, a join
// condition, or the top), and orders inner joins greedily: start from the smallest input, then
// repeatedly add the smallest input connected by an equality (a hash join building the smaller
// side), falling back to a nested-loop join. Greedy ordering is linear in the conjuncts per step,
// so a 10-table comma join plans instantly.
#include <map>
#include <set>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/plan/query_binder.h"
#include "query/sql/parser.h"

namespace wattdb::plan {

namespace {

// A FROM item mirrored with its place in the scope.
struct FromNode {
  bool is_join = false;
  int pos = 0;
  // Leaf: columns [first, first + ncols) of the scope.
  int first = 0, ncols = 0;
  PlanPtr plan;                     // the scan or the derived table's plan
  std::optional<TableSchema> base;  // set for a plain table scan
  double est = 1000;
  // Join
  sql::JoinType type = sql::JoinType::kInner;
  std::unique_ptr<FromNode> left, right;
  const sql::Expr* on = nullptr;
  std::vector<BoundExprPtr> conds;  // USING equalities and the bound ON conjuncts
};

// An input of a join with the scope columns it yields, in order.
struct Planned {
  PlanPtr plan;
  std::vector<int> layout;
  double est = 1;
  std::optional<TableSchema> base;  // a bare scan of this table: filters may prune its range
  // A scan of this table under filters `local` (scope columns): the join's inner side may
  // instead look rows up by key (index join).
  std::optional<TableSchema> indexable;
  std::vector<BoundExprPtr> local;
  double table_rows = 0;
};

// Outer inputs up to this many rows look up the inner side by key instead of hashing it.
constexpr double kIndexJoinMaxOuter = 200;

void SplitAnd(BoundExprPtr e, std::vector<BoundExprPtr>* out) {
  if (e->kind == BoundExpr::Kind::kBinary && e->op == BinOp::kAnd) {
    SplitAnd(std::move(e->children[0]), out);
    SplitAnd(std::move(e->children[1]), out);
    return;
  }
  out->push_back(std::move(e));
}

void ColumnsOf(const BoundExpr& e, std::set<int>* cols) {
  if (e.kind == BoundExpr::Kind::kColumn) cols->insert(e.column);
  for (const auto& c : e.children) ColumnsOf(*c, cols);
}

// Rewrites scope column indexes to positions in `layout`.
BoundExprPtr Remap(const BoundExpr& e, const std::vector<int>& layout) {
  BoundExprPtr out = e.Clone();
  std::vector<BoundExpr*> stack = {out.get()};
  while (!stack.empty()) {
    BoundExpr* x = stack.back();
    stack.pop_back();
    if (x->kind == BoundExpr::Kind::kColumn) {
      for (size_t i = 0; i < layout.size(); i++) {
        if (layout[i] == x->column) {
          x->column = static_cast<int>(i);
          break;
        }
      }
    }
    for (auto& c : x->children) stack.push_back(c.get());
  }
  return out;
}

BoundExprPtr AndAll(std::vector<BoundExprPtr> es) {
  BoundExprPtr acc;
  for (auto& e : es) {
    if (!acc) {
      acc = std::move(e);
      continue;
    }
    auto a = std::make_unique<BoundExpr>();
    a->kind = BoundExpr::Kind::kBinary;
    a->op = BinOp::kAnd;
    a->type = {TypeId::kBool};
    a->children.push_back(std::move(acc));
    a->children.push_back(std::move(e));
    acc = std::move(a);
  }
  return acc;
}

// Adds `preds` (over scope columns) as a filter on `p`; a bare scan also prunes its key range.
void ApplyFilter(Planned* p, const std::vector<BoundExprPtr>& preds) {
  if (preds.empty()) return;
  if (p->indexable) {
    for (const auto& e : preds) p->local.push_back(e->Clone());
  }
  std::vector<BoundExprPtr> local;
  local.reserve(preds.size());
  for (const auto& e : preds) local.push_back(Remap(*e, p->layout));
  BoundExprPtr pred = AndAll(std::move(local));
  if (p->base && p->plan->kind == PlanNode::Kind::kScan) {
    bool point = false;
    DeriveKeyRange(pred.get(), *p->base, &p->plan->lo, &p->plan->hi, &point);
    if (point || (!p->plan->hi.empty() && p->plan->lo >= p->plan->hi)) p->est = 1;
    ChooseScanIndex(pred.get(), *p->base, p->plan.get(), &p->est);
    p->plan->est_rows = p->est;
  }
  // PostgreSQL's default selectivities: equality 0.005, inequality 1/3; others 0.5.
  for (const auto& e : preds) {
    double sel = 0.5;
    if (e->kind == BoundExpr::Kind::kBinary && e->op == BinOp::kEq) {
      sel = 0.005;
    } else if (e->kind == BoundExpr::Kind::kBinary && e->op >= BinOp::kLt && e->op <= BinOp::kGe) {
      sel = 1.0 / 3;
    }
    p->est = std::max(1.0, p->est * sel);
  }
  PlanPtr f = Wrap(PlanNode::Kind::kFilter, std::move(p->plan));
  f->predicate = std::move(pred);
  f->est_rows = p->est;
  p->plan = std::move(f);
  p->base.reset();
}

// Is `e` a = b with a over columns of `l` only and b over columns of `r` only (or reversed)?
// On success the key expressions are returned remapped to their sides' layouts.
bool EquiKeys(const BoundExpr& e, const Planned& l, const Planned& r, BoundExprPtr* lk,
              BoundExprPtr* rk) {
  if (e.kind != BoundExpr::Kind::kBinary || e.op != BinOp::kEq) return false;
  auto within = [](const BoundExpr& x, const Planned& p) {
    std::set<int> cols;
    ColumnsOf(x, &cols);
    if (cols.empty()) return false;
    for (int c : cols) {
      if (std::find(p.layout.begin(), p.layout.end(), c) == p.layout.end()) return false;
    }
    return true;
  };
  const BoundExpr& a = *e.children[0];
  const BoundExpr& b = *e.children[1];
  if (within(a, l) && within(b, r)) {
    *lk = Remap(a, l.layout);
    *rk = Remap(b, r.layout);
    return true;
  }
  if (within(b, l) && within(a, r)) {
    *lk = Remap(b, l.layout);
    *rk = Remap(a, r.layout);
    return true;
  }
  return false;
}

// An index join of l with r's table if the join's equalities (and constant equalities of r's
// filters) bind a prefix of r's primary key from l's columns; else nullopt (conds untouched).
std::optional<Planned> IndexJoin(Planned& l, Planned& r, std::vector<BoundExprPtr>& conds,
                                 PlanNode::JoinType type) {
  if (!r.indexable || l.est > kIndexJoinMaxOuter || l.est * 20 > r.table_rows) return std::nullopt;
  const TableSchema& t = *r.indexable;
  if (t.HasHiddenKey()) return std::nullopt;
  auto family = [](TypeId id) {
    return id == TypeId::kInt32 || id == TypeId::kInt64 ? TypeId::kInt64 : id;
  };
  auto within_l = [&](const BoundExpr& x) {
    std::set<int> cols;
    ColumnsOf(x, &cols);
    for (int c : cols) {
      if (std::find(l.layout.begin(), l.layout.end(), c) == l.layout.end()) return false;
    }
    return !x.HasSubquery();
  };
  std::vector<BoundExprPtr> keys;
  std::vector<size_t> used;
  bool from_outer = false;
  for (int kc : t.key_columns) {
    int g = r.layout[kc];
    TypeId want = family(t.columns[kc].type.id);
    BoundExprPtr key;
    for (size_t i = 0; i < conds.size() && !key; i++) {
      const BoundExpr& e = *conds[i];
      if (e.kind != BoundExpr::Kind::kBinary || e.op != BinOp::kEq) continue;
      for (int side = 0; side < 2 && !key; side++) {
        const BoundExpr& col = *e.children[side];
        const BoundExpr& other = *e.children[1 - side];
        if (col.kind == BoundExpr::Kind::kColumn && col.column == g && within_l(other) &&
            family(other.type.id) == want) {
          key = Remap(other, l.layout);
          used.push_back(i);
          from_outer = true;
        }
      }
    }
    for (const auto& e : r.local) {
      if (key || e->kind != BoundExpr::Kind::kBinary || e->op != BinOp::kEq) continue;
      for (int side = 0; side < 2 && !key; side++) {
        const BoundExpr& col = *e->children[side];
        const BoundExpr& other = *e->children[1 - side];
        if (col.kind == BoundExpr::Kind::kColumn && col.column == g &&
            other.kind == BoundExpr::Kind::kConst && !other.value.is_null() &&
            family(other.type.id) == want) {
          key = other.Clone();
        }
      }
    }
    if (!key) break;
    keys.push_back(std::move(key));
  }
  if (!from_outer) return std::nullopt;
  auto j = std::make_unique<PlanNode>();
  j->kind = PlanNode::Kind::kIndexJoin;
  j->join_type = type;
  j->table = t.id;
  j->table_name = t.name;
  j->left_keys = std::move(keys);
  Planned out;
  out.layout = l.layout;
  out.layout.insert(out.layout.end(), r.layout.begin(), r.layout.end());
  // Everything else is checked on the joined row: the other join conditions and r's filters.
  std::vector<BoundExprPtr> residual;
  for (size_t i = 0; i < conds.size(); i++) {
    if (std::find(used.begin(), used.end(), i) == used.end())
      residual.push_back(std::move(conds[i]));
  }
  for (auto& e : r.local) residual.push_back(std::move(e));
  if (!residual.empty()) j->predicate = Remap(*AndAll(std::move(residual)), out.layout);
  j->types = l.plan->types;
  for (const auto& c : t.columns) j->types.push_back(c.type);
  bool full_key = j->left_keys.size() == t.key_columns.size();
  out.est = std::max(1.0, full_key ? l.est : l.est * 10);
  j->est_rows = out.est;
  j->children.push_back(std::move(l.plan));
  out.plan = std::move(j);
  conds.clear();
  return out;
}

// Joins l and r on `conds` (over scope columns; all must be covered by l and r).
Planned Join(Planned l, Planned r, std::vector<BoundExprPtr> conds, PlanNode::JoinType type) {
  if (auto ij = IndexJoin(l, r, conds, type)) return std::move(*ij);
  auto j = std::make_unique<PlanNode>();
  std::vector<BoundExprPtr> residual;
  for (auto& c : conds) {
    BoundExprPtr lk, rk;
    if (EquiKeys(*c, l, r, &lk, &rk)) {
      j->left_keys.push_back(std::move(lk));
      j->right_keys.push_back(std::move(rk));
    } else {
      residual.push_back(std::move(c));
    }
  }
  Planned out;
  out.layout = l.layout;
  out.layout.insert(out.layout.end(), r.layout.begin(), r.layout.end());
  j->kind = j->left_keys.empty() ? PlanNode::Kind::kNestedLoopJoin : PlanNode::Kind::kHashJoin;
  j->join_type = type;
  if (!residual.empty()) j->predicate = Remap(*AndAll(std::move(residual)), out.layout);
  j->types = l.plan->types;
  j->types.insert(j->types.end(), r.plan->types.begin(), r.plan->types.end());
  if (j->kind == PlanNode::Kind::kHashJoin) {
    out.est = std::max(l.est, r.est);
  } else {
    out.est = l.est * r.est * (j->predicate ? 0.3 : 1.0);
  }
  if (type == PlanNode::JoinType::kLeft) out.est = std::max(out.est, l.est);
  out.est = std::max(1.0, out.est);
  j->est_rows = out.est;
  j->children.push_back(std::move(l.plan));
  j->children.push_back(std::move(r.plan));
  out.plan = std::move(j);
  return out;
}

class FromPlanner {
 public:
  FromPlanner(QueryBinder& qb, const CatalogReader& catalog, Scope* scope)
      : qb_(qb), catalog_(catalog), scope_(scope) {}

  // Resolves a FROM item, appending its columns to the scope.
  Result<std::unique_ptr<FromNode>> Resolve(const sql::TableRef& ref);
  // Binds the ON clauses of resolved joins (once the scope is complete).
  Status BindOn(FromNode& n);
  // Plans items joined by inner joins, under conjuncts `conds` (over scope columns).
  Result<Planned> PlanGroup(const std::vector<FromNode*>& items, std::vector<BoundExprPtr> conds);

 private:
  Status Flatten(FromNode& n, std::vector<Planned>* units, std::vector<BoundExprPtr>* conds);
  Result<Planned> PlanOuter(FromNode& n);
  Result<std::unique_ptr<FromNode>> Leaf(const sql::TableRef& ref, std::string qualifier,
                                         std::vector<ScopeColumn> cols);
  int ColumnOf(const FromNode& n, const std::string& name, int pos, Status* st) const;

  QueryBinder& qb_;
  const CatalogReader& catalog_;
  Scope* scope_;
  std::set<std::string> qualifiers_;
};

// unnest(array): its elements, one column.
Result<PlanPtr> BindUnnest(const sql::TableRef& ref, ExprBinder& b) {
  if (ref.args.size() != 1)
    return Status::Sql(sqlstate::kUndefinedFunction, "function unnest needs 1 argument", ref.pos);
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr e, b.Bind(*ref.args[0], &u));
  if (u) {
    ASSIGN_OR_RETURN(e,
                     b.Coerce(std::move(e), true, SqlType::Array(TypeId::kText), ref.args[0]->pos));
  }
  if (e->type.id != TypeId::kArray) {
    return Status::Sql(sqlstate::kUndefinedFunction,
                       fmt::format("function unnest({}) does not exist", TypeName(e->type)),
                       ref.pos);
  }
  if (e->HasSubquery())
    return Status::Sql(sqlstate::kFeatureNotSupported, "subqueries in unnest are not supported",
                       ref.pos);
  auto g = std::make_unique<PlanNode>();
  g->kind = PlanNode::Kind::kUnnest;
  g->types = {e->type.element()};
  g->exprs.push_back(std::move(e));
  g->est_rows = 10;
  return g;
}

// generate_series(start, stop [, step]) over integers.
Result<PlanPtr> BindGenerateSeries(const sql::TableRef& ref, ExprBinder& b) {
  if (ref.args.size() != 2 && ref.args.size() != 3) {
    return Status::Sql(sqlstate::kUndefinedFunction,
                       "function generate_series needs 2 or 3 arguments", ref.pos);
  }
  auto g = std::make_unique<PlanNode>();
  g->kind = PlanNode::Kind::kGenerateSeries;
  SqlType t{TypeId::kInt32};
  for (const auto& a : ref.args) {
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr e, b.Bind(*a, &u));
    if (u) {
      ASSIGN_OR_RETURN(e, b.Coerce(std::move(e), true, {TypeId::kInt64}, a->pos));
    }
    if (!e->type.IsInteger() && e->type.id != TypeId::kNull) {
      return Status::Sql(
          sqlstate::kUndefinedFunction,
          fmt::format("function generate_series({}) does not exist", TypeName(e->type)), a->pos);
    }
    if (e->HasSubquery())
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "subqueries in generate_series are not supported", a->pos);
    if (e->type.id == TypeId::kInt64) t = {TypeId::kInt64};
    g->exprs.push_back(std::move(e));
  }
  if (g->exprs.size() == 2) g->exprs.push_back(MakeConst(Value::Int32(1), {TypeId::kInt32}));
  g->types = {t};
  double est = 1000;
  if (g->exprs[0]->kind == BoundExpr::Kind::kConst &&
      g->exprs[1]->kind == BoundExpr::Kind::kConst && !g->exprs[0]->value.is_null() &&
      !g->exprs[1]->value.is_null()) {
    est = std::max<double>(
        1, static_cast<double>(g->exprs[1]->value.as_int() - g->exprs[0]->value.as_int() + 1));
  }
  g->est_rows = est;
  return g;
}

Result<std::unique_ptr<FromNode>> FromPlanner::Leaf(const sql::TableRef& ref, std::string qualifier,
                                                    std::vector<ScopeColumn> cols) {
  if (!qualifiers_.insert(qualifier).second) {
    return Status::Sql(sqlstate::kDuplicateAlias,
                       fmt::format("table name \"{}\" specified more than once", qualifier),
                       ref.pos);
  }
  auto n = std::make_unique<FromNode>();
  n->pos = ref.pos;
  n->first = static_cast<int>(scope_->columns.size());
  n->ncols = static_cast<int>(cols.size());
  for (auto& c : cols) {
    c.table = qualifier;
    scope_->columns.push_back(std::move(c));
  }
  return n;
}

Result<std::unique_ptr<FromNode>> FromPlanner::Resolve(const sql::TableRef& ref) {
  if (ref.kind == sql::TableRef::Kind::kJoin) {
    if (ref.join == sql::JoinType::kFull) {
      return Status::Sql(sqlstate::kFeatureNotSupported, "FULL JOIN is not supported", ref.pos);
    }
    auto n = std::make_unique<FromNode>();
    n->is_join = true;
    n->pos = ref.pos;
    n->type = ref.join;
    n->first = static_cast<int>(scope_->columns.size());
    ASSIGN_OR_RETURN(n->left, Resolve(*ref.left));
    ASSIGN_OR_RETURN(n->right, Resolve(*ref.right));
    n->ncols = static_cast<int>(scope_->columns.size()) - n->first;
    n->on = ref.on.get();
    for (const auto& name : ref.using_columns) {
      Status st;
      int l = ColumnOf(*n->left, name, ref.pos, &st);
      RETURN_NOT_OK(st);
      int r = ColumnOf(*n->right, name, ref.pos, &st);
      RETURN_NOT_OK(st);
      auto eq = std::make_unique<BoundExpr>();
      eq->kind = BoundExpr::Kind::kBinary;
      eq->op = BinOp::kEq;
      eq->type = {TypeId::kBool};
      eq->children.push_back(MakeColumn(l, scope_->columns[l].type));
      eq->children.push_back(MakeColumn(r, scope_->columns[r].type));
      n->conds.push_back(std::move(eq));
      // The merged column reads as the preserved side's.
      scope_->columns[ref.join == sql::JoinType::kRight ? l : r].hidden = true;
    }
    return n;
  }
  if (ref.kind == sql::TableRef::Kind::kSubquery) {
    ASSIGN_OR_RETURN(BoundSelect sub, qb_.BindQuery(*ref.subquery, scope_->parent));
    if (sub.correlated) scope_->correlated = true;
    std::vector<ScopeColumn> cols;
    for (size_t i = 0; i < sub.names.size(); i++)
      cols.push_back({"", sub.names[i], sub.types[i], false});
    ASSIGN_OR_RETURN(auto n, Leaf(ref, ref.alias, std::move(cols)));
    n->est = sub.plan->est_rows >= 0 ? sub.plan->est_rows : 100;
    n->plan = std::move(sub.plan);
    return n;
  }
  if (ref.kind == sql::TableRef::Kind::kFunction) {
    if (ref.name != "generate_series" && ref.name != "unnest") {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("function {} in FROM is not supported", ref.name), ref.pos);
    }
    // The arguments may read enclosing queries' columns, not other FROM items'.
    Scope none;
    none.parent = scope_->parent;
    ExprBinder b = qb_.MakeExprBinder(&none);
    ASSIGN_OR_RETURN(PlanPtr g,
                     ref.name == "unnest" ? BindUnnest(ref, b) : BindGenerateSeries(ref, b));
    if (none.correlated) scope_->correlated = true;
    std::string name = ref.alias.empty() ? ref.name : ref.alias;
    ASSIGN_OR_RETURN(auto n, Leaf(ref, name, {{"", name, g->types[0], false}}));
    n->est = g->est_rows;
    n->plan = std::move(g);
    return n;
  }
  if (auto view = catalog_.GetView(ref.name)) {
    auto parsed = sql::Parse(*view);
    if (!parsed.ok() || parsed->size() != 1 ||
        !std::holds_alternative<sql::SelectStmt>((*parsed)[0])) {
      return Status::Sql(sqlstate::kInternalError,
                         fmt::format("the definition of view \"{}\" does not parse", ref.name),
                         ref.pos);
    }
    sql::TableRef as_sub;
    as_sub.kind = sql::TableRef::Kind::kSubquery;
    as_sub.pos = ref.pos;
    as_sub.alias = ref.alias.empty() ? ref.name : ref.alias;
    as_sub.subquery =
        std::make_shared<sql::SelectStmt>(std::move(std::get<sql::SelectStmt>((*parsed)[0])));
    return Resolve(as_sub);
  }
  auto t = catalog_.GetTable(ref.name);
  if (!t.ok()) return t.status().WithPosition(ref.pos);
  std::vector<ScopeColumn> cols;
  for (const auto& c : t->columns) cols.push_back({"", c.name, c.type, c.hidden});
  ASSIGN_OR_RETURN(auto n, Leaf(ref, ref.alias.empty() ? ref.name : ref.alias, std::move(cols)));
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = t->id;
  scan->table_name = t->name;
  for (const auto& c : t->columns) scan->types.push_back(c.type);
  n->est = catalog_.EstimateRows(*t);
  scan->est_rows = n->est;
  n->plan = std::move(scan);
  n->base = std::move(t).value();
  return n;
}

int FromPlanner::ColumnOf(const FromNode& n, const std::string& name, int pos, Status* st) const {
  int found = -1;
  for (int i = n.first; i < n.first + n.ncols; i++) {
    const ScopeColumn& c = scope_->columns[i];
    if (c.name != name || c.hidden) continue;
    if (found >= 0) {
      *st = Status::Sql(sqlstate::kAmbiguousColumn,
                        fmt::format("common column name \"{}\" appears more than once", name), pos);
      return -1;
    }
    found = i;
  }
  if (found < 0) {
    *st = Status::Sql(sqlstate::kUndefinedColumn,
                      fmt::format("column \"{}\" specified in USING clause does not exist", name),
                      pos);
  }
  return found;
}

Status FromPlanner::BindOn(FromNode& n) {
  if (!n.is_join) return Status::OK();
  RETURN_NOT_OK(BindOn(*n.left));
  RETURN_NOT_OK(BindOn(*n.right));
  if (!n.on) return Status::OK();
  // ON sees only the columns of its own join.
  Scope on_scope;
  on_scope.columns = scope_->columns;
  on_scope.parent = scope_->parent;
  for (int i = 0; i < static_cast<int>(on_scope.columns.size()); i++) {
    if (i < n.first || i >= n.first + n.ncols) on_scope.columns[i].hidden = true;
  }
  ExprBinder b = qb_.MakeExprBinder(&on_scope);
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr on, b.Bind(*n.on, &u));
  if (u) {
    ASSIGN_OR_RETURN(on, b.Coerce(std::move(on), true, {TypeId::kBool}, n.on->pos));
  }
  if (on->type.id != TypeId::kBool && on->type.id != TypeId::kNull) {
    return Status::Sql(
        sqlstate::kDatatypeMismatch,
        fmt::format("argument of JOIN/ON must be type boolean, not type {}", TypeName(on->type)),
        n.on->pos);
  }
  if (on->HasSubquery())
    return Status::Sql(sqlstate::kFeatureNotSupported, "subqueries in JOIN/ON are not supported",
                       n.on->pos);
  if (on_scope.correlated) scope_->correlated = true;
  SplitAnd(std::move(on), &n.conds);
  return Status::OK();
}

Status FromPlanner::Flatten(FromNode& n, std::vector<Planned>* units,
                            std::vector<BoundExprPtr>* conds) {
  if (!n.is_join) {
    Planned p;
    p.plan = std::move(n.plan);
    for (int i = 0; i < n.ncols; i++) p.layout.push_back(n.first + i);
    p.est = n.est;
    p.table_rows = n.est;
    p.indexable = n.base;
    p.base = std::move(n.base);
    units->push_back(std::move(p));
    return Status::OK();
  }
  if (n.type == sql::JoinType::kLeft || n.type == sql::JoinType::kRight) {
    ASSIGN_OR_RETURN(Planned p, PlanOuter(n));
    units->push_back(std::move(p));
    return Status::OK();
  }
  RETURN_NOT_OK(Flatten(*n.left, units, conds));
  RETURN_NOT_OK(Flatten(*n.right, units, conds));
  for (auto& c : n.conds) conds->push_back(std::move(c));
  return Status::OK();
}

Result<Planned> FromPlanner::PlanOuter(FromNode& n) {
  bool left = n.type == sql::JoinType::kLeft;
  FromNode& keep = left ? *n.left : *n.right;
  FromNode& nullable = left ? *n.right : *n.left;
  // Conditions on the nullable side alone filter it before the join.
  std::vector<BoundExprPtr> pushed, rest;
  for (auto& c : n.conds) {
    std::set<int> cols;
    ColumnsOf(*c, &cols);
    bool only_nullable = !cols.empty();
    for (int col : cols)
      only_nullable &= col >= nullable.first && col < nullable.first + nullable.ncols;
    (only_nullable ? pushed : rest).push_back(std::move(c));
  }
  ASSIGN_OR_RETURN(Planned p, PlanGroup({&keep}, {}));
  ASSIGN_OR_RETURN(Planned q, PlanGroup({&nullable}, std::move(pushed)));
  return Join(std::move(p), std::move(q), std::move(rest), PlanNode::JoinType::kLeft);
}

Result<Planned> FromPlanner::PlanGroup(const std::vector<FromNode*>& items,
                                       std::vector<BoundExprPtr> conds) {
  std::vector<Planned> units;
  for (FromNode* it : items) RETURN_NOT_OK(Flatten(*it, &units, &conds));
  // Which unit each scope column belongs to.
  std::map<int, size_t> owner;
  for (size_t u = 0; u < units.size(); u++) {
    for (int c : units[u].layout) owner[c] = u;
  }
  struct Cond {
    BoundExprPtr e;
    std::set<size_t> units;
  };
  std::vector<Cond> pending;
  std::vector<std::vector<BoundExprPtr>> local(units.size());
  std::vector<BoundExprPtr> constant;
  for (auto& c : conds) {
    std::set<int> cols;
    ColumnsOf(*c, &cols);
    std::set<size_t> us;
    for (int col : cols) us.insert(owner.at(col));
    if (us.empty()) {
      constant.push_back(std::move(c));
    } else if (us.size() == 1) {
      local[*us.begin()].push_back(std::move(c));
    } else {
      pending.push_back({std::move(c), std::move(us)});
    }
  }
  for (size_t u = 0; u < units.size(); u++) ApplyFilter(&units[u], local[u]);

  std::vector<bool> used(units.size(), false);
  auto smallest = [&](bool connected_only, const std::set<size_t>& have) -> int {
    int best = -1;
    for (size_t u = 0; u < units.size(); u++) {
      if (used[u]) continue;
      if (connected_only) {
        bool connected = false;
        for (const auto& pc : pending) {
          if (!pc.e || !pc.units.count(u)) continue;
          BoundExpr& e = *pc.e;
          if (e.kind != BoundExpr::Kind::kBinary || e.op != BinOp::kEq) continue;
          bool rest_in = true;
          for (size_t o : pc.units) rest_in &= o == u || have.count(o);
          connected |= rest_in;
        }
        if (!connected) continue;
      }
      // Ties go to the smaller table: a larger one is better looked up by key afterwards.
      if (best < 0 || units[u].est < units[best].est ||
          (units[u].est == units[best].est && units[u].table_rows < units[best].table_rows)) {
        best = static_cast<int>(u);
      }
    }
    return best;
  };
  std::set<size_t> have;
  int first = smallest(false, have);
  Planned cur = std::move(units[first]);
  used[first] = true;
  have.insert(first);
  for (size_t step = 1; step < units.size(); step++) {
    int next = smallest(true, have);
    if (next < 0) next = smallest(false, have);
    have.insert(next);
    used[next] = true;
    std::vector<BoundExprPtr> on;
    for (auto& pc : pending) {
      if (!pc.e) continue;
      bool covered = true;
      for (size_t o : pc.units) covered &= have.count(o) > 0;
      if (covered) on.push_back(std::move(pc.e));
    }
    // A hash join builds its right input: the smaller one, unless the new input can be
    // looked up by key for each row so far (an index join).
    Planned add = std::move(units[next]);
    if (auto ij = IndexJoin(cur, add, on, PlanNode::JoinType::kInner)) {
      cur = std::move(*ij);
    } else if (add.est > cur.est) {
      cur = Join(std::move(add), std::move(cur), std::move(on), PlanNode::JoinType::kInner);
    } else {
      cur = Join(std::move(cur), std::move(add), std::move(on), PlanNode::JoinType::kInner);
    }
  }
  ApplyFilter(&cur, constant);
  return cur;
}

}  // namespace

Result<PlanPtr> QueryBinder::BindFrom(const sql::SelectStmt& s, Scope* scope) {
  CHECK_STACK_DEPTH();
  FromPlanner fp(*this, catalog_, scope);
  std::vector<std::unique_ptr<FromNode>> items;
  for (const auto& ref : s.from) {
    ASSIGN_OR_RETURN(auto n, fp.Resolve(ref));
    items.push_back(std::move(n));
  }
  for (auto& n : items) RETURN_NOT_OK(fp.BindOn(*n));

  std::vector<BoundExprPtr> conds, top;
  if (s.where) {
    ExprBinder b = MakeExprBinder(scope);
    b.set_allow_aggregates(false, "WHERE");
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr w, b.Bind(*s.where, &u));
    if (u) {
      ASSIGN_OR_RETURN(w, b.Coerce(std::move(w), true, {TypeId::kBool}, s.where->pos));
    }
    if (w->type.id != TypeId::kBool && w->type.id != TypeId::kNull) {
      return Status::Sql(
          sqlstate::kDatatypeMismatch,
          fmt::format("argument of WHERE must be type boolean, not type {}", TypeName(w->type)),
          s.where->pos);
    }
    std::vector<BoundExprPtr> parts;
    SplitAnd(std::move(w), &parts);
    // Conjuncts with subqueries see the whole row of this query: they stay on top.
    for (auto& p : parts) (p->HasSubquery() ? top : conds).push_back(std::move(p));
  }
  Planned planned;
  if (items.empty()) {
    planned.plan = std::make_unique<PlanNode>();
    planned.plan->kind = PlanNode::Kind::kValues;
    planned.plan->rows.push_back({});
    planned.est = 1;
    ApplyFilter(&planned, conds);
  } else {
    std::vector<FromNode*> ptrs;
    ptrs.reserve(items.size());
    for (auto& n : items) ptrs.push_back(n.get());
    ASSIGN_OR_RETURN(planned, fp.PlanGroup(ptrs, std::move(conds)));
  }
  // Back to scope order.
  bool identity = true;
  for (size_t i = 0; i < planned.layout.size(); i++)
    identity &= planned.layout[i] == static_cast<int>(i);
  if (!identity) {
    auto p = std::make_unique<PlanNode>();
    p->kind = PlanNode::Kind::kProject;
    std::vector<int> pos(scope->columns.size());
    for (size_t i = 0; i < planned.layout.size(); i++) pos[planned.layout[i]] = static_cast<int>(i);
    for (size_t c = 0; c < scope->columns.size(); c++) {
      p->exprs.push_back(MakeColumn(pos[c], scope->columns[c].type));
      p->types.push_back(scope->columns[c].type);
    }
    p->est_rows = planned.est;
    p->children.push_back(std::move(planned.plan));
    planned.plan = std::move(p);
  }
  if (!top.empty()) {
    PlanPtr f = Wrap(PlanNode::Kind::kFilter, std::move(planned.plan));
    f->predicate = AndAll(std::move(top));
    planned.plan = std::move(f);
  }
  return std::move(planned.plan);
}

}  // namespace wattdb::plan
