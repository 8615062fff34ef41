#include "query/plan/binder.h"

#include <map>

#include "common/codec.h"
#include "query/plan/expr_binder.h"

namespace wattdb::plan {

namespace {

std::vector<ScopeColumn> TableScope(const TableSchema& t) {
  std::vector<ScopeColumn> s;
  for (const auto& c : t.columns) s.push_back({c.name, c.type, c.hidden});
  return s;
}

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
    case Expr::Kind::kColumn: return e.name;
    case Expr::Kind::kFunc:
      if (e.name == "__is_true" || e.name == "__is_false") return "?column?";
      if (e.name == "char_length" || e.name == "character_length") return e.name;
      return e.name;
    case Expr::Kind::kCase: return "case";
    case Expr::Kind::kCast:
      return e.args[0]->kind == Expr::Kind::kColumn || e.args[0]->kind == Expr::Kind::kFunc
                 ? OutputName(*e.args[0])
                 : [&] {
                     switch (e.cast_type.id) {
                       case TypeId::kInt32: return std::string("int4");
                       case TypeId::kInt64: return std::string("int8");
                       case TypeId::kDouble: return std::string("float8");
                       case TypeId::kBool: return std::string("bool");
                       case TypeId::kText: return std::string(e.cast_type.max_len ? "varchar" : "text");
                       default: return std::string("?column?");
                     }
                   }();
    default: return "?column?";
  }
}

Result<int64_t> ConstInt(const Expr& e, const char* what) {
  if (e.kind == Expr::Kind::kLiteral && e.value.is_null()) return -1;
  if (e.kind != Expr::Kind::kLiteral || !SqlType{e.value.type()}.IsInteger()) {
    return Status::Sql("0A000", fmt::format("{} must be an integer constant", what), e.pos);
  }
  if (e.value.as_int() < 0) {
    return Status::Sql("2201W", fmt::format("{} must not be negative", what), e.pos);
  }
  return e.value.as_int();
}

PlanPtr MakeScan(const TableSchema& t, const BoundExpr* where) {
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = t.id;
  scan->table_name = t.name;
  for (const auto& c : t.columns) scan->types.push_back(c.type);
  DeriveKeyRange(where, t, &scan->lo, &scan->hi);
  return scan;
}

PlanPtr Wrap(PlanNode::Kind kind, PlanPtr child) {
  auto p = std::make_unique<PlanNode>();
  p->kind = kind;
  p->types = child->types;
  p->children.push_back(std::move(child));
  return p;
}

}  // namespace

void DeriveKeyRange(const BoundExpr* pred, const TableSchema& t, std::string* lo, std::string* hi) {
  lo->clear();
  hi->clear();
  if (!pred || t.HasHiddenKey()) return;
  int k = t.key_columns[0];
  TypeId kt = t.columns[k].type.id;
  auto family = [](TypeId id) {
    return id == TypeId::kInt32 || id == TypeId::kInt64 ? TypeId::kInt64 : id;
  };
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
  for (const BoundExpr* e : conj) {
    if (e->kind != BoundExpr::Kind::kBinary || e->op < BinOp::kEq || e->op == BinOp::kNe ||
        e->op > BinOp::kGe) {
      continue;
    }
    const BoundExpr* a = e->children[0].get();
    const BoundExpr* b = e->children[1].get();
    BinOp op = e->op;
    if (a->kind == BoundExpr::Kind::kConst && b->kind == BoundExpr::Kind::kColumn) {
      std::swap(a, b);
      op = op == BinOp::kLt ? BinOp::kGt : op == BinOp::kLe ? BinOp::kGe
           : op == BinOp::kGt ? BinOp::kLt : op == BinOp::kGe ? BinOp::kLe : op;
    }
    if (a->kind != BoundExpr::Kind::kColumn || a->column != k || b->kind != BoundExpr::Kind::kConst ||
        b->value.is_null() || family(b->value.type()) != family(kt)) {
      continue;
    }
    std::string enc;
    EncodeKeyValue(b->value, &enc);
    std::string after = PrefixSuccessor(enc);
    auto raise_lo = [&](const std::string& v) {
      if (v > *lo) *lo = v;
    };
    auto lower_hi = [&](const std::string& v) {
      if (v.empty()) return;
      if (hi->empty() || v < *hi) *hi = v;
    };
    switch (op) {
      case BinOp::kEq: raise_lo(enc); lower_hi(after); break;
      case BinOp::kLt: lower_hi(enc); break;
      case BinOp::kLe: lower_hi(after); break;
      case BinOp::kGt: if (after.empty()) { *lo = enc; *hi = enc; } else raise_lo(after); break;
      case BinOp::kGe: raise_lo(enc); break;
      default: break;
    }
  }
  if (!hi->empty() && *lo >= *hi) *hi = *lo;  // empty range
}

Result<BoundSelect> BindSelect(const sql::SelectStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  BoundSelect out;
  TableSchema table;
  std::vector<ScopeColumn> scope;
  if (s.has_from) {
    auto t = catalog.GetTable(s.from_table);
    if (!t.ok()) return t.status().WithPosition(s.from_pos);
    table = std::move(t).value();
    scope = TableScope(table);
  }
  ExprBinder binder(scope, s.from_table, s.from_alias);
  binder.set_params(params);

  // FROM + WHERE
  BoundExprPtr where;
  if (s.where) {
    binder.set_allow_aggregates(false, "WHERE");
    ASSIGN_OR_RETURN(where, [&]() -> Result<BoundExprPtr> {
      bool u;
      auto b = binder.Bind(*s.where, &u);
      if (!b.ok()) return b;
      if (u) return binder.Coerce(std::move(b).value(), true, {TypeId::kBool}, s.where->pos);
      if ((*b)->type.id != TypeId::kBool && (*b)->type.id != TypeId::kNull) {
        return Status::Sql("42804", fmt::format("argument of WHERE must be type boolean, not type {}",
                                                TypeName((*b)->type)), s.where->pos);
      }
      return b;
    }());
  }
  PlanPtr plan;
  if (s.has_from) {
    plan = MakeScan(table, where.get());
  } else {
    plan = std::make_unique<PlanNode>();
    plan->kind = PlanNode::Kind::kValues;
    plan->rows.push_back({});
  }
  if (where) {
    plan = Wrap(PlanNode::Kind::kFilter, std::move(plan));
    plan->predicate = std::move(where);
  }

  // Aggregation
  bool aggregating = !s.group_by.empty() || (s.having != nullptr);
  for (const auto& it : s.items) aggregating |= it.expr->kind != Expr::Kind::kStar && ContainsAggregate(*it.expr);
  for (const auto& o : s.order_by) aggregating |= ContainsAggregate(*o.expr);
  std::vector<BoundExprPtr> groups;
  std::vector<AggSpec> aggs;
  if (aggregating) {
    binder.set_allow_aggregates(false, "GROUP BY");
    for (const auto& g : s.group_by) {
      // GROUP BY <ordinal> or <output alias> refers to the select list.
      const Expr* ge = g.get();
      if (g->kind == Expr::Kind::kLiteral && SqlType{g->value.type()}.IsInteger()) {
        int64_t ord = g->value.as_int();
        if (ord < 1 || ord > static_cast<int64_t>(s.items.size()) ||
            s.items[ord - 1].expr->kind == Expr::Kind::kStar) {
          return Status::Sql("42P10", fmt::format("GROUP BY position {} is not in select list", ord), g->pos);
        }
        ge = s.items[ord - 1].expr.get();
      } else if (g->kind == Expr::Kind::kColumn && g->table.empty()) {
        bool in_scope = false;
        for (const auto& c : scope) in_scope |= c.name == g->name && !c.hidden;
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
    binder.EnterAggMode(&groups, &aggs);
  }
  binder.set_allow_aggregates(aggregating, "WHERE");

  // Select list (bound over the aggregate output when aggregating).
  std::vector<BoundExprPtr> proj;
  for (const auto& it : s.items) {
    if (it.expr->kind == Expr::Kind::kStar) {
      if (!s.has_from) {
        return Status::Sql("42601", "SELECT * with no tables specified is not valid", it.expr->pos);
      }
      if (!it.expr->table.empty() && it.expr->table != s.from_table && it.expr->table != s.from_alias) {
        return Status::Sql("42P01", fmt::format("missing FROM-clause entry for table \"{}\"",
                                                it.expr->table), it.expr->pos);
      }
      if (aggregating) {
        for (size_t i = 0; i < table.columns.size(); i++) {
          if (table.columns[i].hidden) continue;
          Expr col(Expr::Kind::kColumn, it.expr->pos);
          col.name = table.columns[i].name;
          ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(col));
          proj.push_back(std::move(b));
          out.names.push_back(col.name);
        }
        continue;
      }
      for (size_t i = 0; i < table.columns.size(); i++) {
        if (table.columns[i].hidden) continue;
        proj.push_back(MakeColumn(static_cast<int>(i), table.columns[i].type));
        out.names.push_back(table.columns[i].name);
      }
      continue;
    }
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(*it.expr, &u));
    if (u || b->type.id == TypeId::kNull) b->type = {TypeId::kText};
    proj.push_back(std::move(b));
    out.names.push_back(it.alias.empty() ? OutputName(*it.expr) : it.alias);
  }

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
        return Status::Sql("42804", fmt::format("argument of HAVING must be type boolean, not type {}",
                                                TypeName(h->type)), s.having->pos);
      }
      plan = Wrap(PlanNode::Kind::kFilter, std::move(plan));
      plan->predicate = std::move(h);
      having_node = plan.get();
    }
  }

  // ORDER BY: output ordinals and names first, otherwise an expression over the input,
  // carried as a hidden projection column.
  size_t visible = proj.size();
  std::vector<SortKey> sort_keys;
  for (const auto& o : s.order_by) {
    SortKey k;
    k.desc = o.desc;
    k.nulls_first = o.nulls_first.value_or(o.desc);
    int idx = -1;
    if (o.expr->kind == Expr::Kind::kLiteral && SqlType{o.expr->value.type()}.IsInteger()) {
      int64_t ord = o.expr->value.as_int();
      if (ord < 1 || ord > static_cast<int64_t>(visible)) {
        return Status::Sql("42P10", fmt::format("ORDER BY position {} is not in select list", ord),
                           o.expr->pos);
      }
      idx = static_cast<int>(ord - 1);
    } else if (o.expr->kind == Expr::Kind::kColumn && o.expr->table.empty()) {
      for (size_t i = 0; i < visible; i++) {
        if (out.names[i] == o.expr->name) {
          idx = static_cast<int>(i);
          break;
        }
      }
    }
    if (idx < 0) {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr b, binder.Bind(*o.expr, &u));
      std::string bs = b->ToString();
      for (size_t i = 0; i < proj.size(); i++) {
        if (proj[i]->ToString() == bs) idx = static_cast<int>(i);
      }
      if (idx < 0) {
        if (s.distinct) {
          return Status::Sql("42P10", "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
                             o.expr->pos);
        }
        proj.push_back(std::move(b));
        idx = static_cast<int>(proj.size() - 1);
      }
    }
    k.expr = MakeColumn(idx, proj[idx]->type);
    sort_keys.push_back(std::move(k));
  }

  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  for (const auto& p : proj) project->types.push_back(p->type);
  project->exprs = std::move(proj);
  project->children.push_back(std::move(plan));
  plan = std::move(project);

  if (s.distinct) {
    auto d = std::make_unique<PlanNode>();
    d->kind = PlanNode::Kind::kAggregate;
    d->types = plan->types;
    for (size_t i = 0; i < plan->types.size(); i++) {
      d->groups.push_back(MakeColumn(static_cast<int>(i), plan->types[i]));
    }
    d->children.push_back(std::move(plan));
    plan = std::move(d);
  }
  if (!sort_keys.empty()) {
    plan = Wrap(PlanNode::Kind::kSort, std::move(plan));
    plan->keys = std::move(sort_keys);
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
  if (plan->types.size() > visible) {
    auto strip = std::make_unique<PlanNode>();
    strip->kind = PlanNode::Kind::kProject;
    for (size_t i = 0; i < visible; i++) {
      strip->exprs.push_back(MakeColumn(static_cast<int>(i), plan->types[i]));
      strip->types.push_back(plan->types[i]);
    }
    strip->children.push_back(std::move(plan));
    plan = std::move(strip);
  }
  if (agg_node) {
    agg_node->groups = std::move(groups);
    agg_node->aggs = std::move(aggs);
    for (const auto& g : agg_node->groups) agg_node->types.push_back(g->type);
    for (const auto& a : agg_node->aggs) agg_node->types.push_back(a.type);
    if (having_node) having_node->types = agg_node->types;
  }
  out.types = plan->types;
  out.plan = std::move(plan);
  return out;
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
    return Status::Sql("42804", fmt::format("column \"{}\" is of type {} but expression is of type {}",
                                            col.name, col.type.ToString(), TypeName(v->type)),
                       e.pos);
  }
  return b.Coerce(std::move(v), u, col.type, e.pos);
}

}  // namespace

Result<BoundInsert> BindInsert(const sql::InsertStmt& s, const CatalogReader& catalog,
                               std::vector<SqlType>* params) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundInsert out;
  out.table = std::move(t).value();
  const TableSchema& table = out.table;
  std::vector<int> targets;
  if (s.columns.empty()) {
    for (size_t i = 0; i < table.columns.size(); i++) {
      if (!table.columns[i].hidden) targets.push_back(static_cast<int>(i));
    }
  } else {
    for (size_t i = 0; i < s.columns.size(); i++) {
      int idx = table.ColumnIndex(s.columns[i]);
      if (idx < 0 || table.columns[idx].hidden) {
        return Status::Sql("42703", fmt::format("column \"{}\" of relation \"{}\" does not exist",
                                                s.columns[i], table.name), s.column_pos[i]);
      }
      for (int prev : targets) {
        if (prev == idx) {
          return Status::Sql("42701", fmt::format("column \"{}\" specified more than once", s.columns[i]),
                             s.column_pos[i]);
        }
      }
      targets.push_back(idx);
    }
  }
  ExprBinder binder({}, "", "");
  binder.set_params(params);
  for (const auto& row : s.rows) {
    if (row.size() > targets.size()) {
      return Status::Sql("42601", "INSERT has more expressions than target columns", row[targets.size()]->pos);
    }
    if (row.size() < targets.size()) {
      return Status::Sql("42601", "INSERT has more target columns than expressions", row.empty() ? 0 : row.back()->pos);
    }
    std::vector<BoundExprPtr> full(table.columns.size());
    for (size_t i = 0; i < targets.size(); i++) {
      ASSIGN_OR_RETURN(full[targets[i]], BindAssignment(binder, *row[i], table.columns[targets[i]]));
    }
    for (size_t i = 0; i < full.size(); i++) {
      if (!full[i]) full[i] = MakeConst(Value(), table.columns[i].type);
    }
    out.rows.push_back(std::move(full));
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
      return Status::Sql("42804", fmt::format("argument of WHERE must be type boolean, not type {}",
                                              TypeName(where->type)), where_ast->pos);
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
  ExprBinder binder(TableScope(out.table), out.table.name, "");
  binder.set_params(params);
  for (size_t i = 0; i < s.sets.size(); i++) {
    int idx = out.table.ColumnIndex(s.sets[i].first);
    if (idx < 0 || out.table.columns[idx].hidden) {
      return Status::Sql("42703", fmt::format("column \"{}\" of relation \"{}\" does not exist",
                                              s.sets[i].first, out.table.name), s.set_pos[i]);
    }
    for (const auto& [prev, e] : out.sets) {
      if (prev == idx) {
        return Status::Sql("42601", fmt::format("multiple assignments to same column \"{}\"",
                                                s.sets[i].first), s.set_pos[i]);
      }
    }
    ASSIGN_OR_RETURN(BoundExprPtr v, BindAssignment(binder, *s.sets[i].second, out.table.columns[idx]));
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
  ExprBinder binder(TableScope(out.table), out.table.name, "");
  binder.set_params(params);
  RETURN_NOT_OK(BindSource(binder, s.where, &out));
  return out;
}

}  // namespace wattdb::plan
