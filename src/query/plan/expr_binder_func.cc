// ExprBinder: aggregates and function calls, including the functions the catalog answers.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>

#include "common/sqlstate.h"
#include "query/plan/builtins.h"
#include "query/plan/expr_binder.h"

namespace wattdb::plan {

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
      {"regclass", {1, 1, TypeId::kText}},
      {"regtype", {1, 1, TypeId::kText}},
      {"regnamespace", {1, 1, TypeId::kText}},
      {"regproc", {1, 1, TypeId::kText}},
      {"regrole", {1, 1, TypeId::kText}},
      {"pg_get_userbyid", {1, 1, TypeId::kText}},
      {"pg_table_is_visible", {1, 1, TypeId::kBool}},
      {"format_type", {2, 2, TypeId::kText}},
      {"pg_get_expr", {2, 3, TypeId::kText}},
      {"pg_get_indexdef", {1, 3, TypeId::kText}},
      {"pg_get_constraintdef", {1, 2, TypeId::kText}},
      {"pg_relation_is_publishable", {1, 1, TypeId::kBool}},
      {"pg_get_statisticsobjdef_columns", {1, 1, TypeId::kText}},
      {"col_description", {2, 2, TypeId::kText}},
      {"obj_description", {1, 2, TypeId::kText}},
      {"shobj_description", {2, 2, TypeId::kText}},
      {"pg_get_viewdef", {1, 2, TypeId::kText}},
      {"pg_relation_size", {1, 2, TypeId::kInt64}},
      {"pg_table_size", {1, 1, TypeId::kInt64}},
      {"pg_total_relation_size", {1, 1, TypeId::kInt64}},
      {"pg_indexes_size", {1, 1, TypeId::kInt64}},
      {"pg_size_pretty", {1, 1, TypeId::kText}},
      {"pg_encoding_to_char", {1, 1, TypeId::kText}},
      {"pg_function_is_visible", {1, 1, TypeId::kBool}},
      {"pg_type_is_visible", {1, 1, TypeId::kBool}},
  };
  auto it = kFuncs.find(name);
  if (it == kFuncs.end() || nargs < it->second.min_args || nargs > it->second.max_args)
    return std::nullopt;
  return SqlType{it->second.result};
}

Result<BoundExprPtr> ExprBinder::BindAggregate(const Expr& e) {
  if (!allow_aggs_) {
    return Status::Sql(sqlstate::kGroupingError,
                       fmt::format("aggregate functions are not allowed in {}", agg_context_),
                       e.pos);
  }
  if (in_aggregate_) {
    return Status::Sql(sqlstate::kGroupingError, "aggregate function calls cannot be nested",
                       e.pos);
  }
  AggSpec spec;
  spec.distinct = e.distinct && !e.star_arg;
  if (e.star_arg) {
    if (e.name != "count") {
      return Status::Sql(sqlstate::kSyntaxError, fmt::format("{}(*) is not valid", e.name), e.pos);
    }
    spec.func = AggFunc::kCountStar;
    spec.type = {TypeId::kInt64};
  } else {
    if (e.args.size() != (e.name == "string_agg" ? 2u : 1u)) {
      return Status::Sql(
          sqlstate::kUndefinedFunction,
          fmt::format("function {} with {} arguments does not exist", e.name, e.args.size()),
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
          return Status::Sql(sqlstate::kUndefinedFunction,
                             fmt::format("function string_agg({}, {}) does not exist",
                                         TypeName(spec.arg->type), TypeName(spec.separator->type)),
                             e.pos);
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
        return Status::Sql(sqlstate::kUndefinedFunction,
                           fmt::format("function {}({}) does not exist", e.name, TypeName(at)),
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
        (a.separator ? a.separator->ToString() : "") ==
            (spec.separator ? spec.separator->ToString() : "") &&
        (a.arg ? a.arg->ToString() : "") == (spec.arg ? spec.arg->ToString() : "")) {
      return MakeColumn(static_cast<int>(groups_->size() + i), a.type);
    }
  }
  SqlType t = spec.type;
  aggs_->push_back(std::move(spec));
  return MakeColumn(static_cast<int>(groups_->size() + aggs_->size() - 1), t);
}

Status ExprBinder::CallArgs::NoSuchFunction() const {
  std::string s;
  for (size_t i = 0; i < args.size(); i++)
    s += (i ? ", " : "") + TypeName(unt[i] ? SqlType{TypeId::kNull} : args[i]->type);
  return Status::Sql(sqlstate::kUndefinedFunction,
                     fmt::format("function {}({}) does not exist", e.name, s), e.pos);
}

std::optional<BoundExprPtr> ExprBinder::BindNiladic(const Expr& e) {
  const std::string& n = e.name;
  if (n == "version") {
    return MakeConst(Value::Text("PostgreSQL 15.0 (WattDB 0.1, energy-proportional cluster)"),
                     {TypeId::kText});
  }
  if (n == "current_database") return MakeConst(Value::Text("wattdb"), {TypeId::kText});
  if (n == "current_schema") return MakeConst(Value::Text("public"), {TypeId::kText});
  if (n == "now" || n == "current_timestamp" || n == "localtimestamp") {
    // The statement's time, on the master's clock (UTC).
    if (params_) {
      auto p = std::make_unique<BoundExpr>();
      p->kind = BoundExpr::Kind::kParam;
      p->column = kTimeParam;
      p->type = {TypeId::kTimestamp};
      return p;
    }
    return MakeConst(Value::Timestamp(now_us_ ? *now_us_ : PgNowMicros()), {TypeId::kTimestamp});
  }
  return std::nullopt;
}

Status ExprBinder::BindAbs(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  if (c.unt[0]) {
    ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kDouble}, c.e.pos));
  }
  if (!args[0]->type.IsNumeric() && args[0]->type.id != TypeId::kNull) return c.NoSuchFunction();
  out->func = Func::kAbs;
  out->type = args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kInt32} : args[0]->type;
  return Status::OK();
}

Status ExprBinder::BindRound(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  if (c.unt[0]) {
    ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kDouble}, c.e.pos));
  }
  if (!args[0]->type.IsNumeric() && args[0]->type.id != TypeId::kNull) return c.NoSuchFunction();
  if (args.size() == 2 && !args[1]->type.IsInteger()) return c.NoSuchFunction();
  if (args[0]->type.IsInteger() || (args.size() == 2 && args[0]->type.id == TypeId::kDouble)) {
    // round(int) is round(double precision); round(x, n) exists for numeric only.
    SqlType to{args.size() == 2 ? TypeId::kNumeric : TypeId::kDouble};
    if (args.size() == 2 && args[0]->type.id == TypeId::kDouble) return c.NoSuchFunction();
    ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), false, to, c.e.pos));
  }
  out->func = Func::kRound;
  out->type = {args[0]->type.id == TypeId::kNumeric ? TypeId::kNumeric : TypeId::kDouble};
  return Status::OK();
}

Status ExprBinder::BindCaseOrLength(CallArgs& c, BoundExpr* out) {
  const std::string& n = c.e.name;
  auto& args = c.args;
  if (args[0]->type.id != TypeId::kText && args[0]->type.id != TypeId::kNull && !c.unt[0])
    return c.NoSuchFunction();
  if (n != "lower" && n != "upper") args[0] = CharAsText(std::move(args[0]));
  out->func = n == "lower" ? Func::kLower : n == "upper" ? Func::kUpper : Func::kLength;
  out->type = out->func == Func::kLength ? SqlType{TypeId::kInt32} : SqlType{TypeId::kText};
  return Status::OK();
}

Status ExprBinder::BindCommonType(CallArgs& c, BoundExpr* out) {
  const std::string& n = c.e.name;
  auto& args = c.args;
  SqlType t{TypeId::kNull};
  for (size_t i = 0; i < args.size(); i++) {
    if (c.unt[i] || args[i]->type.id == TypeId::kNull) continue;
    if (t.id == TypeId::kNull) {
      t = args[i]->type;
    } else if (t.IsNumeric() && args[i]->type.IsNumeric()) {
      t = NumericUnion(t, args[i]->type);
    } else if (t.id != args[i]->type.id) {
      return Status::Sql(sqlstate::kDatatypeMismatch,
                         fmt::format("{} types {} and {} cannot be matched",
                                     n == "coalesce"   ? "COALESCE"
                                     : n == "greatest" ? "GREATEST"
                                                       : "LEAST",
                                     TypeName(t), TypeName(args[i]->type)),
                         c.e.args[i]->pos);
    } else if (t.id == TypeId::kText) {
      t.max_len = 0;
    }
  }
  if (t.id == TypeId::kNull) t = {TypeId::kText};
  for (size_t i = 0; i < args.size(); i++) {
    ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), c.unt[i], t, c.e.args[i]->pos));
  }
  out->func = n == "coalesce" ? Func::kCoalesce : n == "greatest" ? Func::kGreatest : Func::kLeast;
  out->type = t;
  return Status::OK();
}

Status ExprBinder::BindNullIf(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  RETURN_NOT_OK(Unify(&args[0], c.unt[0], &args[1], c.unt[1], c.e.pos, "="));
  // The result is the first argument of the implied `=`, promoted to the common type:
  // NULLIF(1, 2.5) is numeric, as in PostgreSQL.
  if (args[0]->type.IsNumeric() && args[1]->type.IsNumeric()) {
    SqlType common = NumericUnion(args[0]->type, args[1]->type);
    if (common.id != args[0]->type.id) {
      ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), false, common, c.e.pos));
    }
  }
  out->func = Func::kNullIf;
  out->type = args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kText} : args[0]->type;
  return Status::OK();
}

Status ExprBinder::BindTruthTest(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  if (c.unt[0]) {
    ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, {TypeId::kBool}, c.e.pos));
  }
  if (args[0]->type.id != TypeId::kBool && args[0]->type.id != TypeId::kNull) {
    return Status::Sql(sqlstate::kDatatypeMismatch,
                       fmt::format("argument of IS TRUE must be type boolean, not type {}",
                                   TypeName(args[0]->type)),
                       c.e.pos);
  }
  out->func = c.e.name == "__is_true" ? Func::kIsTrue : Func::kIsFalse;
  out->type = {TypeId::kBool};
  return Status::OK();
}

// x op ANY|ALL (array)
Status ExprBinder::BindAnyAll(CallArgs& c, BoundExpr* out) {
  const Expr& e = c.e;
  auto& args = c.args;
  if (c.unt[1]) {
    SqlType elem =
        c.unt[0] || args[0]->type.id == TypeId::kNull ? SqlType{TypeId::kText} : args[0]->type;
    ASSIGN_OR_RETURN(args[1], Coerce(std::move(args[1]), true, SqlType::Array(elem.id), e.pos));
  }
  if (args[1]->type.id != TypeId::kArray && args[1]->type.id != TypeId::kNull) {
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("op ANY/ALL (array) requires array on right side"), e.pos);
  }
  SqlType elem =
      args[1]->type.id == TypeId::kArray ? args[1]->type.element() : SqlType{TypeId::kText};
  if (c.unt[0]) {
    ASSIGN_OR_RETURN(args[0], Coerce(std::move(args[0]), true, elem, e.pos));
  }
  args[0] = CharAsText(std::move(args[0]));
  bool comparable = args[0]->type.id == elem.id || args[0]->type.id == TypeId::kNull ||
                    (args[0]->type.IsNumeric() && elem.IsNumeric());
  static const std::map<std::string, BinOp> kCmp = {{"=", BinOp::kEq}, {"<>", BinOp::kNe},
                                                    {"<", BinOp::kLt}, {"<=", BinOp::kLe},
                                                    {">", BinOp::kGt}, {">=", BinOp::kGe}};
  auto op = kCmp.find(e.op);
  if (!comparable || op == kCmp.end()) {
    return Status::Sql(sqlstate::kUndefinedFunction,
                       fmt::format("operator does not exist: {} {} {}", TypeName(args[0]->type),
                                   e.op, TypeName(elem)),
                       e.pos);
  }
  out->func = Func::kAny;
  out->op = op->second;
  out->negated = e.name == "__all";
  out->type = {TypeId::kBool};
  return Status::OK();
}

// ARRAY[...]: the elements' common type (untyped literals become text when nothing else says).
Status ExprBinder::BindArrayCtor(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  SqlType t{TypeId::kNull};
  for (size_t i = 0; i < args.size(); i++) {
    if (c.unt[i] || args[i]->type.id == TypeId::kNull) continue;
    SqlType at = args[i]->type.IsFixedChar() ? SqlType{TypeId::kText} : args[i]->type;
    if (t.id == TypeId::kNull) {
      t = at;
    } else if (t.IsNumeric() && at.IsNumeric()) {
      t = NumericUnion(t, at);
    } else if (t.id != at.id) {
      return Status::Sql(
          sqlstate::kDatatypeMismatch,
          fmt::format("ARRAY types {} and {} cannot be matched", TypeName(t), TypeName(at)),
          c.e.pos);
    }
  }
  if (t.id == TypeId::kNull) t = {TypeId::kText};
  if (t.id == TypeId::kArray)
    return Status::Sql(sqlstate::kFeatureNotSupported, "multidimensional arrays are not supported",
                       c.e.pos);
  for (size_t i = 0; i < args.size(); i++) {
    args[i] = CharAsText(std::move(args[i]));
    if (args[i]->type != t) {
      ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), c.unt[i], t, c.e.pos));
    }
  }
  out->func = Func::kMakeArray;
  out->type = SqlType::Array(t.id);
  return Status::OK();
}

Status ExprBinder::BindSubscript(CallArgs& c, BoundExpr* out) {
  auto& args = c.args;
  if (args[0]->type.id != TypeId::kArray) {
    return Status::Sql(
        sqlstate::kDatatypeMismatch,
        fmt::format("cannot subscript type {} because it does not support subscripting",
                    TypeName(args[0]->type)),
        c.e.pos);
  }
  if (c.unt[1]) {
    ASSIGN_OR_RETURN(args[1], Coerce(std::move(args[1]), true, {TypeId::kInt32}, c.e.pos));
  }
  if (!args[1]->type.IsInteger() && args[1]->type.id != TypeId::kNull) {
    return Status::Sql(sqlstate::kDatatypeMismatch, "array subscript must have type integer",
                       c.e.pos);
  }
  out->func = Func::kSubscript;
  out->type = args[0]->type.element();
  return Status::OK();
}

Status ExprBinder::BindArrayFunc(CallArgs& c, BoundExpr* out) {
  const std::string& n = c.e.name;
  if (c.args[0]->type.id != TypeId::kArray && c.args[0]->type.id != TypeId::kNull)
    return c.NoSuchFunction();
  out->func = n == "array_to_string" ? Func::kArrayToString : Func::kArrayUpper;
  out->type = {n == "array_to_string" ? TypeId::kText : TypeId::kInt32};
  return Status::OK();
}

Status ExprBinder::BindConcat(CallArgs& c, BoundExpr* out) {
  const std::string& n = c.e.name;
  auto& args = c.args;
  if (args.empty() || (n == "concat_ws" && args.size() < 2)) return c.NoSuchFunction();
  for (size_t i = 0; i < args.size(); i++) {
    args[i] = CharAsText(std::move(args[i]));
    if (c.unt[i]) {
      ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), true, {TypeId::kText}, c.e.pos));
    }
  }
  if (n == "concat_ws" && args[0]->type.id != TypeId::kText && args[0]->type.id != TypeId::kNull)
    return c.NoSuchFunction();
  out->func = Func::kBuiltin;
  out->value = Value::Text(n);
  out->type = {TypeId::kText};
  return Status::OK();
}

// The functions of query/plan/builtins.h and those the catalog answers.
Status ExprBinder::BindLibraryFunc(CallArgs& c, BoundExpr* out) {
  const std::string& n = c.e.name;
  auto& args = c.args;
  std::vector<SqlType> types;
  types.reserve(args.size());
  for (const auto& a : args) types.push_back(a->type);
  if (auto bi = ResolveBuiltin(n, types, c.unt)) {
    for (size_t i = 0; i < args.size(); i++) {
      args[i] = CharAsText(std::move(args[i]));
      if (args[i]->type.id != bi->params[i].id) {
        ASSIGN_OR_RETURN(args[i], Coerce(std::move(args[i]), c.unt[i], bi->params[i], c.e.pos));
      }
    }
    out->func = Func::kBuiltin;
    out->value = Value::Text(n);
    out->type = bi->result;
    return Status::OK();
  }
  if (auto cat = CatalogFunctionType(n, args.size())) {
    out->func = Func::kCatalog;
    out->value = Value::Text(n);
    out->type = *cat;
    return Status::OK();
  }
  return c.NoSuchFunction();
}

Result<BoundExprPtr> ExprBinder::BindFunc(const Expr& e, bool* untyped) {
  const std::string& n = e.name;
  if (IsAggregateName(n)) {
    if (!agg_mode()) {
      return Status::Sql(sqlstate::kGroupingError,
                         fmt::format("aggregate functions are not allowed in {}", agg_context_),
                         e.pos);
    }
    return BindAggregate(e);
  }
  if (e.distinct || e.star_arg) {
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("{} is not an aggregate function", n), e.pos);
  }
  if (e.args.empty()) {
    if (auto v = BindNiladic(e)) return std::move(*v);
  }
  CallArgs c{e, {}, {}};
  for (const auto& a : e.args) {
    bool u;
    ASSIGN_OR_RETURN(BoundExprPtr b, Bind(*a, &u));
    c.args.push_back(std::move(b));
    c.unt.push_back(u);
  }
  // The functions bound here rather than looked up in builtins.h: their result type follows
  // their arguments' types. A name called with another number of arguments falls through to
  // the library.
  using BindFn = Status (ExprBinder::*)(CallArgs&, BoundExpr*);
  struct Family {
    size_t min_args, max_args;
    BindFn bind;
  };
  constexpr size_t kAny = SIZE_MAX;
  static const std::map<std::string, Family> kFamilies = {
      {"abs", {1, 1, &ExprBinder::BindAbs}},
      {"round", {1, 2, &ExprBinder::BindRound}},
      {"lower", {1, 1, &ExprBinder::BindCaseOrLength}},
      {"upper", {1, 1, &ExprBinder::BindCaseOrLength}},
      {"length", {1, 1, &ExprBinder::BindCaseOrLength}},
      {"char_length", {1, 1, &ExprBinder::BindCaseOrLength}},
      {"character_length", {1, 1, &ExprBinder::BindCaseOrLength}},
      {"coalesce", {1, kAny, &ExprBinder::BindCommonType}},
      {"greatest", {1, kAny, &ExprBinder::BindCommonType}},
      {"least", {1, kAny, &ExprBinder::BindCommonType}},
      {"nullif", {2, 2, &ExprBinder::BindNullIf}},
      {"__is_true", {1, 1, &ExprBinder::BindTruthTest}},
      {"__is_false", {1, 1, &ExprBinder::BindTruthTest}},
      {"__any", {2, 2, &ExprBinder::BindAnyAll}},
      {"__all", {2, 2, &ExprBinder::BindAnyAll}},
      {"__array", {0, kAny, &ExprBinder::BindArrayCtor}},
      {"__subscript", {2, 2, &ExprBinder::BindSubscript}},
      {"array_to_string", {2, 2, &ExprBinder::BindArrayFunc}},
      {"array_upper", {2, 2, &ExprBinder::BindArrayFunc}},
      {"concat", {0, kAny, &ExprBinder::BindConcat}},
      {"concat_ws", {0, kAny, &ExprBinder::BindConcat}},
  };
  auto out = std::make_unique<BoundExpr>();
  out->kind = BoundExpr::Kind::kFunc;
  auto fam = kFamilies.find(n);
  size_t nargs = c.args.size();
  if (fam != kFamilies.end() && nargs >= fam->second.min_args && nargs <= fam->second.max_args) {
    RETURN_NOT_OK((this->*fam->second.bind)(c, out.get()));
  } else if (n == "regclass" && nargs == 1 && (c.unt[0] || c.args[0]->type.id == TypeId::kText)) {
    // 'name'::regclass: the relation's oid (for comparisons with oid columns).
    out->func = Func::kCatalog;
    out->value = Value::Text("regclass_in");
    out->type = {TypeId::kInt64};
  } else {
    RETURN_NOT_OK(BindLibraryFunc(c, out.get()));
  }
  out->children = std::move(c.args);
  if (untyped) *untyped = false;
  return out;
}

}  // namespace wattdb::plan
