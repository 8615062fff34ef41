#include "query/plan/expr_binder.h"

#include <chrono>
#include <map>
#include <optional>

namespace wattdb::plan {

std::string TypeName(const SqlType& t) { return t.id == TypeId::kNull ? "unknown" : t.ToString(); }

bool IsAggregateName(const std::string& n) {
  return n == "count" || n == "sum" || n == "min" || n == "max" || n == "avg" || n == "string_agg";
}

// The result type of a function the catalog answers (ScanProvider::CallCatalog), if `name`
// with `nargs` arguments is one.
std::optional<SqlType> CatalogFunctionType(const std::string& name, size_t nargs) {
  struct Sig {
    size_t min_args, max_args;
    TypeId result;
  };
  static const std::map<std::string, Sig> kFuncs = {
      {"regclass", {1, 1, TypeId::kText}},          {"regtype", {1, 1, TypeId::kText}},
      {"regnamespace", {1, 1, TypeId::kText}},      {"regproc", {1, 1, TypeId::kText}},
      {"regrole", {1, 1, TypeId::kText}},           {"pg_get_userbyid", {1, 1, TypeId::kText}},
      {"pg_table_is_visible", {1, 1, TypeId::kBool}}, {"format_type", {2, 2, TypeId::kText}},
      {"pg_get_expr", {2, 3, TypeId::kText}},       {"pg_get_indexdef", {1, 3, TypeId::kText}},
      {"pg_get_constraintdef", {1, 2, TypeId::kText}}, {"pg_relation_is_publishable", {1, 1, TypeId::kBool}},
      {"pg_get_statisticsobjdef_columns", {1, 1, TypeId::kText}}, {"col_description", {2, 2, TypeId::kText}},
      {"obj_description", {1, 2, TypeId::kText}},   {"shobj_description", {2, 2, TypeId::kText}},
      {"pg_get_viewdef", {1, 2, TypeId::kText}},    {"pg_relation_size", {1, 2, TypeId::kInt64}},
      {"pg_table_size", {1, 1, TypeId::kInt64}},    {"pg_total_relation_size", {1, 1, TypeId::kInt64}},
      {"pg_indexes_size", {1, 1, TypeId::kInt64}},  {"pg_size_pretty", {1, 1, TypeId::kText}},
      {"pg_encoding_to_char", {1, 1, TypeId::kText}}, {"pg_function_is_visible", {1, 1, TypeId::kBool}},
      {"pg_type_is_visible", {1, 1, TypeId::kBool}},
  };
  auto it = kFuncs.find(name);
  if (it == kFuncs.end() || nargs < it->second.min_args || nargs > it->second.max_args) return std::nullopt;
  return SqlType{it->second.result};
}

SqlType NumericUnion(const SqlType& a, const SqlType& b) {
  if (a.id == TypeId::kDouble || b.id == TypeId::kDouble) return {TypeId::kDouble};
  if (a.id == TypeId::kNumeric || b.id == TypeId::kNumeric) return {TypeId::kNumeric};
  if (a.id == TypeId::kInt64 || b.id == TypeId::kInt64) return {TypeId::kInt64};
  return {TypeId::kInt32};
}

Result<BoundExprPtr> ExprBinder::Bind(const Expr& e, bool* untyped) {
  bool u = false;
  if (agg_mode() && !in_aggregate_) {
    // An expression equal to a GROUP BY expression reads the group column.
    ExprBinder plain = Plain();
    auto pre = plain.Bind(e, &u);
    if (pre.ok()) {
      std::string s = (*pre)->ToString();
      for (size_t i = 0; i < group_strings_.size(); i++) {
        if (group_strings_[i] == s && (*pre)->kind != BoundExpr::Kind::kConst) {
          if (untyped) *untyped = false;
          return MakeColumn(static_cast<int>(i), (*groups_)[i]->type);
        }
      }
    }
    u = false;
  }
  auto r = BindInner(e, &u);
  if (untyped) *untyped = u;
  if (!r.ok()) return r.status().WithPosition(e.pos);
  return r;
}

BoundExprPtr CharAsText(BoundExprPtr e) {
  if (!e->type.IsFixedChar()) return e;
  auto f = std::make_unique<BoundExpr>();
  f->kind = BoundExpr::Kind::kFunc;
  f->func = Func::kBpcharText;
  f->type = {TypeId::kText};
  f->children.push_back(std::move(e));
  return f;
}

ExprBinder ExprBinder::Plain() const {
  ExprBinder b(scope_);
  b.params_ = params_;
  b.subquery_ = subquery_;
  return b;
}

Result<BoundExprPtr> ExprBinder::BindColumn(const Expr& e) {
  std::string shown = e.table.empty() ? e.name : e.table + "." + e.name;
  bool table_seen = false;
  int depth = 0;
  for (const Scope* s = scope_; s != nullptr; s = s->parent, depth++) {
    int found = -1;
    for (size_t i = 0; i < s->columns.size(); i++) {
      const ScopeColumn& c = s->columns[i];
      if (!e.table.empty()) {
        if (c.table != e.table) continue;
        table_seen = true;
      }
      if (c.name != e.name || c.hidden) continue;
      if (found >= 0) {
        return Status::Sql("42702", fmt::format("column reference \"{}\" is ambiguous", shown), e.pos);
      }
      found = static_cast<int>(i);
    }
    if (found < 0) {
      if (table_seen) break;  // the qualifier names a FROM item of this scope
      continue;
    }
    if (depth == 0) {
      if (agg_mode() && !in_aggregate_) {
        return Status::Sql("42803",
                           fmt::format("column \"{}\" must appear in the GROUP BY clause or be "
                                       "used in an aggregate function", shown),
                           e.pos);
      }
      return MakeColumn(found, s->columns[found].type);
    }
    for (const Scope* m = scope_; m != s; m = m->parent) m->correlated = true;
    auto ref = MakeColumn(found, s->columns[found].type);
    ref->kind = BoundExpr::Kind::kOuterColumn;
    ref->depth = depth;
    return ref;
  }
  if (!e.table.empty() && !table_seen) {
    return Status::Sql("42P01", fmt::format("missing FROM-clause entry for table \"{}\"", e.table), e.pos);
  }
  return Status::Sql("42703", fmt::format("column \"{}\" does not exist", shown), e.pos);
}

Result<BoundExprPtr> ExprBinder::BindSubquery(const Expr& e) {
  if (!subquery_) return Status::Sql("0A000", "subqueries are not supported here", e.pos);
  ASSIGN_OR_RETURN(BoundSelect sub, subquery_(*e.subquery, scope_));
  if (sub.correlated && agg_mode() && !in_aggregate_) {
    return Status::Sql("0A000", "correlated subqueries in an aggregating query are not supported", e.pos);
  }
  auto out = std::make_unique<BoundExpr>();
  out->correlated = sub.correlated;
  if (e.kind == Expr::Kind::kExists) {
    out->kind = BoundExpr::Kind::kExists;
    out->type = {TypeId::kBool};
    out->subplan = std::shared_ptr<const PlanNode>(std::move(sub.plan));
    return out;
  }
  if (sub.types.size() != 1) {
    return Status::Sql("42601", sub.types.size() > 1 ? "subquery has too many columns"
                                                     : "subquery must return only one column",
                       e.pos);
  }
  if (e.kind == Expr::Kind::kArray) {
    if (sub.types[0].id == TypeId::kArray) return Status::Sql("0A000", "arrays of arrays are not supported", e.pos);
    out->kind = BoundExpr::Kind::kArraySubquery;
    out->type = SqlType::Array(sub.types[0].id == TypeId::kNull ? TypeId::kText : sub.types[0].id);
    out->subplan = std::shared_ptr<const PlanNode>(std::move(sub.plan));
    return out;
  }
  if (e.kind == Expr::Kind::kSubquery) {
    out->kind = BoundExpr::Kind::kSubquery;
    out->type = sub.types[0];
    out->subplan = std::shared_ptr<const PlanNode>(std::move(sub.plan));
    return out;
  }
  // x [NOT] IN (SELECT c ...): compare in the common type of x and c.
  bool ux;
  ASSIGN_OR_RETURN(BoundExprPtr x, Bind(*e.args[0], &ux));
  SqlType ct = sub.types[0];
  if (ux) {
    ASSIGN_OR_RETURN(x, Coerce(std::move(x), true, ct, e.args[0]->pos));
  } else if (x->type.id != TypeId::kNull && ct.id != TypeId::kNull && x->type.id != ct.id) {
    if (!(x->type.IsNumeric() && ct.IsNumeric())) {
      return Status::Sql("42883", fmt::format("operator does not exist: {} = {}", TypeName(x->type),
                                              TypeName(ct)), e.pos);
    }
    SqlType common = NumericUnion(x->type, ct);
    if (x->type.id != common.id) {
      ASSIGN_OR_RETURN(x, Coerce(std::move(x), false, common, e.pos));
    }
    if (ct.id != common.id) {
      auto cast = std::make_unique<PlanNode>();
      cast->kind = PlanNode::Kind::kProject;
      cast->types = {common};
      auto c = std::make_unique<BoundExpr>();
      c->kind = BoundExpr::Kind::kCast;
      c->type = common;
      c->children.push_back(MakeColumn(0, ct));
      cast->exprs.push_back(std::move(c));
      cast->children.push_back(std::move(sub.plan));
      sub.plan = std::move(cast);
    }
  }
  out->kind = BoundExpr::Kind::kInSubquery;
  out->negated = e.negated;
  out->type = {TypeId::kBool};
  out->children.push_back(std::move(x));
  out->subplan = std::shared_ptr<const PlanNode>(std::move(sub.plan));
  return out;
}

Result<BoundExprPtr> ExprBinder::Coerce(BoundExprPtr e, bool untyped, const SqlType& t, int pos) {
  if (e->kind == BoundExpr::Kind::kParam && e->type.id == TypeId::kNull) {
    if (params_ && static_cast<size_t>(e->column) < params_->size()) {
      SqlType& slot = (*params_)[e->column];
      if (slot.id == TypeId::kNull) slot = SqlType{t.id == TypeId::kNull ? TypeId::kText : t.id};
    }
    e->type = t;
    return e;
  }
  if (e->type.id == t.id && e->type.max_len == t.max_len) return e;
  if (e->kind == BoundExpr::Kind::kConst && (untyped || e->value.is_null())) {
    auto v = e->value.CastTo(t);
    if (!v.ok()) return v.status().WithPosition(pos);
    return MakeConst(std::move(v).value(), t);
  }
  auto c = std::make_unique<BoundExpr>();
  c->kind = BoundExpr::Kind::kCast;
  c->type = t;
  c->children.push_back(std::move(e));
  return c;
}

Status ExprBinder::Unify(BoundExprPtr* a, bool ua, BoundExprPtr* b, bool ub, int pos, const char* op) {
  SqlType ta = (*a)->type, tb = (*b)->type;
  // An untyped side (string literal or parameter) takes the other side's type.
  if (ua && !ub && tb.id != TypeId::kNull) {
    ASSIGN_OR_RETURN(*a, Coerce(std::move(*a), true, tb, pos));
    return Status::OK();
  }
  if (ub && !ua && ta.id != TypeId::kNull) {
    ASSIGN_OR_RETURN(*b, Coerce(std::move(*b), true, ta, pos));
    return Status::OK();
  }
  if (ta.id == TypeId::kNull || tb.id == TypeId::kNull) return Status::OK();
  if (ta.IsNumeric() && tb.IsNumeric()) return Status::OK();
  if (ta.id == tb.id) return Status::OK();
  return Status::Sql("42883", fmt::format("operator does not exist: {} {} {}", TypeName(ta), op,
                                          TypeName(tb)),
                     pos);
}

Result<BoundExprPtr> ExprBinder::BindBool(const Expr& e, const char* what) {
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr b, Bind(e, &u));
  if (u) return Coerce(std::move(b), true, {TypeId::kBool}, e.pos);
  if (b->type.id != TypeId::kBool && b->type.id != TypeId::kNull) {
    return Status::Sql("42804", fmt::format("argument of {} must be type boolean, not type {}", what,
                                            TypeName(b->type)),
                       e.pos);
  }
  return b;
}

Result<BoundExprPtr> ExprBinder::BindBinary(const Expr& e) {
  auto out = std::make_unique<BoundExpr>();
  out->kind = BoundExpr::Kind::kBinary;
  const std::string& op = e.op;
  if (op == "and" || op == "or") {
    ASSIGN_OR_RETURN(BoundExprPtr l, BindBool(*e.args[0], op == "and" ? "AND" : "OR"));
    ASSIGN_OR_RETURN(BoundExprPtr r, BindBool(*e.args[1], op == "and" ? "AND" : "OR"));
    out->op = op == "and" ? BinOp::kAnd : BinOp::kOr;
    out->type = {TypeId::kBool};
    out->children.push_back(std::move(l));
    out->children.push_back(std::move(r));
    return out;
  }
  bool ul, ur;
  ASSIGN_OR_RETURN(BoundExprPtr l, Bind(*e.args[0], &ul));
  ASSIGN_OR_RETURN(BoundExprPtr r, Bind(*e.args[1], &ur));
  if (op == "~" || op == "!~" || op == "~*" || op == "!~*") {
    for (BoundExprPtr* side : {&l, &r}) {
      *side = CharAsText(std::move(*side));
      if ((*side)->type.id != TypeId::kText && (*side)->type.id != TypeId::kNull) {
        return Status::Sql("42883", fmt::format("operator does not exist: {} {} {}", TypeName(l->type), op,
                                                TypeName(r->type)), e.pos);
      }
    }
    out->kind = BoundExpr::Kind::kFunc;
    out->func = Func::kRegex;
    out->negated = op[0] == '!';
    out->case_insensitive = op.back() == '*';
    out->type = {TypeId::kBool};
    out->children.push_back(std::move(l));
    out->children.push_back(std::move(r));
    return out;
  }
  if (op == "||" && (l->type.id == TypeId::kArray || r->type.id == TypeId::kArray)) {
    // array || array: concatenation (NULL arrays count as empty, as in PostgreSQL).
    SqlType t = l->type.id == TypeId::kArray ? l->type : r->type;
    if (ul) {
      ASSIGN_OR_RETURN(l, Coerce(std::move(l), true, t, e.pos));
    }
    if (ur) {
      ASSIGN_OR_RETURN(r, Coerce(std::move(r), true, t, e.pos));
    }
    if (l->type.id != TypeId::kArray && l->type.id != TypeId::kNull) return Status::Sql("42883", "array concatenation needs two arrays", e.pos);
    if (r->type.id != TypeId::kArray && r->type.id != TypeId::kNull) return Status::Sql("42883", "array concatenation needs two arrays", e.pos);
    out->op = BinOp::kConcat;
    out->type = t;
    out->children.push_back(std::move(l));
    out->children.push_back(std::move(r));
    return out;
  }
  static const std::map<std::string, BinOp> kOps = {
      {"+", BinOp::kAdd}, {"-", BinOp::kSub}, {"*", BinOp::kMul}, {"/", BinOp::kDiv},
      {"%", BinOp::kMod}, {"||", BinOp::kConcat}, {"=", BinOp::kEq}, {"<>", BinOp::kNe},
      {"<", BinOp::kLt}, {"<=", BinOp::kLe}, {">", BinOp::kGt}, {">=", BinOp::kGe}};
  out->op = kOps.at(op);
  if (out->op == BinOp::kConcat) {
    out->type = {TypeId::kText};
    l = CharAsText(std::move(l));
    r = CharAsText(std::move(r));
    if (l->type.id != TypeId::kText && l->type.id != TypeId::kNull) {
      ASSIGN_OR_RETURN(l, Coerce(std::move(l), false, {TypeId::kText}, e.pos));
    }
    if (r->type.id != TypeId::kText && r->type.id != TypeId::kNull) {
      ASSIGN_OR_RETURN(r, Coerce(std::move(r), false, {TypeId::kText}, e.pos));
    }
  } else if (out->op >= BinOp::kEq) {
    if (ul && ur) {  // 'a' = 'b': both text
      l->type = r->type = {TypeId::kText};
    }
    RETURN_NOT_OK(Unify(&l, ul, &r, ur, e.pos, op.c_str()));
    out->type = {TypeId::kBool};
  } else {
    // Arithmetic: untyped literals take the other side's numeric type.
    if (ul && r->type.IsNumeric()) {
      ASSIGN_OR_RETURN(l, Coerce(std::move(l), true, r->type, e.args[0]->pos));
    } else if (ur && l->type.IsNumeric()) {
      ASSIGN_OR_RETURN(r, Coerce(std::move(r), true, l->type, e.args[1]->pos));
    }
    SqlType lt = l->type, rt = r->type;
    bool ln = lt.IsNumeric() || lt.id == TypeId::kNull, rn = rt.IsNumeric() || rt.id == TypeId::kNull;
    if (!ln || !rn) {
      return Status::Sql("42883", fmt::format("operator does not exist: {} {} {}", TypeName(lt), op,
                                              TypeName(rt)),
                         e.pos);
    }
    if (lt.id == TypeId::kNull && rt.id == TypeId::kNull) {
      out->type = {TypeId::kInt32};
    } else if (lt.id == TypeId::kNull) {
      out->type = rt;
    } else if (rt.id == TypeId::kNull) {
      out->type = lt;
    } else {
      out->type = NumericUnion(lt, rt);
    }
  }
  out->children.push_back(std::move(l));
  out->children.push_back(std::move(r));
  return out;
}

Result<BoundExprPtr> ExprBinder::BindAggregate(const Expr& e) {
  if (!allow_aggs_) {
    return Status::Sql("42803", fmt::format("aggregate functions are not allowed in {}", agg_context_),
                       e.pos);
  }
  if (in_aggregate_) {
    return Status::Sql("42803", "aggregate function calls cannot be nested", e.pos);
  }
  AggSpec spec;
  spec.distinct = e.distinct && !e.star_arg;
  if (e.star_arg) {
    if (e.name != "count") {
      return Status::Sql("42601", fmt::format("{}(*) is not valid", e.name), e.pos);
    }
    spec.func = AggFunc::kCountStar;
    spec.type = {TypeId::kInt64};
  } else {
    if (e.args.size() != (e.name == "string_agg" ? 2u : 1u)) {
      return Status::Sql("42883", fmt::format("function {} with {} arguments does not exist", e.name,
                                              e.args.size()),
                         e.pos);
    }
    ExprBinder inner = Plain();
    inner.in_aggregate_ = true;
    bool u;
    ASSIGN_OR_RETURN(spec.arg, inner.Bind(*e.args[0], &u));
    if (u) {
      ASSIGN_OR_RETURN(spec.arg, inner.Coerce(std::move(spec.arg), true, {TypeId::kText}, e.pos));
    }
    SqlType at = spec.arg->type;
    if (e.name == "string_agg") {
      ASSIGN_OR_RETURN(spec.separator, inner.Bind(*e.args[1], &u));
      spec.arg = CharAsText(std::move(spec.arg));
      spec.separator = CharAsText(std::move(spec.separator));
      for (const auto* x : {&spec.arg, &spec.separator}) {
        if ((*x)->type.id != TypeId::kText && (*x)->type.id != TypeId::kNull) {
          return Status::Sql("42883", fmt::format("function string_agg({}, {}) does not exist", TypeName(spec.arg->type),
                                                  TypeName(spec.separator->type)), e.pos);
        }
      }
      spec.func = AggFunc::kStringAgg;
      spec.type = {TypeId::kText};
    } else if (e.name == "count") {
      spec.func = AggFunc::kCount;
      spec.type = {TypeId::kInt64};
    } else if (e.name == "min" || e.name == "max") {
      spec.func = e.name == "min" ? AggFunc::kMin : AggFunc::kMax;
      spec.type = at.id == TypeId::kNull ? SqlType{TypeId::kText} : at;
    } else {
      if (!at.IsNumeric() && at.id != TypeId::kNull) {
        return Status::Sql("42883", fmt::format("function {}({}) does not exist", e.name, TypeName(at)),
                           e.pos);
      }
      // As in PostgreSQL: sum(int) is bigint, sum(bigint | numeric) numeric, avg of anything
      // but double precision numeric.
      if (e.name == "sum") {
        spec.func = AggFunc::kSum;
        spec.type = at.id == TypeId::kDouble  ? SqlType{TypeId::kDouble}
                    : at.id == TypeId::kInt32 ? SqlType{TypeId::kInt64}
                                              : SqlType{TypeId::kNumeric};
      } else {
        spec.func = AggFunc::kAvg;
        spec.type = at.id == TypeId::kDouble ? SqlType{TypeId::kDouble} : SqlType{TypeId::kNumeric};
      }
    }
  }
  // Reuse an identical aggregate.
  for (size_t i = 0; i < aggs_->size(); i++) {
    const AggSpec& a = (*aggs_)[i];
    if (a.func == spec.func && a.distinct == spec.distinct &&
        (a.separator ? a.separator->ToString() : "") == (spec.separator ? spec.separator->ToString() : "") &&
        (a.arg ? a.arg->ToString() : "") == (spec.arg ? spec.arg->ToString() : "")) {
      return MakeColumn(static_cast<int>(groups_->size() + i), a.type);
    }
  }
  SqlType t = spec.type;
  aggs_->push_back(std::move(spec));
  return MakeColumn(static_cast<int>(groups_->size() + aggs_->size() - 1), t);
}

Result<BoundExprPtr> ExprBinder::BindFunc(const Expr& e, bool* untyped) {
  const std::string& n = e.name;
  if (IsAggregateName(n)) {
    if (!agg_mode()) {
      return Status::Sql("42803", fmt::format("aggregate functions are not allowed in {}", agg_context_),
                         e.pos);
    }
    return BindAggregate(e);
  }
  if (e.distinct || e.star_arg) {
    return Status::Sql("42809", fmt::format("{} is not an aggregate function", n), e.pos);
  }
  if (e.args.empty()) {
    if (n == "version") {
      return MakeConst(Value::Text("PostgreSQL 15.0 (WattDB 0.1, energy-proportional cluster)"),
                       {TypeId::kText});
    }
    if (n == "current_database") return MakeConst(Value::Text("wattdb"), {TypeId::kText});
    if (n == "now" || n == "current_timestamp" || n == "localtimestamp") {
      // The time the statement was bound, on the master's clock (UTC).
      auto unix_us = std::chrono::duration_cast<std::chrono::microseconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
      return MakeConst(Value::Timestamp(unix_us - kPgEpochUnixMicros), {TypeId::kTimestamp});
    }
    if (n == "current_schema") return MakeConst(Value::Text("public"), {TypeId::kText});
  }
  std::vector<BoundExprPtr> args;
  std::vector<bool> unt;
  for (const auto& a : e.args) {
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr b, Bind(*a, &u));
    args.push_back(std::move(b));
    unt.push_back(u);
  }
  auto out = std::make_unique<BoundExpr>();
  out->kind = BoundExpr::Kind::kFunc;
  auto sig = [&] {
    std::string s;
    for (size_t i = 0; i < args.size(); i++) s += (i ? ", " : "") + TypeName(unt[i] ? SqlType{TypeId::kNull} : args[i]->type);
    return Status::Sql("42883", fmt::format("function {}({}) does not exist", n, s), e.pos);
  };
  auto need = [&](size_t k) { return args.size() == k; };
  if ((n == "abs") && need(1)) {
    if (unt[0]) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kDouble}, e.pos));
    }
    if (!args[0]->type.IsNumeric() && args[0]->type.id != TypeId::kNull) return sig();
    out->func = Func::kAbs;
    out->type = args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kInt32} : args[0]->type;
  } else if ((n == "round") && (need(1) || need(2))) {
    if (unt[0]) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kDouble}, e.pos));
    }
    if (!args[0]->type.IsNumeric() && args[0]->type.id != TypeId::kNull) return sig();
    if (args.size() == 2 && !args[1]->type.IsInteger()) return sig();
    if (args[0]->type.IsInteger() || (args.size() == 2 && args[0]->type.id == TypeId::kDouble)) {
      // round(int) is round(double precision); round(x, n) exists for numeric only.
      SqlType to{args.size() == 2 ? TypeId::kNumeric : TypeId::kDouble};
      if (args.size() == 2 && args[0]->type.id == TypeId::kDouble) return sig();
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), false, to, e.pos));
    }
    out->func = Func::kRound;
    out->type = {args[0]->type.id == TypeId::kNumeric ? TypeId::kNumeric : TypeId::kDouble};
  } else if ((n == "lower" || n == "upper" || n == "length" || n == "char_length" ||
              n == "character_length") && need(1)) {
    if (args[0]->type.id != TypeId::kText && args[0]->type.id != TypeId::kNull && !unt[0]) return sig();
    if (n != "lower" && n != "upper") args[0] = CharAsText(std::move(args[0]));
    out->func = n == "lower" ? Func::kLower : n == "upper" ? Func::kUpper : Func::kLength;
    out->type = out->func == Func::kLength ? SqlType{TypeId::kInt32} : SqlType{TypeId::kText};
  } else if ((n == "coalesce" || n == "greatest" || n == "least") && !args.empty()) {
    SqlType t{TypeId::kNull};
    for (size_t i = 0; i < args.size(); i++) {
      if (unt[i] || args[i]->type.id == TypeId::kNull) continue;
      if (t.id == TypeId::kNull) {
        t = args[i]->type;
      } else if (t.IsNumeric() && args[i]->type.IsNumeric()) {
        t = NumericUnion(t, args[i]->type);
      } else if (t.id != args[i]->type.id) {
        return Status::Sql("42804", fmt::format("{} types {} and {} cannot be matched", 
                                                n == "coalesce" ? "COALESCE" : n == "greatest" ? "GREATEST" : "LEAST",
                                                TypeName(t), TypeName(args[i]->type)),
                           e.args[i]->pos);
      } else if (t.id == TypeId::kText) {
        t.max_len = 0;
      }
    }
    if (t.id == TypeId::kNull) t = {TypeId::kText};
    for (size_t i = 0; i < args.size(); i++) {
      ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), unt[i], t, e.args[i]->pos));
    }
    out->func = n == "coalesce" ? Func::kCoalesce : n == "greatest" ? Func::kGreatest : Func::kLeast;
    out->type = t;
  } else if (n == "nullif" && need(2)) {
    RETURN_NOT_OK(Unify(&args[0], unt[0], &args[1], unt[1], e.pos, "="));
    out->func = Func::kNullIf;
    out->type = args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kText} : args[0]->type;
  } else if ((n == "__is_true" || n == "__is_false") && need(1)) {
    if (unt[0]) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kBool}, e.pos));
    }
    if (args[0]->type.id != TypeId::kBool && args[0]->type.id != TypeId::kNull) {
      return Status::Sql("42804", fmt::format("argument of IS TRUE must be type boolean, not type {}",
                                              TypeName(args[0]->type)), e.pos);
    }
    out->func = n == "__is_true" ? Func::kIsTrue : Func::kIsFalse;
    out->type = {TypeId::kBool};
  } else if ((n == "__any" || n == "__all") && need(2)) {
    // x op ANY|ALL (array)
    if (unt[1]) {
      SqlType elem = unt[0] || args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kText} : args[0]->type;
      ASSIGN_OR_RETURN(args[1], Coerce(std::move(args[1]), true, SqlType::Array(elem.id), e.pos));
    }
    if (args[1]->type.id != TypeId::kArray && args[1]->type.id != TypeId::kNull) {
      return Status::Sql("42809", fmt::format("op ANY/ALL (array) requires array on right side"), e.pos);
    }
    SqlType elem = args[1]->type.id == TypeId::kArray ? args[1]->type.element() : SqlType{TypeId::kText};
    if (unt[0]) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, elem, e.pos));
    }
    args[0] = CharAsText(std::move(args[0]));
    bool comparable = args[0]->type.id == elem.id || args[0]->type.id == TypeId::kNull ||
                      (args[0]->type.IsNumeric() && elem.IsNumeric());
    static const std::map<std::string, BinOp> kCmp = {{"=", BinOp::kEq}, {"<>", BinOp::kNe}, {"<", BinOp::kLt},
                                                       {"<=", BinOp::kLe}, {">", BinOp::kGt}, {">=", BinOp::kGe}};
    auto op = kCmp.find(e.op);
    if (!comparable || op == kCmp.end()) {
      return Status::Sql("42883", fmt::format("operator does not exist: {} {} {}", TypeName(args[0]->type), e.op,
                                              TypeName(elem)), e.pos);
    }
    out->func = Func::kAny;
    out->op = op->second;
    out->negated = n == "__all";
    out->type = {TypeId::kBool};
  } else if (n == "__array") {
    // ARRAY[...]: the elements' common type (untyped literals become text when nothing else says).
    SqlType t{TypeId::kNull};
    for (size_t i = 0; i < args.size(); i++) {
      if (unt[i] || args[i]->type.id == TypeId::kNull) continue;
      SqlType at = args[i]->type.IsFixedChar() ? SqlType{TypeId::kText} : args[i]->type;
      if (t.id == TypeId::kNull) {
        t = at;
      } else if (t.IsNumeric() && at.IsNumeric()) {
        t = NumericUnion(t, at);
      } else if (t.id != at.id) {
        return Status::Sql("42804", fmt::format("ARRAY types {} and {} cannot be matched", TypeName(t), TypeName(at)),
                           e.pos);
      }
    }
    if (t.id == TypeId::kNull) t = {TypeId::kText};
    if (t.id == TypeId::kArray) return Status::Sql("0A000", "multidimensional arrays are not supported", e.pos);
    for (size_t i = 0; i < args.size(); i++) {
      args[i] = CharAsText(std::move(args[i]));
      if (args[i]->type != t) {
        ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), unt[i], t, e.pos));
      }
    }
    out->func = Func::kMakeArray;
    out->type = SqlType::Array(t.id);
  } else if (n == "__subscript" && need(2)) {
    if (args[0]->type.id != TypeId::kArray) {
      return Status::Sql("42804", fmt::format("cannot subscript type {} because it does not support subscripting",
                                              TypeName(args[0]->type)), e.pos);
    }
    if (unt[1]) {
      ASSIGN_OR_RETURN(args[1], Coerce(std::move(args[1]), true, {TypeId::kInt32}, e.pos));
    }
    if (!args[1]->type.IsInteger() && args[1]->type.id != TypeId::kNull) {
      return Status::Sql("42804", "array subscript must have type integer", e.pos);
    }
    out->func = Func::kSubscript;
    out->type = args[0]->type.element();
  } else if ((n == "array_to_string" || n == "array_upper") && need(2)) {
    if (args[0]->type.id != TypeId::kArray && args[0]->type.id != TypeId::kNull) return sig();
    out->func = n == "array_to_string" ? Func::kArrayToString : Func::kArrayUpper;
    out->type = {n == "array_to_string" ? TypeId::kText : TypeId::kInt32};
  } else if (n == "regclass" && need(1) && (unt[0] || args[0]->type.id == TypeId::kText)) {
    // 'name'::regclass: the relation's oid (for comparisons with oid columns).
    out->func = Func::kCatalog;
    out->value = Value::Text("regclass_in");
    out->type = {TypeId::kInt64};
  } else if (auto cat = CatalogFunctionType(n, args.size())) {
    out->func = Func::kCatalog;
    out->value = Value::Text(n);
    out->type = *cat;
  } else {
    return sig();
  }
  out->children = std::move(args);
  if (untyped) *untyped = false;
  return out;
}

Result<BoundExprPtr> ExprBinder::BindInner(const Expr& e, bool* untyped) {
  *untyped = false;
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      *untyped = e.untyped;
      return MakeConst(e.value, SqlType{e.value.type(), 0});
    case Expr::Kind::kColumn: return BindColumn(e);
    case Expr::Kind::kStar:
      return Status::Sql("42601", "* is only allowed in a select list or count(*)", e.pos);
    case Expr::Kind::kUnary: {
      if (e.op == "not") {
        ASSIGN_OR_RETURN(BoundExprPtr a, BindBool(*e.args[0], "NOT"));
        auto out = std::make_unique<BoundExpr>();
        out->kind = BoundExpr::Kind::kNot;
        out->type = {TypeId::kBool};
        out->children.push_back(std::move(a));
        return out;
      }
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &u));
      if (u) {
        ASSIGN_OR_RETURN(a, Coerce(std::move(a), true, {TypeId::kDouble}, e.pos));
      }
      if (!a->type.IsNumeric() && a->type.id != TypeId::kNull) {
        return Status::Sql("42883", fmt::format("operator does not exist: {} {}", e.op, TypeName(a->type)),
                           e.pos);
      }
      if (e.op == "+") return a;
      if (a->kind == BoundExpr::Kind::kConst && a->value.type() == TypeId::kInt64 &&
          a->value.as_int() == (1LL << 31)) {
        return MakeConst(Value::Int32(-(1LL << 31)), {TypeId::kInt32});
      }
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kNeg;
      out->type = a->type.id == TypeId::kNull ? SqlType{TypeId::kInt32} : a->type;
      out->children.push_back(std::move(a));
      return out;
    }
    case Expr::Kind::kBinary: return BindBinary(e);
    case Expr::Kind::kFunc: return BindFunc(e, untyped);
    case Expr::Kind::kIsNull: {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &u));
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kIsNull;
      out->negated = e.negated;
      out->type = {TypeId::kBool};
      out->children.push_back(std::move(a));
      return out;
    }
    case Expr::Kind::kBetween: {
      // x BETWEEN a AND b  ==  x >= a AND x <= b
      Expr ge(Expr::Kind::kBinary, e.pos), le(Expr::Kind::kBinary, e.pos);
      ge.op = ">=";
      le.op = "<=";
      // Borrow children without copying the AST: bind the pieces directly.
      bool ux, ua, ub;
      ASSIGN_OR_RETURN(BoundExprPtr x, Bind(*e.args[0], &ux));
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[1], &ua));
      ASSIGN_OR_RETURN(BoundExprPtr b, Bind(*e.args[2], &ub));
      BoundExprPtr x2 = x->Clone();
      RETURN_NOT_OK(Unify(&x, ux, &a, ua, e.pos, ">="));
      RETURN_NOT_OK(Unify(&x2, ux, &b, ub, e.pos, "<="));
      auto mk = [](BinOp op, BoundExprPtr l, BoundExprPtr r) {
        auto o = std::make_unique<BoundExpr>();
        o->kind = BoundExpr::Kind::kBinary;
        o->op = op;
        o->type = {TypeId::kBool};
        o->children.push_back(std::move(l));
        o->children.push_back(std::move(r));
        return o;
      };
      BoundExprPtr both = mk(BinOp::kAnd, mk(BinOp::kGe, std::move(x), std::move(a)),
                             mk(BinOp::kLe, std::move(x2), std::move(b)));
      if (!e.negated) return both;
      auto n = std::make_unique<BoundExpr>();
      n->kind = BoundExpr::Kind::kNot;
      n->type = {TypeId::kBool};
      n->children.push_back(std::move(both));
      return n;
    }
    case Expr::Kind::kInList: {
      bool ux;
      ASSIGN_OR_RETURN(BoundExprPtr x, Bind(*e.args[0], &ux));
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kInList;
      out->negated = e.negated;
      out->type = {TypeId::kBool};
      std::vector<BoundExprPtr> items;
      for (size_t i = 1; i < e.args.size(); i++) {
        bool u;
        ASSIGN_OR_RETURN(BoundExprPtr it, Bind(*e.args[i], &u));
        BoundExprPtr probe = x->Clone();
        RETURN_NOT_OK(Unify(&probe, false, &it, u, e.args[i]->pos, "="));
        items.push_back(std::move(it));
      }
      if (ux) {
        SqlType t = items.empty() ? SqlType{TypeId::kText} : items[0]->type;
        ASSIGN_OR_RETURN(x, Coerce(std::move(x), true, t, e.pos));
      }
      out->children.push_back(std::move(x));
      for (auto& it : items) out->children.push_back(std::move(it));
      return out;
    }
    case Expr::Kind::kLike: {
      bool ua, ub;
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &ua));
      ASSIGN_OR_RETURN(BoundExprPtr b, Bind(*e.args[1], &ub));
      for (auto* p : {&a, &b}) {
        if ((*p)->type.id != TypeId::kText && (*p)->type.id != TypeId::kNull) {
          return Status::Sql("42883", fmt::format("operator does not exist: {} ~~ {}",
                                                  TypeName(a->type), TypeName(b->type)), e.pos);
        }
      }
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kLike;
      out->negated = e.negated;
      out->case_insensitive = e.op == "ilike";
      out->type = {TypeId::kBool};
      out->children.push_back(std::move(a));
      out->children.push_back(std::move(b));
      return out;
    }
    case Expr::Kind::kCase: {
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kCase;
      std::vector<BoundExprPtr> results;
      std::vector<bool> unt;
      std::vector<int> pos;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        BoundExprPtr cond;
        if (e.operand) {
          bool uo, uw;
          ASSIGN_OR_RETURN(BoundExprPtr o, Bind(*e.operand, &uo));
          ASSIGN_OR_RETURN(BoundExprPtr w, Bind(*e.args[i], &uw));
          RETURN_NOT_OK(Unify(&o, uo, &w, uw, e.args[i]->pos, "="));
          cond = std::make_unique<BoundExpr>();
          cond->kind = BoundExpr::Kind::kBinary;
          cond->op = BinOp::kEq;
          cond->type = {TypeId::kBool};
          cond->children.push_back(std::move(o));
          cond->children.push_back(std::move(w));
        } else {
          ASSIGN_OR_RETURN(cond, BindBool(*e.args[i], "CASE/WHEN"));
        }
        out->children.push_back(std::move(cond));
        bool u;
        ASSIGN_OR_RETURN(BoundExprPtr th, Bind(*e.args[i + 1], &u));
        results.push_back(std::move(th));
        unt.push_back(u);
        pos.push_back(e.args[i + 1]->pos);
      }
      if (e.else_expr) {
        bool u;
        ASSIGN_OR_RETURN(BoundExprPtr el, Bind(*e.else_expr, &u));
        results.push_back(std::move(el));
        unt.push_back(u);
        pos.push_back(e.else_expr->pos);
        out->has_else = true;
      }
      SqlType t{TypeId::kNull};
      for (size_t i = 0; i < results.size(); i++) {
        if (unt[i] || results[i]->type.id == TypeId::kNull) continue;
        if (t.id == TypeId::kNull) {
          t = results[i]->type;
        } else if (t.IsNumeric() && results[i]->type.IsNumeric()) {
          t = NumericUnion(t, results[i]->type);
        } else if (t.id != results[i]->type.id) {
          return Status::Sql("42804", fmt::format("CASE types {} and {} cannot be matched",
                                                  TypeName(t), TypeName(results[i]->type)), pos[i]);
        } else if (t.id == TypeId::kText) {
          t.max_len = 0;
        }
      }
      if (t.id == TypeId::kNull) t = {TypeId::kText};
      std::vector<BoundExprPtr> conds = std::move(out->children);
      out->children.clear();
      for (size_t i = 0; i < conds.size(); i++) {
        out->children.push_back(std::move(conds[i]));
        ASSIGN_OR_RETURN(BoundExprPtr r, Coerce(std::move(results[i]), unt[i], t, pos[i]));
        out->children.push_back(std::move(r));
      }
      if (out->has_else) {
        ASSIGN_OR_RETURN(BoundExprPtr r, Coerce(std::move(results.back()), unt.back(), t, pos.back()));
        out->children.push_back(std::move(r));
      }
      out->type = t;
      return out;
    }
    case Expr::Kind::kParam: {
      if (!params_ || e.param > static_cast<int>(params_->size())) {
        return Status::Sql("42P02", fmt::format("there is no parameter ${}", e.param), e.pos);
      }
      auto p = std::make_unique<BoundExpr>();
      p->kind = BoundExpr::Kind::kParam;
      p->column = e.param - 1;
      p->type = (*params_)[e.param - 1];
      *untyped = p->type.id == TypeId::kNull;
      return p;
    }
    case Expr::Kind::kSubquery:
    case Expr::Kind::kExists:
    case Expr::Kind::kArray:
    case Expr::Kind::kInSelect: return BindSubquery(e);
    case Expr::Kind::kCast: {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &u));
      if (a->kind == BoundExpr::Kind::kFunc && a->func == Func::kCatalog && a->value.ToText() == "regclass_in" &&
          e.cast_type.id == TypeId::kText) {
        // 'name'::regclass::text prints the relation's name, as regclass output does.
        auto name = std::make_unique<BoundExpr>();
        name->kind = BoundExpr::Kind::kFunc;
        name->func = Func::kCatalog;
        name->value = Value::Text("regclass");
        name->type = {TypeId::kText};
        name->children.push_back(std::move(a));
        return name;
      }
      if (u) {
        // An untyped literal or parameter cast to a type takes that type.
        ASSIGN_OR_RETURN(a, Coerce(std::move(a), true, e.cast_type, e.pos));
        if (a->type == e.cast_type && a->kind != BoundExpr::Kind::kConst) return a;
      }
      if (a->kind == BoundExpr::Kind::kConst) {
        auto v = a->value.CastTo(e.cast_type);
        if (!v.ok()) return v.status().WithPosition(e.pos);
        return MakeConst(std::move(v).value(), e.cast_type);
      }
      auto out = std::make_unique<BoundExpr>();
      out->kind = BoundExpr::Kind::kCast;
      out->type = e.cast_type;
      out->children.push_back(std::move(a));
      return out;
    }
  }
  return Status::Internal("unhandled expression kind");
}

}  // namespace wattdb::plan
