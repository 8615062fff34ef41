#include "query/plan/expr_binder.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "common/sqlstate.h"
#include "common/stack_guard.h"

namespace wattdb::plan {

std::string TypeName(const SqlType& t) { return t.id == TypeId::kNull ? "unknown" : t.ToString(); }

SqlType NumericUnion(const SqlType& a, const SqlType& b) {
  if (a.id == TypeId::kDouble || b.id == TypeId::kDouble) return {TypeId::kDouble};
  if (a.id == TypeId::kNumeric || b.id == TypeId::kNumeric) return {TypeId::kNumeric};
  if (a.id == TypeId::kInt64 || b.id == TypeId::kInt64) return {TypeId::kInt64};
  return {TypeId::kInt32};
}

Result<BoundExprPtr> ExprBinder::Bind(const Expr& e, bool* untyped) {
  CHECK_STACK_DEPTH();
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
  return FoldIntegerArithmetic(FoldStrictNull(std::move(*r)));
}

// PostgreSQL's planner replaces a strict operator or function with a NULL constant
// argument by NULL before anything runs, so the other arguments are never evaluated
// (CAST(NULL AS INTEGER) + <an expression that would overflow> is NULL, not 22003).
BoundExprPtr FoldStrictNull(BoundExprPtr e) {
  using K = BoundExpr::Kind;
  bool strict = false;
  switch (e->kind) {
    case K::kBinary:
      strict = e->op != BinOp::kAnd && e->op != BinOp::kOr;
      break;
    case K::kNeg:
    case K::kCast:
    case K::kLike:
      strict = true;
      break;
    case K::kFunc:
      strict = e->func == Func::kAbs || e->func == Func::kLower || e->func == Func::kUpper ||
               e->func == Func::kLength || e->func == Func::kRound ||
               e->func == Func::kBpcharText || e->func == Func::kRegex;
      break;
    default:
      break;
  }
  if (!strict) return e;
  bool null_arg = std::any_of(e->children.begin(), e->children.end(), [](const BoundExprPtr& c) {
    return c->kind == BoundExpr::Kind::kConst && c->value.is_null();
  });
  return null_arg ? MakeConst(Value(), e->type) : std::move(e);
}

BoundExprPtr FoldIntegerArithmetic(BoundExprPtr e) {
  using K = BoundExpr::Kind;
  auto integer = [](TypeId t) { return t == TypeId::kInt32 || t == TypeId::kInt64; };
  auto int_const = [&](const BoundExprPtr& c) {
    return c->kind == K::kConst && integer(c->value.type()) && integer(c->type.id);
  };
  if (!integer(e->type.id) || e->children.empty() ||
      !std::all_of(e->children.begin(), e->children.end(), int_const)) {
    return e;
  }
  int64_t out = 0;
  bool overflow = true;
  if (e->kind == K::kNeg && e->children.size() == 1) {
    overflow = __builtin_sub_overflow(int64_t{0}, e->children[0]->value.as_int(), &out);
  } else if (e->kind == K::kBinary && e->children.size() == 2) {
    int64_t a = e->children[0]->value.as_int(), b = e->children[1]->value.as_int();
    switch (e->op) {
      case BinOp::kAdd:
        overflow = __builtin_add_overflow(a, b, &out);
        break;
      case BinOp::kSub:
        overflow = __builtin_sub_overflow(a, b, &out);
        break;
      case BinOp::kMul:
        overflow = __builtin_mul_overflow(a, b, &out);
        break;
      default:
        return e;
    }
  } else {
    return e;
  }
  if (overflow) return e;
  if (e->type.id == TypeId::kInt32) {
    if (out < INT32_MIN || out > INT32_MAX) return e;
    return MakeConst(Value::Int32(out), e->type);
  }
  return MakeConst(Value::Int64(out), e->type);
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
  b.now_us_ = now_us_;
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
        return Status::Sql(sqlstate::kAmbiguousColumn,
                           fmt::format("column reference \"{}\" is ambiguous", shown), e.pos);
      }
      found = static_cast<int>(i);
    }
    if (found < 0) {
      if (table_seen) break;  // the qualifier names a FROM item of this scope
      continue;
    }
    if (depth == 0) {
      if (agg_mode() && !in_aggregate_) {
        return Status::Sql(sqlstate::kGroupingError,
                           fmt::format("column \"{}\" must appear in the GROUP BY clause or be "
                                       "used in an aggregate function",
                                       shown),
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
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("missing FROM-clause entry for table \"{}\"", e.table), e.pos);
  }
  return Status::Sql(sqlstate::kUndefinedColumn, fmt::format("column \"{}\" does not exist", shown),
                     e.pos);
}

Result<BoundExprPtr> ExprBinder::BindSubquery(const Expr& e) {
  if (!subquery_)
    return Status::Sql(sqlstate::kFeatureNotSupported, "subqueries are not supported here", e.pos);
  ASSIGN_OR_RETURN(BoundSelect sub, subquery_(*e.subquery, scope_));
  if (sub.correlated && agg_mode() && !in_aggregate_) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "correlated subqueries in an aggregating query are not supported", e.pos);
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
    return Status::Sql(sqlstate::kSyntaxError,
                       sub.types.size() > 1 ? "subquery has too many columns"
                                            : "subquery must return only one column",
                       e.pos);
  }
  if (e.kind == Expr::Kind::kArray) {
    if (sub.types[0].id == TypeId::kArray)
      return Status::Sql(sqlstate::kFeatureNotSupported, "arrays of arrays are not supported",
                         e.pos);
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
      return Status::Sql(
          sqlstate::kUndefinedFunction,
          fmt::format("operator does not exist: {} = {}", TypeName(x->type), TypeName(ct)), e.pos);
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

Status ExprBinder::Unify(BoundExprPtr* a, bool ua, BoundExprPtr* b, bool ub, int pos,
                         const char* op) {
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
  return Status::Sql(
      sqlstate::kUndefinedFunction,
      fmt::format("operator does not exist: {} {} {}", TypeName(ta), op, TypeName(tb)), pos);
}

Result<BoundExprPtr> ExprBinder::BindBool(const Expr& e, const char* what) {
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr b, Bind(e, &u));
  if (u) return Coerce(std::move(b), true, {TypeId::kBool}, e.pos);
  if (b->type.id != TypeId::kBool && b->type.id != TypeId::kNull) {
    return Status::Sql(
        sqlstate::kDatatypeMismatch,
        fmt::format("argument of {} must be type boolean, not type {}", what, TypeName(b->type)),
        e.pos);
  }
  return b;
}

// Arithmetic: untyped literals take the other side's numeric type; the result is the
// operands' common numeric type.
Status ExprBinder::BindArithmetic(const Expr& e, BoundExprPtr* l, bool ul, BoundExprPtr* r, bool ur,
                                  SqlType* type) {
  const std::string& op = e.op;
  if (ul && (*r)->type.IsNumeric()) {
    ASSIGN_OR_RETURN(*l, Coerce(std::move(*l), true, (*r)->type, e.args[0]->pos));
  } else if (ur && (*l)->type.IsNumeric()) {
    ASSIGN_OR_RETURN(*r, Coerce(std::move(*r), true, (*l)->type, e.args[1]->pos));
  }
  SqlType lt = (*l)->type, rt = (*r)->type;
  bool ln = lt.IsNumeric() || lt.id == TypeId::kNull, rn = rt.IsNumeric() || rt.id == TypeId::kNull;
  if (!ln || !rn) {
    return Status::Sql(
        sqlstate::kUndefinedFunction,
        fmt::format("operator does not exist: {} {} {}", TypeName(lt), op, TypeName(rt)), e.pos);
  }
  if (lt.id == TypeId::kNull && rt.id == TypeId::kNull) {
    *type = {TypeId::kInt32};
  } else if (lt.id == TypeId::kNull) {
    *type = rt;
  } else if (rt.id == TypeId::kNull) {
    *type = lt;
  } else {
    *type = NumericUnion(lt, rt);
  }
  return Status::OK();
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
        return Status::Sql(sqlstate::kUndefinedFunction,
                           fmt::format("operator does not exist: {} {} {}", TypeName(l->type), op,
                                       TypeName(r->type)),
                           e.pos);
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
    if (l->type.id != TypeId::kArray && l->type.id != TypeId::kNull)
      return Status::Sql(sqlstate::kUndefinedFunction, "array concatenation needs two arrays",
                         e.pos);
    if (r->type.id != TypeId::kArray && r->type.id != TypeId::kNull)
      return Status::Sql(sqlstate::kUndefinedFunction, "array concatenation needs two arrays",
                         e.pos);
    out->op = BinOp::kConcat;
    out->type = t;
    out->children.push_back(std::move(l));
    out->children.push_back(std::move(r));
    return out;
  }
  static const std::map<std::string, BinOp> kOps = {
      {"+", BinOp::kAdd}, {"-", BinOp::kSub},     {"*", BinOp::kMul}, {"/", BinOp::kDiv},
      {"%", BinOp::kMod}, {"||", BinOp::kConcat}, {"=", BinOp::kEq},  {"<>", BinOp::kNe},
      {"<", BinOp::kLt},  {"<=", BinOp::kLe},     {">", BinOp::kGt},  {">=", BinOp::kGe}};
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
    RETURN_NOT_OK(BindArithmetic(e, &l, ul, &r, ur, &out->type));
  }
  out->children.push_back(std::move(l));
  out->children.push_back(std::move(r));
  return out;
}

// NOT x, +x, -x.
Result<BoundExprPtr> ExprBinder::BindUnary(const Expr& e) {
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
    return Status::Sql(sqlstate::kUndefinedFunction,
                       fmt::format("operator does not exist: {} {}", e.op, TypeName(a->type)),
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

// x [NOT] BETWEEN a AND b, bound as x >= a AND x <= b.
Result<BoundExprPtr> ExprBinder::BindBetween(const Expr& e) {
  // x BETWEEN a AND b  ==  x >= a AND x <= b
  // Bind the pieces directly rather than building new AST nodes.
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

// x [NOT] IN (a, b, ...): each item unified with x.
Result<BoundExprPtr> ExprBinder::BindInList(const Expr& e) {
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

// [NOT] LIKE / ILIKE on text.
Result<BoundExprPtr> ExprBinder::BindLike(const Expr& e) {
  bool ua, ub;
  ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &ua));
  ASSIGN_OR_RETURN(BoundExprPtr b, Bind(*e.args[1], &ub));
  for (auto* p : {&a, &b}) {
    if ((*p)->type.id != TypeId::kText && (*p)->type.id != TypeId::kNull) {
      return Status::Sql(
          sqlstate::kUndefinedFunction,
          fmt::format("operator does not exist: {} ~~ {}", TypeName(a->type), TypeName(b->type)),
          e.pos);
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

// CASE [operand] WHEN ... THEN ... [ELSE ...] END: the results take one common type.
Result<BoundExprPtr> ExprBinder::BindCase(const Expr& e) {
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
      return Status::Sql(sqlstate::kDatatypeMismatch,
                         fmt::format("CASE types {} and {} cannot be matched", TypeName(t),
                                     TypeName(results[i]->type)),
                         pos[i]);
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

// $n: its type from describe mode, or unknown.
Result<BoundExprPtr> ExprBinder::BindParam(const Expr& e, bool* untyped) {
  if (!params_ || e.param > static_cast<int>(params_->size())) {
    return Status::Sql(sqlstate::kUndefinedParameter,
                       fmt::format("there is no parameter ${}", e.param), e.pos);
  }
  auto p = std::make_unique<BoundExpr>();
  p->kind = BoundExpr::Kind::kParam;
  p->column = e.param - 1;
  p->type = (*params_)[e.param - 1];
  *untyped = p->type.id == TypeId::kNull;
  return p;
}

// x::type, folded when x is a constant.
Result<BoundExprPtr> ExprBinder::BindCast(const Expr& e) {
  bool u;
  ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &u));
  if (a->kind == BoundExpr::Kind::kFunc && a->func == Func::kCatalog &&
      a->value.ToText() == "regclass_in" && e.cast_type.id == TypeId::kText) {
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

Result<BoundExprPtr> ExprBinder::BindInner(const Expr& e, bool* untyped) {
  *untyped = false;
  switch (e.kind) {
    case Expr::Kind::kLiteral:
      *untyped = e.untyped;
      return MakeConst(e.value, SqlType{e.value.type(), 0});
    case Expr::Kind::kColumn:
      return BindColumn(e);
    case Expr::Kind::kStar:
      return Status::Sql(sqlstate::kSyntaxError, "* is only allowed in a select list or count(*)",
                         e.pos);
    case Expr::Kind::kUnary:
      return BindUnary(e);
    case Expr::Kind::kBinary:
      return BindBinary(e);
    case Expr::Kind::kFunc:
      return BindFunc(e, untyped);
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
    case Expr::Kind::kBetween:
      return BindBetween(e);
    case Expr::Kind::kInList:
      return BindInList(e);
    case Expr::Kind::kLike:
      return BindLike(e);
    case Expr::Kind::kCase:
      return BindCase(e);
    case Expr::Kind::kParam:
      return BindParam(e, untyped);
    case Expr::Kind::kSubquery:
    case Expr::Kind::kExists:
    case Expr::Kind::kArray:
    case Expr::Kind::kInSelect:
      return BindSubquery(e);
    case Expr::Kind::kCast:
      return BindCast(e);
  }
  return Status::Internal("unhandled expression kind");
}

}  // namespace wattdb::plan
