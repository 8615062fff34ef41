#include "query/plan/binder.h"

#include <map>

#include "common/codec.h"

namespace wattdb::plan {

namespace {

using sql::Expr;

struct ScopeColumn {
  std::string name;
  SqlType type;
  bool hidden = false;
};

std::string TypeName(const SqlType& t) { return t.id == TypeId::kNull ? "unknown" : t.ToString(); }

bool IsAggregateName(const std::string& n) {
  return n == "count" || n == "sum" || n == "min" || n == "max" || n == "avg";
}

// Numeric result type of combining a and b.
SqlType NumericUnion(const SqlType& a, const SqlType& b) {
  if (a.id == TypeId::kDouble || b.id == TypeId::kDouble) return {TypeId::kDouble};
  if (a.id == TypeId::kInt64 || b.id == TypeId::kInt64) return {TypeId::kInt64};
  return {TypeId::kInt32};
}

class Binder {
 public:
  Binder(std::vector<ScopeColumn> scope, std::string table_name, std::string alias)
      : scope_(std::move(scope)), table_(std::move(table_name)), alias_(std::move(alias)) {}

  // Binds `e`. `untyped` reports whether the result is a string literal whose type is not
  // yet decided (PostgreSQL's "unknown"), so that context may coerce it.
  Result<BoundExprPtr> Bind(const Expr& e, bool* untyped = nullptr);

  // Aggregation mode: expressions are bound over the aggregate's output
  // (groups then aggregates).
  void EnterAggMode(std::vector<BoundExprPtr>* groups, std::vector<AggSpec>* aggs) {
    groups_ = groups;
    aggs_ = aggs;
    group_strings_.clear();
    for (const auto& g : *groups) group_strings_.push_back(g->ToString());
  }
  bool agg_mode() const { return groups_ != nullptr; }
  void set_allow_aggregates(bool a, const char* where) {
    allow_aggs_ = a;
    agg_context_ = where;
  }

  // Coerces `e` (an untyped literal if `untyped`) to `t` for comparison or assignment.
  Result<BoundExprPtr> Coerce(BoundExprPtr e, bool untyped, const SqlType& t, int pos);

 private:
  Result<BoundExprPtr> BindInner(const Expr& e, bool* untyped);
  Result<BoundExprPtr> BindColumn(const Expr& e);
  Result<BoundExprPtr> BindBinary(const Expr& e);
  Result<BoundExprPtr> BindFunc(const Expr& e, bool* untyped);
  Result<BoundExprPtr> BindAggregate(const Expr& e);
  Result<BoundExprPtr> BindBool(const Expr& e, const char* what);
  // Brings two operands to a common comparable type.
  Status Unify(BoundExprPtr* a, bool ua, BoundExprPtr* b, bool ub, int pos, const char* op);

  std::vector<ScopeColumn> scope_;
  std::string table_, alias_;
  std::vector<BoundExprPtr>* groups_ = nullptr;  // borrowed; set in agg mode
  std::vector<AggSpec>* aggs_ = nullptr;
  std::vector<std::string> group_strings_;
  bool allow_aggs_ = false;
  const char* agg_context_ = "WHERE";
  bool in_aggregate_ = false;
};

Result<BoundExprPtr> Binder::Bind(const Expr& e, bool* untyped) {
  bool u = false;
  if (agg_mode() && !in_aggregate_) {
    // An expression equal to a GROUP BY expression reads the group column.
    Binder plain(scope_, table_, alias_);
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

Result<BoundExprPtr> Binder::BindColumn(const Expr& e) {
  if (!e.table.empty() && e.table != table_ && e.table != alias_) {
    return Status::Sql("42P01", fmt::format("missing FROM-clause entry for table \"{}\"", e.table),
                       e.pos);
  }
  for (size_t i = 0; i < scope_.size(); i++) {
    if (scope_[i].name == e.name && !scope_[i].hidden) {
      if (agg_mode() && !in_aggregate_) {
        return Status::Sql("42803",
                           fmt::format("column \"{}\" must appear in the GROUP BY clause or be "
                                       "used in an aggregate function",
                                       e.table.empty() ? e.name : e.table + "." + e.name),
                           e.pos);
      }
      return MakeColumn(static_cast<int>(i), scope_[i].type);
    }
  }
  return Status::Sql("42703", fmt::format("column \"{}\" does not exist",
                                          e.table.empty() ? e.name : e.table + "." + e.name),
                     e.pos);
}

Result<BoundExprPtr> Binder::Coerce(BoundExprPtr e, bool untyped, const SqlType& t, int pos) {
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

Status Binder::Unify(BoundExprPtr* a, bool ua, BoundExprPtr* b, bool ub, int pos, const char* op) {
  SqlType ta = (*a)->type, tb = (*b)->type;
  if (ta.id == TypeId::kNull || tb.id == TypeId::kNull) return Status::OK();
  if (ua && !ub) {
    ASSIGN_OR_RETURN(*a, Coerce(std::move(*a), true, tb, pos));
    return Status::OK();
  }
  if (ub && !ua) {
    ASSIGN_OR_RETURN(*b, Coerce(std::move(*b), true, ta, pos));
    return Status::OK();
  }
  if (ta.IsNumeric() && tb.IsNumeric()) return Status::OK();
  if (ta.id == tb.id) return Status::OK();
  return Status::Sql("42883", fmt::format("operator does not exist: {} {} {}", TypeName(ta), op,
                                          TypeName(tb)),
                     pos);
}

Result<BoundExprPtr> Binder::BindBool(const Expr& e, const char* what) {
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

Result<BoundExprPtr> Binder::BindBinary(const Expr& e) {
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
  static const std::map<std::string, BinOp> kOps = {
      {"+", BinOp::kAdd}, {"-", BinOp::kSub}, {"*", BinOp::kMul}, {"/", BinOp::kDiv},
      {"%", BinOp::kMod}, {"||", BinOp::kConcat}, {"=", BinOp::kEq}, {"<>", BinOp::kNe},
      {"<", BinOp::kLt}, {"<=", BinOp::kLe}, {">", BinOp::kGt}, {">=", BinOp::kGe}};
  out->op = kOps.at(op);
  if (out->op == BinOp::kConcat) {
    out->type = {TypeId::kText};
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

Result<BoundExprPtr> Binder::BindAggregate(const Expr& e) {
  if (!allow_aggs_) {
    return Status::Sql("42803", fmt::format("aggregate functions are not allowed in {}", agg_context_),
                       e.pos);
  }
  if (in_aggregate_) {
    return Status::Sql("42803", "aggregate function calls cannot be nested", e.pos);
  }
  if (e.distinct) {
    return Status::Sql("0A000", fmt::format("{}(DISTINCT ...) is not supported yet", e.name), e.pos);
  }
  AggSpec spec;
  if (e.star_arg) {
    if (e.name != "count") {
      return Status::Sql("42601", fmt::format("{}(*) is not valid", e.name), e.pos);
    }
    spec.func = AggFunc::kCountStar;
    spec.type = {TypeId::kInt64};
  } else {
    if (e.args.size() != 1) {
      return Status::Sql("42883", fmt::format("function {} with {} arguments does not exist", e.name,
                                              e.args.size()),
                         e.pos);
    }
    Binder inner(scope_, table_, alias_);
    inner.in_aggregate_ = true;
    bool u;
    ASSIGN_OR_RETURN(spec.arg, inner.Bind(*e.args[0], &u));
    if (u) {
      ASSIGN_OR_RETURN(spec.arg, inner.Coerce(std::move(spec.arg), true, {TypeId::kText}, e.pos));
    }
    SqlType at = spec.arg->type;
    if (e.name == "count") {
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
      if (e.name == "sum") {
        spec.func = AggFunc::kSum;
        spec.type = at.id == TypeId::kDouble ? SqlType{TypeId::kDouble} : SqlType{TypeId::kInt64};
      } else {
        spec.func = AggFunc::kAvg;
        spec.type = {TypeId::kDouble};
      }
    }
  }
  // Reuse an identical aggregate.
  std::string key = fmt::format("{}:{}", static_cast<int>(spec.func), spec.arg ? spec.arg->ToString() : "");
  for (size_t i = 0; i < aggs_->size(); i++) {
    const AggSpec& a = (*aggs_)[i];
    if (a.func == spec.func && (a.arg ? a.arg->ToString() : "") == (spec.arg ? spec.arg->ToString() : "")) {
      return MakeColumn(static_cast<int>(groups_->size() + i), a.type);
    }
  }
  (void)key;
  SqlType t = spec.type;
  aggs_->push_back(std::move(spec));
  return MakeColumn(static_cast<int>(groups_->size() + aggs_->size() - 1), t);
}

Result<BoundExprPtr> Binder::BindFunc(const Expr& e, bool* untyped) {
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
    if (args[0]->type.IsInteger()) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), false, {TypeId::kDouble}, e.pos));
    }
    out->func = Func::kRound;
    out->type = {TypeId::kDouble};
  } else if ((n == "lower" || n == "upper" || n == "length" || n == "char_length" ||
              n == "character_length") && need(1)) {
    if (args[0]->type.id != TypeId::kText && args[0]->type.id != TypeId::kNull && !unt[0]) return sig();
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
  } else {
    return sig();
  }
  out->children = std::move(args);
  if (untyped) *untyped = false;
  return out;
}

Result<BoundExprPtr> Binder::BindInner(const Expr& e, bool* untyped) {
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
        return Status::Sql("42883", fmt::format("operator does not exist: - {}", TypeName(a->type)),
                           e.pos);
      }
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
    case Expr::Kind::kCast: {
      bool u;
      ASSIGN_OR_RETURN(BoundExprPtr a, Bind(*e.args[0], &u));
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

Result<BoundSelect> BindSelect(const sql::SelectStmt& s, const CatalogReader& catalog) {
  BoundSelect out;
  TableSchema table;
  std::vector<ScopeColumn> scope;
  if (s.has_from) {
    auto t = catalog.GetTable(s.from_table);
    if (!t.ok()) return t.status().WithPosition(s.from_pos);
    table = std::move(t).value();
    scope = TableScope(table);
  }
  Binder binder(scope, s.from_table, s.from_alias);

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

Result<BoundExprPtr> BindAssignment(Binder& b, const Expr& e, const Column& col) {
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

Result<BoundInsert> BindInsert(const sql::InsertStmt& s, const CatalogReader& catalog) {
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
  Binder binder({}, "", "");
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
Status BindSource(Binder& binder, const sql::ExprPtr& where_ast, BoundModify* out) {
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

Result<BoundModify> BindUpdate(const sql::UpdateStmt& s, const CatalogReader& catalog) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundModify out;
  out.table = std::move(t).value();
  Binder binder(TableScope(out.table), out.table.name, "");
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

Result<BoundModify> BindDelete(const sql::DeleteStmt& s, const CatalogReader& catalog) {
  auto t = catalog.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  BoundModify out;
  out.table = std::move(t).value();
  Binder binder(TableScope(out.table), out.table.name, "");
  RETURN_NOT_OK(BindSource(binder, s.where, &out));
  return out;
}

}  // namespace wattdb::plan
