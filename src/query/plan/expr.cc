#include "query/plan/expr.h"

#include "common/codec.h"
#include "query/plan/plan.h"

namespace wattdb::plan {

namespace {

const char* BinOpName(BinOp op) {
  static const char* kNames[] = {"+",  "-", "*",  "/", "%",  "||",  "=",
                                 "<>", "<", "<=", ">", ">=", "AND", "OR"};
  return kNames[static_cast<int>(op)];
}

const char* FuncName(Func f) {
  static const char* kNames[] = {
      "abs",       "lower",           "upper",       "length",  "coalesce", "nullif", "is_true",
      "is_false",  "round",           "greatest",    "least",   "text",     "regex",  "any",
      "subscript", "array_to_string", "array_upper", "catalog", "array",    "builtin"};
  return kNames[static_cast<int>(f)];
}

constexpr int kMaxDepth = 200;

}  // namespace

BoundExprPtr MakeConst(Value v, SqlType t) {
  auto e = std::make_unique<BoundExpr>();
  e->kind = BoundExpr::Kind::kConst;
  e->value = std::move(v);
  e->type = t;
  return e;
}

namespace {

// An expression that reads slot `index` of its kind (a column of the row, or a parameter).
BoundExprPtr MakeSlot(BoundExpr::Kind kind, int index, SqlType t) {
  auto e = std::make_unique<BoundExpr>();
  e->kind = kind;
  e->column = index;
  e->type = t;
  return e;
}

}  // namespace

BoundExprPtr MakeColumn(int index, SqlType t) {
  return MakeSlot(BoundExpr::Kind::kColumn, index, t);
}

BoundExprPtr MakeParam(int index, SqlType t) { return MakeSlot(BoundExpr::Kind::kParam, index, t); }

BoundExprPtr MakeBinary(BinOp op, BoundExprPtr a, BoundExprPtr b, SqlType t) {
  auto e = std::make_unique<BoundExpr>();
  e->kind = BoundExpr::Kind::kBinary;
  e->op = op;
  e->type = t;
  e->children.push_back(std::move(a));
  e->children.push_back(std::move(b));
  return e;
}

BoundExprPtr BoundExpr::Clone() const {
  auto e = std::make_unique<BoundExpr>();
  e->kind = kind;
  e->type = type;
  e->value = value;
  e->column = column;
  e->op = op;
  e->func = func;
  e->negated = negated;
  e->case_insensitive = case_insensitive;
  e->has_else = has_else;
  e->depth = depth;
  e->correlated = correlated;
  e->subplan = subplan;
  for (const auto& c : children) e->children.push_back(c->Clone());
  return e;
}

bool BoundExpr::HasSubquery() const {
  if (subplan) return true;
  for (const auto& c : children) {
    if (c->HasSubquery()) return true;
  }
  return false;
}

std::string BoundExpr::PlanId() const {
  // Distinct subplans must not print alike (GROUP BY matching compares printed expressions).
  return fmt::format("{:x}", reinterpret_cast<uintptr_t>(subplan.get()) & 0xffffff);
}

std::string BoundExpr::ToString() const {
  auto child = [&](size_t i) { return children[i]->ToString(); };
  switch (kind) {
    case Kind::kConst:
      if (value.is_null()) return "NULL";
      return value.type() == TypeId::kText ? "'" + value.as_text() + "'" : value.ToText();
    case Kind::kColumn:
      return fmt::format("#{}", column);
    case Kind::kNeg:
      return "(-" + child(0) + ")";
    case Kind::kNot:
      return "(NOT " + child(0) + ")";
    case Kind::kBinary:
      return fmt::format("({} {} {})", child(0), BinOpName(op), child(1));
    case Kind::kFunc: {
      bool named = func == Func::kCatalog || func == Func::kBuiltin;
      std::string s = (named ? value.ToText() : std::string(FuncName(func))) + "(";
      for (size_t i = 0; i < children.size(); i++) s += (i ? ", " : "") + child(i);
      return s + ")";
    }
    case Kind::kIsNull:
      return fmt::format("({} IS {}NULL)", child(0), negated ? "NOT " : "");
    case Kind::kInList: {
      std::string s = fmt::format("({} {}IN (", child(0), negated ? "NOT " : "");
      for (size_t i = 1; i < children.size(); i++) s += (i > 1 ? ", " : "") + child(i);
      return s + "))";
    }
    case Kind::kLike:
      return fmt::format("({} {}{} {})", child(0), negated ? "NOT " : "",
                         case_insensitive ? "ILIKE" : "LIKE", child(1));
    case Kind::kCase: {
      std::string s = "CASE";
      size_t pairs = (children.size() - (has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; i++) s += " WHEN " + child(2 * i) + " THEN " + child(2 * i + 1);
      if (has_else) s += " ELSE " + children.back()->ToString();
      return s + " END";
    }
    case Kind::kCast:
      return fmt::format("({})::{}", child(0), type.ToString());
    case Kind::kParam:
      return column == kTimeParam ? std::string("now()") : fmt::format("${}", column + 1);
    case Kind::kOuterColumn:
      return fmt::format("outer{}#{}", depth, column);
    case Kind::kSubquery:
      return "(SubPlan " + PlanId() + ")";
    case Kind::kExists:
      return "EXISTS(SubPlan " + PlanId() + ")";
    case Kind::kInSubquery:
      return fmt::format("({} {}IN (SubPlan {}))", child(0), negated ? "NOT " : "", PlanId());
    case Kind::kArraySubquery:
      return "ARRAY(SubPlan " + PlanId() + ")";
  }
  return "?";
}

void BoundExpr::Serialize(ByteWriter& w) const {
  w.U8(static_cast<uint8_t>(kind));
  w.U8(static_cast<uint8_t>(type.id));
  w.VarI64(type.max_len);
  std::string v;
  EncodeRow({value}, &v);
  w.Str(v);
  w.VarI64(column);
  w.U8(static_cast<uint8_t>(op));
  w.U8(static_cast<uint8_t>(func));
  w.U8((negated ? 1 : 0) | (case_insensitive ? 2 : 0) | (has_else ? 4 : 0) | (correlated ? 8 : 0) |
       (subplan ? 16 : 0));
  w.VarI64(depth);
  if (subplan) {
    std::string p;
    subplan->Serialize(&p);
    w.Str(p);
  }
  w.VarU64(children.size());
  for (const auto& c : children) c->Serialize(w);
}

Result<BoundExprPtr> BoundExpr::Deserialize(ByteReader& r, int depth) {
  auto bad = [] { return Status::Corruption("expression does not decode"); };
  if (depth > kMaxDepth) return bad();
  auto e = std::make_unique<BoundExpr>();
  uint8_t kind, tid, op, func, flags;
  int64_t max_len, column, outer_depth;
  std::string_view v;
  uint64_t n;
  if (!r.U8(&kind) || kind > static_cast<uint8_t>(Kind::kArraySubquery) || !r.U8(&tid) ||
      tid > static_cast<uint8_t>(TypeId::kArray) || !r.VarI64(&max_len) || !r.Str(&v) ||
      !r.VarI64(&column) || !r.U8(&op) || op > static_cast<uint8_t>(BinOp::kOr) || !r.U8(&func) ||
      func > static_cast<uint8_t>(Func::kBuiltin) || !r.U8(&flags) || !r.VarI64(&outer_depth) ||
      outer_depth < 0 || outer_depth > kMaxDepth) {
    return bad();
  }
  if (flags & 16) {
    std::string_view p;
    if (!r.Str(&p)) return bad();
    ASSIGN_OR_RETURN(PlanPtr sub, PlanNode::Deserialize(p));
    e->subplan = std::move(sub);
  }
  if (!r.VarU64(&n) || n > 100000) return bad();
  e->kind = static_cast<Kind>(kind);
  e->type = SqlType{static_cast<TypeId>(tid), static_cast<int32_t>(max_len)};
  e->column = static_cast<int>(column);
  e->op = static_cast<BinOp>(op);
  e->func = static_cast<Func>(func);
  e->negated = flags & 1;
  e->case_insensitive = flags & 2;
  e->has_else = flags & 4;
  e->correlated = flags & 8;
  e->depth = static_cast<int>(outer_depth);
  std::vector<Value> row;
  if (!DecodeRow(v, &row).ok() || row.size() != 1) return bad();
  e->value = std::move(row[0]);
  for (uint64_t i = 0; i < n; i++) {
    ASSIGN_OR_RETURN(BoundExprPtr c, Deserialize(r, depth + 1));
    e->children.push_back(std::move(c));
  }
  return e;
}

}  // namespace wattdb::plan
