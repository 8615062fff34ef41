#include "query/exec/eval_vector.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "common/sqlstate.h"
#include "query/exec/arith.h"
#include "query/exec/eval.h"

namespace wattdb::exec {

using plan::BinOp;
using plan::BoundExpr;

namespace {

// One side of a binary operator: a constant or a vector.
struct Operand {
  const Vector* v = nullptr;
  Value c;     // when v is null
  Vector own;  // an evaluated child

  PhysType phys() const {
    return v ? v->phys() : c.is_null() ? PhysType::kEmpty : PhysOf(c.type());
  }
  TypeId type() const { return v ? v->value_type() : c.type(); }
  bool null(size_t i) const { return v ? v->IsNull(i) : c.is_null(); }
  int64_t i(size_t k) const { return v ? v->ints()[k] : c.as_int(); }
  double d(size_t k) const {
    if (!v) return c.ToDouble();
    switch (v->phys()) {
      case PhysType::kDouble:
        return v->doubles()[k];
      case PhysType::kDecimal:
        return DecimalToDouble(v->decimals()[k]);
      default:
        return static_cast<double>(v->ints()[k]);
    }
  }
  Decimal dec(size_t k) const {
    if (!v) return c.ToDecimal();
    return v->phys() == PhysType::kDecimal ? v->decimals()[k] : DecimalFromInt(v->ints()[k]);
  }
  std::string_view s(size_t k) const { return v ? v->texts()[k] : std::string_view(c.as_text()); }
  Value value(size_t k) const { return v ? v->GetValue(k) : c; }
};

Status Load(const BoundExpr& e, const Batch& b, ExecContext* ctx, Operand* o) {
  if (e.kind == BoundExpr::Kind::kConst) {
    o->c = e.value;
    return Status::OK();
  }
  if (e.kind == BoundExpr::Kind::kParam) {
    ASSIGN_OR_RETURN(o->c, ParamValue(e, ctx));
    return Status::OK();
  }
  if (e.kind == BoundExpr::Kind::kColumn && e.column >= 0 &&
      static_cast<size_t>(e.column) < b.cols.size()) {
    o->v = &b.cols[e.column];
    return Status::OK();
  }
  RETURN_NOT_OK(EvalVector(e, b, ctx, &o->own));
  o->v = &o->own;
  return Status::OK();
}

bool IsIntNumber(TypeId t) { return t == TypeId::kInt32 || t == TypeId::kInt64; }

// How two non-NULL operands compare, if a loop can do it (as Value::Compare would).
enum class CmpKind { kInt, kDouble, kDecimal, kText, kNone };
CmpKind CompareKind(const Operand& a, const Operand& b) {
  PhysType pa = a.phys(), pb = b.phys();
  if (pa == PhysType::kEmpty || pb == PhysType::kEmpty)
    return CmpKind::kInt;  // all NULL on one side
  bool na = pa == PhysType::kDouble || pa == PhysType::kDecimal ||
            (pa == PhysType::kInt && IsIntNumber(a.type()));
  bool nb = pb == PhysType::kDouble || pb == PhysType::kDecimal ||
            (pb == PhysType::kInt && IsIntNumber(b.type()));
  if (na && nb) {
    if (pa == PhysType::kDouble || pb == PhysType::kDouble) return CmpKind::kDouble;
    if (pa == PhysType::kDecimal || pb == PhysType::kDecimal) return CmpKind::kDecimal;
    return CmpKind::kInt;
  }
  if (pa == PhysType::kText && pb == PhysType::kText) return CmpKind::kText;
  if (pa == PhysType::kInt && pb == PhysType::kInt && a.type() == b.type()) return CmpKind::kInt;
  return CmpKind::kNone;
}

inline bool Holds(BinOp op, int c) {
  switch (op) {
    case BinOp::kEq:
      return c == 0;
    case BinOp::kNe:
      return c != 0;
    case BinOp::kLt:
      return c < 0;
    case BinOp::kLe:
      return c <= 0;
    case BinOp::kGt:
      return c > 0;
    default:
      return c >= 0;
  }
}

template <typename Get>
void CompareLoop(BinOp op, size_t n, const Operand& a, const Operand& b, Get cmp, Vector* out) {
  out->Init(TypeId::kBool, n);
  int64_t* r = out->mutable_ints();
  uint8_t* nul = out->mutable_nulls();
  for (size_t k = 0; k < n; k++) {
    if (a.null(k) || b.null(k)) {
      nul[k] = 1;
      continue;
    }
    r[k] = Holds(op, cmp(k));
  }
}

Status CompareVector(const BoundExpr& e, const Operand& a, const Operand& b, size_t n,
                     Vector* out) {
  auto three = [](auto x, auto y) { return x < y ? -1 : (x > y ? 1 : 0); };
  switch (CompareKind(a, b)) {
    case CmpKind::kInt:
      if (a.phys() == PhysType::kEmpty || b.phys() == PhysType::kEmpty) {
        CompareLoop(
            e.op, n, a, b, [](size_t) { return 0; }, out);
      } else {
        CompareLoop(
            e.op, n, a, b, [&](size_t k) { return three(a.i(k), b.i(k)); }, out);
      }
      return Status::OK();
    case CmpKind::kDouble:
      CompareLoop(
          e.op, n, a, b, [&](size_t k) { return CompareDoubles(a.d(k), b.d(k)); }, out);
      return Status::OK();
    case CmpKind::kDecimal:
      CompareLoop(
          e.op, n, a, b, [&](size_t k) { return CompareDecimal(a.dec(k), b.dec(k)); }, out);
      return Status::OK();
    case CmpKind::kText:
      CompareLoop(
          e.op, n, a, b, [&](size_t k) { return a.s(k).compare(b.s(k)); }, out);
      return Status::OK();
    case CmpKind::kNone:
      break;
  }
  CompareLoop(
      e.op, n, a, b, [&](size_t k) { return a.value(k).Compare(b.value(k)); }, out);
  return Status::OK();
}

// Arithmetic as Eval's Arith does it (query/exec/arith.h), a loop per result type. False if
// the operands are not plain numbers (the caller falls back to Eval).
Result<bool> ArithVector(const BoundExpr& e, const Operand& a, const Operand& b, size_t n,
                         Vector* out) {
  auto numeric = [](const Operand& o) {
    PhysType p = o.phys();
    return p == PhysType::kEmpty || p == PhysType::kDouble || p == PhysType::kDecimal ||
           (p == PhysType::kInt && IsIntNumber(o.type()));
  };
  if (!IsArith(e.op) || !numeric(a) || !numeric(b)) return false;
  TypeId t = e.type.id;
  if (t == TypeId::kInt32 || t == TypeId::kInt64) {
    if ((a.phys() != PhysType::kInt && a.phys() != PhysType::kEmpty) ||
        (b.phys() != PhysType::kInt && b.phys() != PhysType::kEmpty)) {
      return false;
    }
    out->Init(t, n);
    int64_t* r = out->mutable_ints();
    uint8_t* nul = out->mutable_nulls();
    for (size_t k = 0; k < n; k++) {
      if (a.null(k) || b.null(k)) {
        nul[k] = 1;
        continue;
      }
      __int128 z = 0;
      ArithError err = ArithInt(e.op, a.i(k), b.i(k), &z);
      if (err == ArithError::kNone && !IntFits(z, t)) err = ArithError::kOutOfRange;
      if (err != ArithError::kNone) return ArithStatus(err, t);
      r[k] = static_cast<int64_t>(z);
    }
    return true;
  }
  if (t == TypeId::kDouble) {
    out->Init(t, n);
    double* r = out->mutable_doubles();
    uint8_t* nul = out->mutable_nulls();
    for (size_t k = 0; k < n; k++) {
      if (a.null(k) || b.null(k)) {
        nul[k] = 1;
        continue;
      }
      ArithError err = ArithDouble(e.op, a.d(k), b.d(k), &r[k]);
      if (err != ArithError::kNone) return ArithStatus(err, t);
    }
    return true;
  }
  if (t == TypeId::kNumeric) {
    if (a.phys() == PhysType::kDouble || b.phys() == PhysType::kDouble) return false;
    out->Init(t, n);
    Decimal* r = out->mutable_decimals();
    uint8_t* nul = out->mutable_nulls();
    for (size_t k = 0; k < n; k++) {
      if (a.null(k) || b.null(k)) {
        nul[k] = 1;
        continue;
      }
      ASSIGN_OR_RETURN(r[k], ArithDecimal(e.op, a.dec(k), b.dec(k)));
    }
    return true;
  }
  return false;
}

// Truth of a boolean vector's row: 1 true, 0 false, -1 NULL.
inline int Truth(const Vector& v, size_t k) {
  if (v.IsNull(k)) return -1;
  if (v.phys() == PhysType::kInt) return v.ints()[k] != 0;
  return v.GetValue(k).as_bool() ? 1 : 0;
}

// The rows of `b` at `sel` as a batch.
void Subset(const Batch& b, const std::vector<uint32_t>& sel, Batch* out) {
  out->Reset(b.cols.size());
  for (size_t c = 0; c < b.cols.size(); c++) out->cols[c].Gather(b.cols[c], sel.data(), sel.size());
  out->rows = sel.size();
}

Status AndOrVector(const BoundExpr& e, const Batch& b, ExecContext* ctx, Vector* out) {
  bool is_and = e.op == BinOp::kAnd;
  Vector left;
  RETURN_NOT_OK(EvalVector(*e.children[0], b, ctx, &left));
  size_t n = b.rows;
  std::vector<int> res(n);
  std::vector<uint32_t> open;  // rows the left side does not decide
  for (size_t k = 0; k < n; k++) {
    res[k] = Truth(left, k);
    if (res[k] == (is_and ? 0 : 1)) continue;  // short circuit: the right side is not evaluated
    open.push_back(static_cast<uint32_t>(k));
  }
  if (!open.empty()) {
    Vector right;
    if (open.size() == n) {
      RETURN_NOT_OK(EvalVector(*e.children[1], b, ctx, &right));
    } else {
      Batch sub;
      Subset(b, open, &sub);
      RETURN_NOT_OK(EvalVector(*e.children[1], sub, ctx, &right));
    }
    for (size_t j = 0; j < open.size(); j++) {
      int l = res[open[j]], r = Truth(right, j);
      int v;
      if (r == (is_and ? 0 : 1)) {
        v = r;
      } else if (l == -1 || r == -1) {
        v = -1;
      } else {
        v = is_and ? 1 : 0;
      }
      res[open[j]] = v;
    }
  }
  out->Init(TypeId::kBool, n);
  int64_t* r = out->mutable_ints();
  uint8_t* nul = out->mutable_nulls();
  for (size_t k = 0; k < n; k++) {
    if (res[k] < 0) {
      nul[k] = 1;
    } else {
      r[k] = res[k];
    }
  }
  return Status::OK();
}

// length(), lower(), upper() over a text column, as Eval computes them (characters counted as
// UTF-8 lead bytes; case mapped per byte), without boxing each value.
void TextFuncVector(plan::Func f, const Vector& in, size_t n, Vector* out) {
  if (f == plan::Func::kLength) {
    if (const TextDictionary* d = in.dictionary();
        d && d->codes.size() >= n && d->values.size() == 1) {
      // One value in every row: one length, kept as a constant (written out if read per row).
      std::vector<uint8_t> nulls = in.HasNulls() ? std::vector<uint8_t>(in.nulls(), in.nulls() + n)
                                                 : std::vector<uint8_t>(n, 0);
      PackedInts one;
      one.base = static_cast<uint64_t>(Utf8Chars(d->values[0]));
      out->InitPacked(TypeId::kInt32, n, std::move(nulls), one, nullptr);
      return;
    }
    out->InitUnset(TypeId::kInt32, n);  // every row's entry is written below
    uint8_t* nulls = out->mutable_nulls();
    int64_t* ints = out->mutable_ints();
    const uint8_t* in_nulls = in.nulls();
    if (const TextDictionary* d = in.dictionary();
        d && d->codes.size() >= n && d->values.size() <= 256) {
      // Once per distinct value, then by each row's code.
      int64_t chars[256] = {};  // (a code past the values reads 0, never outside)
      for (size_t v = 0; v < d->values.size(); v++) chars[v] = Utf8Chars(d->values[v]);
      const uint8_t* codes = d->codes.data();
      std::memcpy(nulls, in_nulls, n);
      for (size_t k = 0; k < n; k++) ints[k] = chars[codes[k]];
      if (std::memchr(in_nulls, 1, n) != nullptr) {  // NULL rows' entries zero
        for (size_t k = 0; k < n; k++) ints[k] &= -static_cast<int64_t>(in_nulls[k] == 0);
      }
      return;
    }
    // Values that share their bytes (a repeat kept once) share a length.
    const std::string_view* texts = in.texts();
    std::string_view last;
    int64_t last_chars = 0;
    for (size_t k = 0; k < n; k++) {
      if (in_nulls[k]) {
        nulls[k] = 1;
        ints[k] = 0;
        continue;
      }
      std::string_view t = texts[k];
      if (t.data() != last.data() || t.size() != last.size()) {
        last = t;
        last_chars = Utf8Chars(t);
      }
      ints[k] = last_chars;
    }
    return;
  }
  out->Clear();
  out->Reserve(n);
  std::string buf;
  for (size_t k = 0; k < n; k++) {
    if (in.IsNull(k)) {
      out->AppendNull();
      continue;
    }
    buf.assign(in.texts()[k]);
    for (auto& c : buf) {
      c = static_cast<char>(f == plan::Func::kLower ? std::tolower(static_cast<unsigned char>(c))
                                                    : std::toupper(static_cast<unsigned char>(c)));
    }
    out->AppendText(buf);
  }
}

Status RowByRow(const BoundExpr& e, const Batch& b, ExecContext* ctx, Vector* out) {
  out->Clear();
  out->Reserve(b.rows);
  for (size_t r = 0; r < b.rows; r++) {
    ASSIGN_OR_RETURN(Value v, Eval(e, b, r, ctx));
    out->Append(std::move(v));
  }
  return Status::OK();
}

}  // namespace

Result<const Vector*> EvalVectorRef(const BoundExpr& e, const Batch& b, ExecContext* ctx,
                                    Vector* scratch) {
  if (e.kind == BoundExpr::Kind::kColumn && e.column >= 0 &&
      static_cast<size_t>(e.column) < b.cols.size()) {
    return &b.cols[e.column];
  }
  RETURN_NOT_OK(EvalVector(e, b, ctx, scratch));
  return scratch;
}

Status EvalVector(const BoundExpr& e, const Batch& b, ExecContext* ctx, Vector* out) {
  size_t n = b.rows;
  switch (e.kind) {
    case BoundExpr::Kind::kColumn:
      if (e.column < 0 || static_cast<size_t>(e.column) >= b.cols.size()) {
        return Status::Internal("column reference out of range");
      }
      *out = b.cols[e.column];
      return Status::OK();
    case BoundExpr::Kind::kConst:
    case BoundExpr::Kind::kParam: {
      Value param;
      if (e.kind == BoundExpr::Kind::kParam) {
        ASSIGN_OR_RETURN(param, ParamValue(e, ctx));
      }
      const Value& v = e.kind == BoundExpr::Kind::kConst ? e.value : param;
      out->Clear();
      if (v.is_null()) {
        out->AppendNulls(n);
        return Status::OK();
      }
      out->Reserve(n);
      for (size_t k = 0; k < n; k++) out->Append(v);
      return Status::OK();
    }
    case BoundExpr::Kind::kBinary: {
      if (e.op == BinOp::kAnd || e.op == BinOp::kOr) return AndOrVector(e, b, ctx, out);
      if (e.op == BinOp::kConcat) break;
      Operand l, r;
      RETURN_NOT_OK(Load(*e.children[0], b, ctx, &l));
      RETURN_NOT_OK(Load(*e.children[1], b, ctx, &r));
      if (e.op >= BinOp::kEq) return CompareVector(e, l, r, n, out);
      ASSIGN_OR_RETURN(bool done, ArithVector(e, l, r, n, out));
      if (done) return Status::OK();
      break;
    }
    case BoundExpr::Kind::kNot: {
      Vector in;
      RETURN_NOT_OK(EvalVector(*e.children[0], b, ctx, &in));
      out->Init(TypeId::kBool, n);
      uint8_t* nulls = out->mutable_nulls();
      int64_t* ints = out->mutable_ints();
      for (size_t k = 0; k < n; k++) {
        int t = Truth(in, k);
        if (t < 0) {
          nulls[k] = 1;
        } else {
          ints[k] = !t;
        }
      }
      return Status::OK();
    }
    case BoundExpr::Kind::kIsNull: {
      Operand in;
      RETURN_NOT_OK(Load(*e.children[0], b, ctx, &in));
      out->Init(TypeId::kBool, n);
      int64_t* ints = out->mutable_ints();
      for (size_t k = 0; k < n; k++) ints[k] = in.null(k) != e.negated;
      return Status::OK();
    }
    case BoundExpr::Kind::kFunc:
      if ((e.func == plan::Func::kLength || e.func == plan::Func::kLower ||
           e.func == plan::Func::kUpper) &&
          e.children.size() == 1 && e.children[0]->type.id == TypeId::kText &&
          e.children[0]->kind == BoundExpr::Kind::kColumn) {
        Vector scratch;
        ASSIGN_OR_RETURN(const Vector* in, EvalVectorRef(*e.children[0], b, ctx, &scratch));
        if (in->phys() == PhysType::kText && in->value_type() == TypeId::kText) {
          TextFuncVector(e.func, *in, n, out);
          return Status::OK();
        }
      }
      break;
    default:
      break;
  }
  return RowByRow(e, b, ctx, out);
}

Result<size_t> Select(const BoundExpr& e, const Batch& b, ExecContext* ctx,
                      std::vector<uint32_t>* sel) {
  sel->clear();
  if (e.kind == BoundExpr::Kind::kBinary && e.op == BinOp::kAnd) {
    std::vector<uint32_t> first;
    ASSIGN_OR_RETURN(size_t n, Select(*e.children[0], b, ctx, &first));
    if (n == 0) return size_t{0};
    if (n == b.rows) return Select(*e.children[1], b, ctx, sel);
    Batch sub;
    Subset(b, first, &sub);
    std::vector<uint32_t> second;
    ASSIGN_OR_RETURN(size_t m, Select(*e.children[1], sub, ctx, &second));
    sel->resize(m);
    for (size_t j = 0; j < m; j++) (*sel)[j] = first[second[j]];
    return m;
  }
  Vector v;
  RETURN_NOT_OK(EvalVector(e, b, ctx, &v));
  sel->reserve(b.rows);
  for (size_t k = 0; k < b.rows; k++) {
    if (Truth(v, k) == 1) sel->push_back(static_cast<uint32_t>(k));
  }
  return sel->size();
}

}  // namespace wattdb::exec
