#include "query/exec/eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "common/sqlstate.h"
#include "common/stack_guard.h"
#include "query/exec/pattern.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "query/exec/arith.h"
#include "query/exec/builtins.h"
#include "query/exec/operator.h"

namespace wattdb::exec {

using plan::BinOp;
using plan::BoundExpr;
using plan::Func;

namespace {

Result<Value> MakeInt(__int128 v, const SqlType& t) {
  if (!IntFits(v, t.id)) return ArithStatus(ArithError::kOutOfRange, t.id);
  return t.id == TypeId::kInt32 ? Value::Int32(static_cast<int64_t>(v))
                                : Value::Int64(static_cast<int64_t>(v));
}

Result<Value> Arith(BinOp op, const Value& a, const Value& b, const SqlType& t) {
  if (a.is_null() || b.is_null()) return Value();
  if (!IsArith(op)) return Status::Internal("bad arithmetic operator");
  if (t.id == TypeId::kDouble) {
    double z = 0;
    ArithError err = ArithDouble(op, a.ToDouble(), b.ToDouble(), &z);
    if (err != ArithError::kNone) return ArithStatus(err, t.id);
    return Value::Double(z);
  }
  if (t.id == TypeId::kNumeric) {
    ASSIGN_OR_RETURN(Decimal z, ArithDecimal(op, a.ToDecimal(), b.ToDecimal()));
    return Value::Numeric(z);
  }
  __int128 z = 0;
  ArithError err = ArithInt(op, a.as_int(), b.as_int(), &z);
  if (err != ArithError::kNone) return ArithStatus(err, t.id);
  return MakeInt(z, t);
}

// Three-valued comparison result: NULL if either side is NULL.
Value Compare(BinOp op, const Value& a, const Value& b) {
  if (a.is_null() || b.is_null()) return Value();
  int c = a.Compare(b);
  bool r = false;
  switch (op) {
    case BinOp::kEq:
      r = c == 0;
      break;
    case BinOp::kNe:
      r = c != 0;
      break;
    case BinOp::kLt:
      r = c < 0;
      break;
    case BinOp::kLe:
      r = c <= 0;
      break;
    case BinOp::kGt:
      r = c > 0;
      break;
    case BinOp::kGe:
      r = c >= 0;
      break;
    default:
      break;
  }
  return Value::Bool(r);
}

}  // namespace

namespace {

// Runs `e.subplan` to completion, calling `fn` for each row's first column; fn returns false
// to stop early. The current row of the enclosing query is visible to outer-column references.
Status RunSubplan(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx,
                  const std::function<Result<bool>(const Value&)>& fn) {
  ASSIGN_OR_RETURN(std::unique_ptr<Operator> op, BuildOperator(*e.subplan));
  if (e.correlated) ctx->outer.push_back(b.Row(row));
  Status st = op->Open(*ctx);
  Batch out;
  while (st.ok()) {
    auto more = op->Next(out);
    if (!more.ok()) {
      st = more.status();
      break;
    }
    if (!*more) break;
    bool go_on = true;
    for (size_t r = 0; r < out.rows && go_on; r++) {
      auto g = fn(out.cols.empty() ? Value() : out.cols[0].GetValue(r));
      if (!g.ok()) {
        st = g.status();
        break;
      }
      go_on = *g;
    }
    if (!go_on) break;
  }
  op->Close();
  if (e.correlated) ctx->outer.pop_back();
  return st;
}

Result<SubqueryResult> RunSubquery(const BoundExpr& e, const Batch& b, size_t row,
                                   ExecContext* ctx) {
  SubqueryResult res;
  size_t rows = 0;
  RETURN_NOT_OK(RunSubplan(e, b, row, ctx, [&](const Value& v) -> Result<bool> {
    rows++;
    res.any = true;
    switch (e.kind) {
      case BoundExpr::Kind::kExists:
        return false;
      case BoundExpr::Kind::kArraySubquery:
        res.values.push_back(v);
        return true;
      case BoundExpr::Kind::kSubquery:
        if (rows > 1) {
          return Status::Sql(sqlstate::kCardinalityViolation,
                             "more than one row returned by a subquery used as an expression");
        }
        res.scalar = v;
        return true;
      default:
        if (v.is_null()) {
          res.has_null = true;
        } else {
          res.values.push_back(v);
        }
        return true;
    }
  }));
  if (e.kind == BoundExpr::Kind::kInSubquery) {
    auto less = [](const Value& a, const Value& c) { return a.Compare(c) < 0; };
    std::sort(res.values.begin(), res.values.end(), less);
    res.values.erase(std::unique(res.values.begin(), res.values.end(),
                                 [](const Value& a, const Value& c) { return a.Compare(c) == 0; }),
                     res.values.end());
  }
  return res;
}

Result<Value> EvalSubquery(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx) {
  if (!ctx) return Status::Internal("subquery evaluated without an execution context");
  SubqueryResult local;
  const SubqueryResult* res;
  if (e.correlated) {
    ASSIGN_OR_RETURN(local, RunSubquery(e, b, row, ctx));
    res = &local;
  } else {
    auto it = ctx->subqueries.find(&e);
    if (it == ctx->subqueries.end()) {
      ASSIGN_OR_RETURN(SubqueryResult r, RunSubquery(e, b, row, ctx));
      it = ctx->subqueries.emplace(&e, std::move(r)).first;
    }
    res = &it->second;
  }
  switch (e.kind) {
    case BoundExpr::Kind::kExists:
      return Value::Bool(res->any);
    case BoundExpr::Kind::kSubquery:
      return res->scalar.CastTo(e.type);
    case BoundExpr::Kind::kArraySubquery:
      return Value::Array(res->values);
    default:
      break;
  }
  // x IN (rows): true if some row equals x; else NULL if x or some row is NULL; else false.
  if (!res->any) return Value::Bool(e.negated);
  ASSIGN_OR_RETURN(Value x, Eval(*e.children[0], b, row, ctx));
  if (x.is_null()) return Value();
  bool found = std::binary_search(res->values.begin(), res->values.end(), x,
                                  [](const Value& a, const Value& c) { return a.Compare(c) < 0; });
  if (found) return Value::Bool(!e.negated);
  if (res->has_null) return Value();
  return Value::Bool(e.negated);
}

}  // namespace

Result<Value> ParamValue(const BoundExpr& e, const ExecContext* ctx) {
  if (e.column == plan::kTimeParam && ctx && ctx->statement_time)
    return Value::Timestamp(*ctx->statement_time);
  if (!ctx || !ctx->params || e.column < 0 ||
      static_cast<size_t>(e.column) >= ctx->params->size()) {
    return Status::Sql(sqlstate::kProtocolViolation,
                       fmt::format("no value bound for parameter ${}", e.column + 1));
  }
  return (*ctx->params)[e.column];
}

namespace {

Result<Value> EvalBinary(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx) {
  if (e.op == BinOp::kAnd || e.op == BinOp::kOr) {
    ASSIGN_OR_RETURN(Value l, Eval(*e.children[0], b, row, ctx));
    bool is_and = e.op == BinOp::kAnd;
    if (!l.is_null() && l.as_bool() != is_and) return Value::Bool(!is_and);  // short circuit
    ASSIGN_OR_RETURN(Value r, Eval(*e.children[1], b, row, ctx));
    if (!r.is_null() && r.as_bool() != is_and) return Value::Bool(!is_and);
    if (l.is_null() || r.is_null()) return Value();
    return Value::Bool(is_and);
  }
  ASSIGN_OR_RETURN(Value l, Eval(*e.children[0], b, row, ctx));
  ASSIGN_OR_RETURN(Value r, Eval(*e.children[1], b, row, ctx));
  if (e.op == BinOp::kConcat && e.type.id == TypeId::kArray) {
    if (l.is_null()) return r;
    if (r.is_null()) return l;
    std::vector<Value> out = l.as_array();
    out.insert(out.end(), r.as_array().begin(), r.as_array().end());
    return Value::Array(std::move(out));
  }
  if (e.op == BinOp::kConcat) {
    if (l.is_null() || r.is_null()) return Value();
    return Value::Text(l.ToText() + r.ToText());
  }
  if (e.op >= BinOp::kEq) return Compare(e.op, l, r);
  return Arith(e.op, l, r, e.type);
}

Result<Value> Abs(const Value& v, const SqlType& type) {
  if (v.is_null()) return Value();
  if (v.type() == TypeId::kDouble) return Value::Double(std::fabs(v.as_double()));
  if (v.type() == TypeId::kNumeric) {
    Decimal d = v.as_decimal();
    if (d.v < 0) d.v = -d.v;
    return Value::Numeric(d);
  }
  return MakeInt(v.as_int() < 0 ? -static_cast<__int128>(v.as_int()) : v.as_int(), type);
}

Result<Value> Round(const std::vector<Value>& args) {
  if (args[0].is_null() || (args.size() > 1 && args[1].is_null())) return Value();
  if (args[0].type() == TypeId::kNumeric) {
    int digits =
        args.size() > 1 ? static_cast<int>(std::clamp<int64_t>(args[1].as_int(), -100, 100)) : 0;
    ASSIGN_OR_RETURN(Decimal r, RoundDecimal(args[0].as_decimal(), digits));
    return Value::Numeric(r);
  }
  double scale = std::pow(10.0, args.size() > 1 ? static_cast<double>(args[1].as_int()) : 0.0);
  return Value::Double(std::nearbyint(args[0].ToDouble() * scale) / scale);
}

// x op ANY (array): true if some element satisfies it, else NULL if some element or x is
// NULL, else false. ALL (`all`): the dual.
Value AnyAll(BinOp op, bool all, const Value& x, const Value& array) {
  if (array.is_null()) return Value();
  bool saw_null = false;
  for (const auto& el : array.as_array()) {
    Value c = Compare(op, x, el);
    if (c.is_null()) {
      saw_null = true;
    } else if (c.as_bool() != all) {
      return Value::Bool(!all);
    }
  }
  if (saw_null) return Value();
  return Value::Bool(all);
}

Value Subscript(const Value& array, const Value& index) {
  if (array.is_null() || index.is_null()) return Value();
  const auto& a = array.as_array();
  int64_t i = index.as_int();
  if (i < 1 || i > static_cast<int64_t>(a.size())) return Value();
  return a[i - 1];
}

Value ArrayToString(const Value& array, const Value& sep) {
  if (array.is_null() || sep.is_null()) return Value();
  std::string out;
  bool first = true;
  for (const auto& el : array.as_array()) {
    if (el.is_null()) continue;
    if (!first) out += sep.ToText();
    out += el.ToText();
    first = false;
  }
  return Value::Text(std::move(out));
}

Value ArrayUpper(const Value& array, const Value& dim) {
  if (array.is_null() || dim.is_null() || dim.as_int() != 1 || array.as_array().empty())
    return Value();
  return Value::Int32(static_cast<int64_t>(array.as_array().size()));
}

Value CaseFold(const Value& v, bool lower) {
  if (v.is_null()) return Value();
  std::string s = v.ToText();
  for (auto& c : s) {
    c = static_cast<char>(lower ? std::tolower(static_cast<unsigned char>(c))
                                : std::toupper(static_cast<unsigned char>(c)));
  }
  return Value::Text(std::move(s));
}

Value BpcharText(const Value& v) {
  if (v.is_null()) return Value();
  std::string s = v.as_text();
  s.erase(s.find_last_not_of(' ') + 1);
  return Value::Text(std::move(s));
}

Result<Value> GreatestLeast(const std::vector<Value>& args, bool greatest, const SqlType& type) {
  Value best;
  for (const auto& v : args) {
    if (v.is_null()) continue;
    if (best.is_null() || (greatest ? v.Compare(best) > 0 : v.Compare(best) < 0)) best = v;
  }
  return best.CastTo(type);
}

// A function other than COALESCE, on its evaluated arguments.
Result<Value> ApplyFunc(const BoundExpr& e, std::vector<Value> args, ExecContext* ctx) {
  switch (e.func) {
    case Func::kCoalesce:
      break;
    case Func::kAbs:
      return Abs(args[0], e.type);
    case Func::kRound:
      return Round(args);
    case Func::kRegex: {
      if (args[0].is_null() || args[1].is_null()) return Value();
      ASSIGN_OR_RETURN(bool m, RegexMatch(args[0].ToText(), args[1].ToText(), e.case_insensitive));
      return Value::Bool(m != e.negated);
    }
    case Func::kAny:
      return AnyAll(e.op, e.negated, args[0], args[1]);
    case Func::kSubscript:
      return Subscript(args[0], args[1]);
    case Func::kArrayToString:
      return ArrayToString(args[0], args[1]);
    case Func::kMakeArray:
      return Value::Array(std::move(args));
    case Func::kBuiltin:
      return CallBuiltin(e.value.ToText(), args);
    case Func::kArrayUpper:
      return ArrayUpper(args[0], args[1]);
    case Func::kCatalog: {
      if (!ctx || !ctx->scans) return Status::Internal("catalog function without a scan provider");
      ASSIGN_OR_RETURN(Value v, ctx->scans->CallCatalog(e.value.ToText(), args));
      return v.CastTo(e.type);
    }
    case Func::kLower:
    case Func::kUpper:
      return CaseFold(args[0], e.func == Func::kLower);
    case Func::kLength:
      if (args[0].is_null()) return Value();
      return Value::Int32(Utf8Chars(args[0].ToText()));
    case Func::kNullIf: {
      Value eq = Compare(BinOp::kEq, args[0], args[1]);
      if (!eq.is_null() && eq.as_bool()) return Value();
      return args[0];
    }
    case Func::kBpcharText:
      return BpcharText(args[0]);
    case Func::kIsTrue:
      return Value::Bool(!args[0].is_null() && args[0].as_bool());
    case Func::kIsFalse:
      return Value::Bool(!args[0].is_null() && !args[0].as_bool());
    case Func::kGreatest:
    case Func::kLeast:
      return GreatestLeast(args, e.func == Func::kGreatest, e.type);
  }
  return Status::Internal("unknown function");
}

Result<Value> EvalFunc(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx) {
  if (e.func == Func::kCoalesce) {  // evaluates its arguments up to the first non-NULL
    for (const auto& c : e.children) {
      ASSIGN_OR_RETURN(Value v, Eval(*c, b, row, ctx));
      if (!v.is_null()) return v.CastTo(e.type);
    }
    return Value();
  }
  std::vector<Value> args;
  args.reserve(e.children.size());
  for (const auto& c : e.children) {
    ASSIGN_OR_RETURN(Value v, Eval(*c, b, row, ctx));
    args.push_back(std::move(v));
  }
  return ApplyFunc(e, std::move(args), ctx);
}

Result<Value> EvalInList(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx) {
  ASSIGN_OR_RETURN(Value x, Eval(*e.children[0], b, row, ctx));
  if (x.is_null()) return Value();
  bool saw_null = false;
  for (size_t i = 1; i < e.children.size(); i++) {
    ASSIGN_OR_RETURN(Value v, Eval(*e.children[i], b, row, ctx));
    if (v.is_null()) {
      saw_null = true;
      continue;
    }
    if (x.Compare(v) == 0) return Value::Bool(!e.negated);
  }
  if (saw_null) return Value();
  return Value::Bool(e.negated);
}

Result<Value> OuterColumn(const BoundExpr& e, const ExecContext* ctx) {
  if (!ctx || e.depth < 1 || static_cast<size_t>(e.depth) > ctx->outer.size()) {
    return Status::Internal("outer column reference without an enclosing row");
  }
  const auto& outer = ctx->outer[ctx->outer.size() - e.depth];
  if (e.column < 0 || static_cast<size_t>(e.column) >= outer.size()) {
    return Status::Internal("outer column reference out of range");
  }
  return outer[e.column];
}

}  // namespace

Result<Value> Eval(const BoundExpr& e, const Batch& b, size_t row, ExecContext* ctx) {
  CHECK_STACK_DEPTH();
  switch (e.kind) {
    case BoundExpr::Kind::kConst:
      return e.value;
    case BoundExpr::Kind::kColumn:
      if (e.column < 0 || static_cast<size_t>(e.column) >= b.cols.size()) {
        return Status::Internal("column reference out of range");
      }
      return b.cols[e.column].GetValue(row);
    case BoundExpr::Kind::kNeg: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], b, row, ctx));
      if (v.is_null()) return v;
      if (v.type() == TypeId::kDouble) return Value::Double(-v.as_double());
      if (v.type() == TypeId::kNumeric)
        return Value::Numeric(Decimal{-v.as_decimal().v, v.as_decimal().scale});
      return MakeInt(-static_cast<__int128>(v.as_int()), e.type);
    }
    case BoundExpr::Kind::kNot: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], b, row, ctx));
      if (v.is_null()) return v;
      return Value::Bool(!v.as_bool());
    }
    case BoundExpr::Kind::kBinary:
      return EvalBinary(e, b, row, ctx);
    case BoundExpr::Kind::kFunc:
      return EvalFunc(e, b, row, ctx);
    case BoundExpr::Kind::kIsNull: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], b, row, ctx));
      return Value::Bool(v.is_null() != e.negated);
    }
    case BoundExpr::Kind::kInList:
      return EvalInList(e, b, row, ctx);
    case BoundExpr::Kind::kLike: {
      ASSIGN_OR_RETURN(Value s, Eval(*e.children[0], b, row, ctx));
      ASSIGN_OR_RETURN(Value p, Eval(*e.children[1], b, row, ctx));
      if (s.is_null() || p.is_null()) return Value();
      ASSIGN_OR_RETURN(bool m, LikeMatch(s.as_text(), p.as_text(), e.case_insensitive));
      return Value::Bool(m != e.negated);
    }
    case BoundExpr::Kind::kCase: {
      size_t pairs = (e.children.size() - (e.has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; i++) {
        ASSIGN_OR_RETURN(Value c, Eval(*e.children[2 * i], b, row, ctx));
        if (!c.is_null() && c.as_bool()) return Eval(*e.children[2 * i + 1], b, row, ctx);
      }
      if (e.has_else) return Eval(*e.children.back(), b, row, ctx);
      return Value();
    }
    case BoundExpr::Kind::kCast: {
      ASSIGN_OR_RETURN(Value v, Eval(*e.children[0], b, row, ctx));
      return v.CastTo(e.type);
    }
    case BoundExpr::Kind::kParam:
      return ParamValue(e, ctx);
    case BoundExpr::Kind::kOuterColumn:
      return OuterColumn(e, ctx);
    case BoundExpr::Kind::kSubquery:
    case BoundExpr::Kind::kExists:
    case BoundExpr::Kind::kInSubquery:
    case BoundExpr::Kind::kArraySubquery:
      return EvalSubquery(e, b, row, ctx);
  }
  return Status::Internal("unknown expression kind");
}

int64_t Utf8Chars(std::string_view s) {
  // A continuation byte is 10xxxxxx: bit 7 set, bit 6 clear; as a signed byte, below -64.
  size_t cont = 0, i = 0;
#if defined(__SSE2__)
  const __m128i below = _mm_set1_epi8(-64);
  while (i + 16 <= s.size()) {
    // Per-byte counters, summed before any can pass 255.
    __m128i acc = _mm_setzero_si128();
    size_t stop = std::min(s.size() - 15, i + 255 * 16);
    for (; i < stop; i += 16) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
      acc = _mm_sub_epi8(acc, _mm_cmplt_epi8(v, below));  // a match is -1
    }
    __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
    cont += static_cast<size_t>(_mm_cvtsi128_si64(sums)) +
            static_cast<size_t>(_mm_extract_epi16(sums, 4));
  }
#endif
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    // At most one bit per byte: moved to each byte's bit 0, a multiply sums the bytes into
    // the top one (std::popcount is a libgcc call on the baseline x86-64 this builds for).
    uint64_t marks = (w & ~(w << 1) & kHigh) >> 7;
    cont += (marks * 0x0101010101010101ULL) >> 56;
  }
  for (; i < s.size(); i++) cont += (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80;
  return static_cast<int64_t>(s.size() - cont);
}

Result<Value> EvalConst(const BoundExpr& e) {
  Batch empty;
  empty.rows = 1;
  return Eval(e, empty, 0);
}

}  // namespace wattdb::exec
