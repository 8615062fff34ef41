// Query binding: set operations and SELECT cores (select list, aggregation, HAVING, DISTINCT,
// ORDER BY, LIMIT) over the plan of their FROM list (from_binder.cc).
#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/plan/query_binder.h"

namespace wattdb::plan {

namespace {

// Sorts `plan` by `keys` (if any), then applies the query's LIMIT and OFFSET.
Result<PlanPtr> SortAndLimit(const sql::SelectStmt& s, PlanPtr plan, std::vector<SortKey> keys) {
  if (!keys.empty()) {
    plan = Wrap(PlanNode::Kind::kSort, std::move(plan));
    plan->keys = std::move(keys);
  }
  if (s.limit || s.offset) {
    plan = Wrap(PlanNode::Kind::kLimit, std::move(plan));
    if (s.limit) {
      ASSIGN_OR_RETURN(plan->limit, ConstInt(*s.limit, "LIMIT"));
    }
    if (s.offset) {
      ASSIGN_OR_RETURN(plan->offset, ConstInt(*s.offset, "OFFSET"));
      if (plan->offset < 0) plan->offset = 0;
    }
  }
  return plan;
}

}  // namespace

bool ContainsAggregate(const Expr& e) {
  if (e.kind == Expr::Kind::kFunc && IsAggregateName(e.name)) return true;
  for (const auto& a : e.args) {
    if (a && ContainsAggregate(*a)) return true;
  }
  if (e.operand && ContainsAggregate(*e.operand)) return true;
  if (e.else_expr && ContainsAggregate(*e.else_expr)) return true;
  return false;
}

std::string OutputName(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kColumn:
      return e.name;
    case Expr::Kind::kFunc:
      if (e.name == "__is_true" || e.name == "__is_false") return "?column?";
      return e.name;
    case Expr::Kind::kCase:
      return "case";
    case Expr::Kind::kExists:
      return "exists";
    case Expr::Kind::kCast:
      if (e.args[0]->kind == Expr::Kind::kColumn || e.args[0]->kind == Expr::Kind::kFunc) {
        return OutputName(*e.args[0]);
      }
      switch (e.cast_type.id) {
        case TypeId::kInt32:
          return "int4";
        case TypeId::kInt64:
          return "int8";
        case TypeId::kDouble:
          return "float8";
        case TypeId::kBool:
          return "bool";
        case TypeId::kNumeric:
          return "numeric";
        case TypeId::kTimestamp:
          return "timestamp";
        case TypeId::kText:
          return e.cast_type.max_len > 0 ? "varchar" : e.cast_type.max_len < 0 ? "bpchar" : "text";
        default:
          return "?column?";
      }
    default:
      return "?column?";
  }
}

ExprBinder QueryBinder::MakeExprBinder(const Scope* scope) {
  ExprBinder b(scope);
  b.set_params(params_);
  b.set_now(catalog_.StatementTime());
  b.set_subquery_binder(
      [this](const sql::SelectStmt& sub, const Scope* outer) { return BindQuery(sub, outer); });
  return b;
}

Result<BoundSelect> QueryBinder::BindQuery(const sql::SelectStmt& s, const Scope* outer) {
  CHECK_STACK_DEPTH();
  if (++depth_ > 64) {
    depth_--;
    return Status::Sql(sqlstate::kStatementTooComplex, "query nesting is too deep");
  }
  auto r = s.set_op == sql::SetOp::kNone ? BindCore(s, outer) : BindSetOp(s, outer);
  depth_--;
  return r;
}

Result<BoundSelect> QueryBinder::BindSetOp(const sql::SelectStmt& s, const Scope* outer) {
  static const char* kNames[] = {"", "UNION", "EXCEPT", "INTERSECT"};
  const char* name = kNames[static_cast<int>(s.set_op)];
  ASSIGN_OR_RETURN(BoundSelect l, BindQuery(*s.left, outer));
  ASSIGN_OR_RETURN(BoundSelect r, BindQuery(*s.right, outer));
  if (l.types.size() != r.types.size()) {
    return Status::Sql(sqlstate::kSyntaxError,
                       fmt::format("each {} query must have the same number of columns", name));
  }
  std::vector<SqlType> types;
  for (size_t i = 0; i < l.types.size(); i++) {
    const SqlType &a = l.types[i], &b = r.types[i];
    SqlType t;
    if (a.id == TypeId::kNull) {
      t = b;
    } else if (b.id == TypeId::kNull || a == b) {
      t = a;
    } else if (a.IsNumeric() && b.IsNumeric()) {
      t = NumericUnion(a, b);
    } else if (a.id == b.id) {
      t = {a.id};
    } else {
      return Status::Sql(
          sqlstate::kDatatypeMismatch,
          fmt::format("{} types {} and {} cannot be matched", name, TypeName(a), TypeName(b)));
    }
    if (t.id == TypeId::kNull) t = {TypeId::kText};
    types.push_back(t);
  }
  auto cast_to = [&](BoundSelect& side) {
    bool same = true;
    for (size_t i = 0; i < types.size(); i++) same &= side.types[i] == types[i];
    if (same) return std::move(side.plan);
    auto p = std::make_unique<PlanNode>();
    p->kind = PlanNode::Kind::kProject;
    for (size_t i = 0; i < types.size(); i++) {
      BoundExprPtr c = MakeColumn(static_cast<int>(i), side.types[i]);
      if (!(side.types[i] == types[i])) {
        auto cast = std::make_unique<BoundExpr>();
        cast->kind = BoundExpr::Kind::kCast;
        cast->type = types[i];
        cast->children.push_back(std::move(c));
        c = std::move(cast);
      }
      p->exprs.push_back(std::move(c));
    }
    p->types = types;
    p->est_rows = side.plan->est_rows;
    p->children.push_back(std::move(side.plan));
    return p;
  };
  auto op = std::make_unique<PlanNode>();
  op->kind = PlanNode::Kind::kSetOp;
  op->set_op = s.set_op == sql::SetOp::kUnion    ? PlanNode::SetOpType::kUnion
               : s.set_op == sql::SetOp::kExcept ? PlanNode::SetOpType::kExcept
                                                 : PlanNode::SetOpType::kIntersect;
  op->set_all = s.set_all;
  op->types = types;
  double le = std::max(1.0, l.plan->est_rows), re = std::max(1.0, r.plan->est_rows);
  op->est_rows = op->set_op == PlanNode::SetOpType::kUnion ? le + re : le;
  op->children.push_back(cast_to(l));
  op->children.push_back(cast_to(r));
  BoundSelect out;
  out.names = l.names;
  out.types = types;
  out.correlated = l.correlated || r.correlated;
  PlanPtr plan = std::move(op);
  // ORDER BY over a set operation names output columns, by name or position.
  std::vector<SortKey> keys;
  for (const auto& o : s.order_by) {
    int idx = -1;
    if (o.expr->kind == Expr::Kind::kLiteral && SqlType{o.expr->value.type()}.IsInteger()) {
      int64_t ord = o.expr->value.as_int();
      if (ord < 1 || ord > static_cast<int64_t>(types.size())) {
        return Status::Sql(sqlstate::kInvalidColumnReference,
                           fmt::format("ORDER BY position {} is not in select list", ord),
                           o.expr->pos);
      }
      idx = static_cast<int>(ord - 1);
    } else if (o.expr->kind == Expr::Kind::kColumn && o.expr->table.empty()) {
      for (size_t i = 0; i < out.names.size() && idx < 0; i++) {
        if (out.names[i] == o.expr->name) idx = static_cast<int>(i);
      }
    }
    if (idx < 0) {
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("ORDER BY on a {} result must name an output column", name),
                         o.expr->pos);
    }
    SortKey k;
    k.desc = o.desc;
    k.nulls_first = o.nulls_first.value_or(o.desc);
    k.expr = MakeColumn(idx, types[idx]);
    keys.push_back(std::move(k));
  }
  ASSIGN_OR_RETURN(out.plan, SortAndLimit(s, std::move(plan), std::move(keys)));
  return out;
}

namespace {

bool IsAggregating(const sql::SelectStmt& s) {
  bool aggregating = !s.group_by.empty() || (s.having != nullptr);
  for (const auto& it : s.items)
    aggregating |= it.expr->kind != Expr::Kind::kStar && ContainsAggregate(*it.expr);
  for (const auto& o : s.order_by) aggregating |= ContainsAggregate(*o.expr);
  return aggregating;
}

// The GROUP BY expressions; an ordinal or an output alias refers to the select list.
Result<std::vector<BoundExprPtr>> BindGroupBy(const sql::SelectStmt& s, const Scope& scope,
                                              ExprBinder& binder) {
  std::vector<BoundExprPtr> groups;
  for (const auto& g : s.group_by) {
    const Expr* ge = g.get();
    if (g->kind == Expr::Kind::kLiteral && SqlType{g->value.type()}.IsInteger()) {
      int64_t ord = g->value.as_int();
      if (ord < 1 || ord > static_cast<int64_t>(s.items.size()) ||
          s.items[ord - 1].expr->kind == Expr::Kind::kStar) {
        return Status::Sql(sqlstate::kInvalidColumnReference,
                           fmt::format("GROUP BY position {} is not in select list", ord), g->pos);
      }
      ge = s.items[ord - 1].expr.get();
    } else if (g->kind == Expr::Kind::kColumn && g->table.empty()) {
      bool in_scope = false;
      for (const auto& c : scope.columns) in_scope |= c.name == g->name && !c.hidden;
      if (!in_scope) {
        for (const auto& it : s.items) {
          if (it.alias == g->name) ge = it.expr.get();
        }
      }
    }
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(*ge, &u));
    if (u) {
      ASSIGN_OR_RETURN(b, binder.Coerce(std::move(b), true, {TypeId::kText}, ge->pos));
    }
    groups.push_back(std::move(b));
  }
  return groups;
}

// `*` or `t.*` of the select list: the visible columns of the scope (of table t).
Status ExpandStar(const sql::SelectStmt& s, const Expr& star, const Scope& scope, bool aggregating,
                  ExprBinder& binder, std::vector<BoundExprPtr>* proj,
                  std::vector<std::string>* names) {
  if (s.from.empty()) {
    return Status::Sql(sqlstate::kSyntaxError, "SELECT * with no tables specified is not valid",
                       star.pos);
  }
  bool any_table = false;
  for (size_t i = 0; i < scope.columns.size(); i++) {
    const ScopeColumn& c = scope.columns[i];
    if (!star.table.empty() && c.table != star.table) continue;
    any_table = true;
    if (c.hidden) continue;
    if (aggregating) {
      Expr col(Expr::Kind::kColumn, star.pos);
      col.table = c.table;
      col.name = c.name;
      ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(col));
      proj->push_back(std::move(b));
    } else {
      proj->push_back(MakeColumn(static_cast<int>(i), c.type));
    }
    names->push_back(c.name);
  }
  if (!any_table) {
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("missing FROM-clause entry for table \"{}\"", star.table),
                       star.pos);
  }
  return Status::OK();
}

// The select list (over the aggregate's output when aggregating) and its column names.
Status BindSelectList(const sql::SelectStmt& s, const Scope& scope, bool aggregating,
                      ExprBinder& binder, std::vector<BoundExprPtr>* proj,
                      std::vector<std::string>* names) {
  for (const auto& it : s.items) {
    if (it.expr->kind == Expr::Kind::kStar) {
      RETURN_NOT_OK(ExpandStar(s, *it.expr, scope, aggregating, binder, proj, names));
      continue;
    }
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(*it.expr, &u));
    if (u || b->type.id == TypeId::kNull) b->type = {TypeId::kText};
    proj->push_back(std::move(b));
    names->push_back(it.alias.empty() ? OutputName(*it.expr) : it.alias);
  }
  return Status::OK();
}

// ORDER BY: output ordinals and names first, otherwise an expression over the input,
// carried as a hidden projection column appended to `proj`.
Result<std::vector<SortKey>> BindOrderBy(const sql::SelectStmt& s,
                                         const std::vector<std::string>& names, ExprBinder& binder,
                                         std::vector<BoundExprPtr>* proj) {
  size_t visible = names.size();
  std::vector<SortKey> sort_keys;
  for (const auto& o : s.order_by) {
    SortKey k;
    k.desc = o.desc;
    k.nulls_first = o.nulls_first.value_or(o.desc);
    int idx = -1;
    if (o.expr->kind == Expr::Kind::kLiteral && SqlType{o.expr->value.type()}.IsInteger()) {
      int64_t ord = o.expr->value.as_int();
      if (ord < 1 || ord > static_cast<int64_t>(visible)) {
        return Status::Sql(sqlstate::kInvalidColumnReference,
                           fmt::format("ORDER BY position {} is not in select list", ord),
                           o.expr->pos);
      }
      idx = static_cast<int>(ord - 1);
    } else if (o.expr->kind == Expr::Kind::kColumn && o.expr->table.empty()) {
      for (size_t i = 0; i < visible; i++) {
        if (names[i] == o.expr->name) {
          idx = static_cast<int>(i);
          break;
        }
      }
    }
    if (idx < 0) {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(*o.expr, &u));
      std::string bs = b->ToString();
      for (size_t i = 0; i < proj->size(); i++) {
        if ((*proj)[i]->ToString() == bs) idx = static_cast<int>(i);
      }
      if (idx < 0) {
        if (s.distinct) {
          return Status::Sql(sqlstate::kInvalidColumnReference,
                             "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                             o.expr->pos);
        }
        proj->push_back(std::move(b));
        idx = static_cast<int>(proj->size() - 1);
      }
    }
    k.expr = MakeColumn(idx, (*proj)[idx]->type);
    sort_keys.push_back(std::move(k));
  }
  return sort_keys;
}

// `plan` projected to `proj`, then made distinct if `distinct`.
PlanPtr ProjectDistinct(PlanPtr plan, std::vector<BoundExprPtr> proj, bool distinct) {
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  for (const auto& p : proj) project->types.push_back(p->type);
  project->exprs = std::move(proj);
  project->children.push_back(std::move(plan));
  plan = std::move(project);
  if (!distinct) return plan;
  auto d = std::make_unique<PlanNode>();
  d->kind = PlanNode::Kind::kAggregate;
  d->types = plan->types;
  for (size_t i = 0; i < plan->types.size(); i++) {
    d->groups.push_back(MakeColumn(static_cast<int>(i), plan->types[i]));
  }
  d->children.push_back(std::move(plan));
  return d;
}

// `plan` without the hidden columns after the first `visible`.
PlanPtr StripHidden(PlanPtr plan, size_t visible) {
  if (plan->types.size() <= visible) return plan;
  auto strip = std::make_unique<PlanNode>();
  strip->kind = PlanNode::Kind::kProject;
  for (size_t i = 0; i < visible; i++) {
    strip->exprs.push_back(MakeColumn(static_cast<int>(i), plan->types[i]));
    strip->types.push_back(plan->types[i]);
  }
  strip->children.push_back(std::move(plan));
  return strip;
}

}  // namespace

Result<BoundSelect> QueryBinder::BindCore(const sql::SelectStmt& s, const Scope* outer) {
  BoundSelect out;
  Scope scope;
  scope.parent = outer;
  ASSIGN_OR_RETURN(PlanPtr plan, BindFrom(s, &scope));
  ExprBinder binder = MakeExprBinder(&scope);

  bool aggregating = IsAggregating(s);
  std::vector<BoundExprPtr> groups;
  std::vector<AggSpec> aggs;
  if (aggregating) {
    binder.set_allow_aggregates(false, "GROUP BY");
    ASSIGN_OR_RETURN(groups, BindGroupBy(s, scope, binder));
    binder.EnterAggMode(&groups, &aggs);
  }
  binder.set_allow_aggregates(aggregating, "WHERE");
  std::vector<BoundExprPtr> proj;
  RETURN_NOT_OK(BindSelectList(s, scope, aggregating, binder, &proj, &out.names));

  PlanNode* agg_node = nullptr;  // filled in once HAVING and ORDER BY added their aggregates
  PlanNode* having_node = nullptr;
  if (aggregating) {
    auto agg = std::make_unique<PlanNode>();
    agg->kind = PlanNode::Kind::kAggregate;
    agg->children.push_back(std::move(plan));
    agg_node = agg.get();
    plan = std::move(agg);
    if (s.having) {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr h, binder.Bind(*s.having, &u));
      if (h->type.id != TypeId::kBool && h->type.id != TypeId::kNull) {
        return Status::Sql(
            sqlstate::kDatatypeMismatch,
            fmt::format("argument of HAVING must be type boolean, not type {}", TypeName(h->type)),
            s.having->pos);
      }
      plan = Wrap(PlanNode::Kind::kFilter, std::move(plan));
      plan->predicate = std::move(h);
      having_node = plan.get();
    }
  }
  size_t visible = proj.size();
  ASSIGN_OR_RETURN(std::vector<SortKey> sort_keys, BindOrderBy(s, out.names, binder, &proj));
  plan = ProjectDistinct(std::move(plan), std::move(proj), s.distinct);
  ASSIGN_OR_RETURN(plan, SortAndLimit(s, std::move(plan), std::move(sort_keys)));
  plan = StripHidden(std::move(plan), visible);
  if (agg_node) {
    agg_node->groups = std::move(groups);
    agg_node->aggs = std::move(aggs);
    for (const auto& g : agg_node->groups) agg_node->types.push_back(g->type);
    for (const auto& a : agg_node->aggs) agg_node->types.push_back(a.type);
    if (having_node) having_node->types = agg_node->types;
  }
  out.types = plan->types;
  out.plan = std::move(plan);
  out.correlated = scope.correlated;
  return out;
}

}  // namespace wattdb::plan
