// SQL arithmetic (+ - * / %) on one pair of non-NULL operands: the one definition that the
// row path (eval.cc) and the vector loops (eval_vector.cc) share. The scalar functions tell
// an error by an ArithError, so that a loop over a batch makes a Status only when one occurs.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "common/decimal.h"
#include "common/schema.h"
#include "common/sqlstate.h"
#include "common/status.h"
#include "query/plan/expr.h"

namespace wattdb::exec {

enum class ArithError : uint8_t { kNone, kDivisionByZero, kOutOfRange };

inline bool IsArith(plan::BinOp op) {
  using plan::BinOp;
  return op == BinOp::kAdd || op == BinOp::kSub || op == BinOp::kMul || op == BinOp::kDiv ||
         op == BinOp::kMod;
}

// Integers, exact in 128 bits: the caller checks the result against its type (IntFits).
// REQUIRES IsArith(op).
inline ArithError ArithInt(plan::BinOp op, __int128 x, __int128 y, __int128* z) {
  using plan::BinOp;
  switch (op) {
    case BinOp::kAdd:
      *z = x + y;
      return ArithError::kNone;
    case BinOp::kSub:
      *z = x - y;
      return ArithError::kNone;
    case BinOp::kMul:
      *z = x * y;
      return ArithError::kNone;
    case BinOp::kDiv:
      if (y == 0) return ArithError::kDivisionByZero;
      *z = x / y;
      return ArithError::kNone;
    default:  // kMod
      if (y == 0) return ArithError::kDivisionByZero;
      *z = x % y;
      return ArithError::kNone;
  }
}

// Whether `v` is a value of the integer type `t` (kInt32, else 64 bits).
inline bool IntFits(__int128 v, TypeId t) {
  if (t == TypeId::kInt32) {
    return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  }
  return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
}

// Doubles; a finite pair whose result overflows to infinity is out of range, as in
// PostgreSQL. REQUIRES IsArith(op).
inline ArithError ArithDouble(plan::BinOp op, double x, double y, double* z) {
  using plan::BinOp;
  switch (op) {
    case BinOp::kAdd:
      *z = x + y;
      break;
    case BinOp::kSub:
      *z = x - y;
      break;
    case BinOp::kMul:
      *z = x * y;
      break;
    case BinOp::kDiv:
      if (y == 0) return ArithError::kDivisionByZero;
      *z = x / y;
      break;
    default:  // kMod
      if (y == 0) return ArithError::kDivisionByZero;
      *z = std::fmod(x, y);
      break;
  }
  if (std::isinf(*z) && !std::isinf(x) && !std::isinf(y)) return ArithError::kOutOfRange;
  return ArithError::kNone;
}

// Decimals (their operations report their own errors). REQUIRES IsArith(op).
inline Result<Decimal> ArithDecimal(plan::BinOp op, const Decimal& x, const Decimal& y) {
  using plan::BinOp;
  switch (op) {
    case BinOp::kAdd:
      return AddDecimal(x, y);
    case BinOp::kSub:
      return SubDecimal(x, y);
    case BinOp::kMul:
      return MulDecimal(x, y);
    case BinOp::kDiv:
      return DivDecimal(x, y);
    default:  // kMod
      return ModDecimal(x, y);
  }
}

// The error for a result of type `t`: 22012, or 22003 with PostgreSQL's message.
inline Status ArithStatus(ArithError e, TypeId t) {
  if (e == ArithError::kDivisionByZero)
    return Status::Sql(sqlstate::kDivisionByZero, "division by zero");
  const char* what = t == TypeId::kDouble  ? "value out of range: overflow"
                     : t == TypeId::kInt32 ? "integer out of range"
                                           : "bigint out of range";
  return Status::Sql(sqlstate::kNumericValueOutOfRange, what);
}

}  // namespace wattdb::exec
