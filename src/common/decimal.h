// NUMERIC values: an unscaled 128-bit integer and a decimal scale (the number of digits after
// the point). Like PostgreSQL, a value keeps its display scale: 1.50 has scale 2 and prints
// so, yet equals 1.5. Values hold at most 38 significant digits (PostgreSQL allows far more;
// larger results fail with 22003). Arithmetic follows PostgreSQL's result-scale rules:
// + and - take the larger scale, * the sum of the scales, / enough digits for 16 significant
// ones (select_div_scale); rounding is half away from zero.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace wattdb {

using Int128 = __int128;

struct Decimal {
  Int128 v = 0;       // unscaled value
  int32_t scale = 0;  // 0..kMaxDecimalScale
};

constexpr int kMaxDecimalDigits = 38;
constexpr int kMaxDecimalScale = 38;

// Parses "[+-]digits[.digits][e[+-]digits]" (surrounding blanks allowed): 22P02 if malformed,
// 22003 beyond 38 digits.
Result<Decimal> ParseDecimal(std::string_view s);
std::string FormatDecimal(const Decimal& d);

Decimal DecimalFromInt(int64_t i);
// As PostgreSQL converts float8 to numeric: 15 significant digits. 22003 for NaN/infinity.
Result<Decimal> DecimalFromDouble(double d);
double DecimalToDouble(const Decimal& d);
// Rounded half away from zero; 22003 outside int64.
Result<int64_t> DecimalToInt(const Decimal& d);

// `d` rounded (half away from zero) or extended to `scale` digits after the point.
Result<Decimal> Rescale(const Decimal& d, int scale);
// NUMERIC(precision, scale) assignment: rounds to `scale`, then 22003 if more than
// precision - scale digits remain before the point.
Result<Decimal> ApplyTypmod(const Decimal& d, int precision, int scale);
// The same value with trailing fractional zeros removed (1.50 -> 1.5).
Decimal Normalize(const Decimal& d);

int CompareDecimal(const Decimal& a, const Decimal& b);
Result<Decimal> AddDecimal(const Decimal& a, const Decimal& b);
Result<Decimal> SubDecimal(const Decimal& a, const Decimal& b);
Result<Decimal> MulDecimal(const Decimal& a, const Decimal& b);
// 22012 on division by zero.
Result<Decimal> DivDecimal(const Decimal& a, const Decimal& b);
// Remainder with the sign of `a` (PostgreSQL's numeric %); scale = the larger one.
Result<Decimal> ModDecimal(const Decimal& a, const Decimal& b);
// round(d, digits) / trunc(d, digits): result scale max(digits, 0).
Result<Decimal> RoundDecimal(const Decimal& d, int digits);
Result<Decimal> TruncDecimal(const Decimal& d, int digits);
Decimal CeilDecimal(const Decimal& d);
Decimal FloorDecimal(const Decimal& d);

// Order-preserving, prefix-free key encoding (equal values encode alike whatever their scale).
void EncodeDecimalKey(const Decimal& d, std::string* out);
// Reads one EncodeDecimalKey encoding from the front of `*key` (normalized scale).
Result<Decimal> DecodeDecimalKey(std::string_view* key);
size_t HashDecimal(const Decimal& d);

}  // namespace wattdb
