#include "common/decimal.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "common/sqlstate.h"

namespace wattdb {

namespace {

Int128 Pow10(int n) {
  static const auto table = [] {
    std::array<Int128, 39> t{};
    t[0] = 1;
    for (int i = 1; i < 39; i++) t[i] = t[i - 1] * 10;
    return t;
  }();
  return table[n];
}

Int128 Abs(Int128 v) { return v < 0 ? -v : v; }

int NumDigits(Int128 abs) {
  int n = 1;
  while (n < 39 && abs >= Pow10(n)) n++;
  return n;
}

std::string DigitsOf(Int128 abs) {
  if (abs == 0) return "0";
  std::string s;
  while (abs > 0) {
    s.push_back(static_cast<char>('0' + static_cast<int>(abs % 10)));
    abs /= 10;
  }
  return std::string(s.rbegin(), s.rend());
}

Status Overflow() {
  return Status::Sql(sqlstate::kNumericValueOutOfRange, "value overflows numeric format");
}

Result<Decimal> Checked(Int128 v, int scale) {
  if (Abs(v) >= Pow10(kMaxDecimalDigits)) return Overflow();
  return Decimal{v, scale};
}

// n / d rounded half away from zero. REQUIRES: d != 0.
Int128 DivRound(Int128 n, Int128 d) {
  Int128 q = n / d, r = n % d;
  if (2 * Abs(r) >= Abs(d)) q += ((n < 0) != (d < 0)) ? -1 : 1;
  return q;
}

// v * 10^n, or false on overflow. REQUIRES: n >= 0.
bool ScaleUp(Int128 v, int n, Int128* out) {
  if (n > kMaxDecimalDigits) return v == 0 ? (*out = 0, true) : false;
  return !__builtin_mul_overflow(v, Pow10(n), out) && Abs(*out) < Pow10(kMaxDecimalDigits);
}

// Both values at scale max(a.scale, b.scale).
Status Align(const Decimal& a, const Decimal& b, Int128* x, Int128* y, int* scale) {
  *scale = std::max(a.scale, b.scale);
  if (!ScaleUp(a.v, *scale - a.scale, x) || !ScaleUp(b.v, *scale - b.scale, y)) return Overflow();
  return Status::OK();
}

// PostgreSQL's numeric weight (position of the leading base-10000 digit) and that digit.
void Weight(const Decimal& d, int* weight, int* first) {
  Int128 a = Abs(d.v);
  int n = NumDigits(a);
  int p = n - 1 - d.scale;                   // decimal exponent of the leading digit
  int w = p >= 0 ? p / 4 : -((-p + 3) / 4);  // floor(p / 4)
  int k = p - 4 * w + 1;                     // digits of x in the leading group, 1..4
  *weight = w;
  *first = static_cast<int>(k >= n ? a * Pow10(k - n) : a / Pow10(n - k));
}

}  // namespace

Result<Decimal> ParseDecimal(std::string_view in) {
  // The common form first (a COPY's prices): [-]digits[.digits], at most 18 characters, so
  // that the digits fit an int64. Anything else takes the general path below.
  if (in.size() <= 18) {
    bool neg = !in.empty() && in[0] == '-';
    int64_t v = 0;
    int frac = 0;
    bool point = false, digit = false, plain = true;
    for (size_t j = neg ? 1 : 0; plain && j < in.size(); j++) {
      char c = in[j];
      if (c >= '0' && c <= '9') {
        v = v * 10 + (c - '0');
        digit = true;
        frac += point;
      } else if (c == '.' && !point) {
        point = true;
      } else {
        plain = false;
      }
    }
    if (plain && digit)
      return Decimal{neg ? -static_cast<Int128>(v) : static_cast<Int128>(v), frac};
  }
  auto bad = [&] {
    return Status::Sql(sqlstate::kInvalidTextRepresentation,
                       fmt::format("invalid input syntax for type numeric: \"{}\"", in));
  };
  std::string_view s = in;
  while (!s.empty() && isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  bool neg = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  std::string digits;
  int frac = 0;
  bool seen_digit = false, seen_point = false;
  size_t i = 0;
  for (; i < s.size(); i++) {
    char c = s[i];
    if (c >= '0' && c <= '9') {
      seen_digit = true;
      if (!(digits.empty() && c == '0')) digits.push_back(c);
      if (seen_point) frac++;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return bad();
  int64_t exp = 0;
  if (i < s.size()) {
    if (s[i] != 'e' && s[i] != 'E') return bad();
    i++;
    bool eneg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    if (i >= s.size()) return bad();
    for (; i < s.size(); i++) {
      if (s[i] < '0' || s[i] > '9' || exp > 100000) return bad();
      exp = exp * 10 + (s[i] - '0');
    }
    if (eneg) exp = -exp;
  }
  int64_t scale = frac - exp;
  // Fractional digits beyond what fits are rounded away.
  if (scale > kMaxDecimalScale) {
    int64_t drop = scale - kMaxDecimalScale;
    if (drop >= static_cast<int64_t>(digits.size())) {
      bool up = drop == static_cast<int64_t>(digits.size()) && !digits.empty() && digits[0] >= '5';
      return Decimal{up ? (neg ? -1 : 1) : 0, kMaxDecimalScale};
    }
    bool up = digits[digits.size() - drop] >= '5';
    digits.resize(digits.size() - drop);
    if (digits.size() > static_cast<size_t>(kMaxDecimalDigits)) return Overflow();
    Int128 v = 0;
    for (char c : digits) v = v * 10 + (c - '0');
    if (up) v++;
    return Checked(neg ? -v : v, kMaxDecimalScale);
  }
  if (digits.size() + std::max<int64_t>(0, -scale) > static_cast<size_t>(kMaxDecimalDigits))
    return Overflow();
  Int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  if (scale < 0) {
    v *= Pow10(static_cast<int>(-scale));
    scale = 0;
  }
  return Checked(neg ? -v : v, static_cast<int>(scale));
}

std::string FormatDecimal(const Decimal& d) {
  Int128 a = Abs(d.v);
  std::string ip = DigitsOf(a / Pow10(d.scale));
  std::string out = d.v < 0 ? "-" + ip : ip;
  if (d.scale > 0) {
    std::string fp = DigitsOf(a % Pow10(d.scale));
    out += "." + std::string(d.scale - fp.size(), '0') + fp;
  }
  return out;
}

Decimal DecimalFromInt(int64_t i) { return Decimal{i, 0}; }

Result<Decimal> DecimalFromDouble(double d) {
  if (!std::isfinite(d))
    return Status::Sql(sqlstate::kNumericValueOutOfRange,
                       "cannot convert infinity or NaN to numeric");
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.15g", d);
  return ParseDecimal(buf);
}

double DecimalToDouble(const Decimal& d) { return std::strtod(FormatDecimal(d).c_str(), nullptr); }

Result<int64_t> DecimalToInt(const Decimal& d) {
  Int128 v = DivRound(d.v, Pow10(d.scale));
  if (v > INT64_MAX || v < INT64_MIN)
    return Status::Sql(sqlstate::kNumericValueOutOfRange, "bigint out of range");
  return static_cast<int64_t>(v);
}

Result<Decimal> Rescale(const Decimal& d, int scale) {
  scale = std::clamp(scale, 0, kMaxDecimalScale);
  if (scale >= d.scale) {
    Int128 v = 0;
    if (!ScaleUp(d.v, scale - d.scale, &v)) return Overflow();
    return Decimal{v, scale};
  }
  return Decimal{DivRound(d.v, Pow10(d.scale - scale)), scale};
}

Result<Decimal> ApplyTypmod(const Decimal& d, int precision, int scale) {
  ASSIGN_OR_RETURN(Decimal r, Rescale(d, scale));
  if (r.v != 0 && NumDigits(Abs(r.v)) > precision) {
    return Status::Sql(
        sqlstate::kNumericValueOutOfRange,
        fmt::format("numeric field overflow: a field with precision {}, scale {} must round "
                    "to an absolute value less than 10^{}",
                    precision, scale, precision - scale));
  }
  return r;
}

Decimal Normalize(const Decimal& d) {
  Decimal r = d;
  while (r.scale > 0 && r.v % 10 == 0) {
    r.v /= 10;
    r.scale--;
  }
  return r;
}

int CompareDecimal(const Decimal& a, const Decimal& b) {
  Int128 x = 0, y = 0;
  int scale;
  if (!Align(a, b, &x, &y, &scale).ok()) {
    // One side scaled past 38 digits: it is the larger in magnitude.
    Int128 t = 0;
    bool a_big = !ScaleUp(a.v, std::max(a.scale, b.scale) - a.scale, &t);
    const Decimal& big = a_big ? a : b;
    int sign = big.v < 0 ? -1 : 1;
    return a_big ? sign : -sign;
  }
  return x < y ? -1 : (x > y ? 1 : 0);
}

Result<Decimal> AddDecimal(const Decimal& a, const Decimal& b) {
  Int128 x = 0, y = 0;
  int scale;
  RETURN_NOT_OK(Align(a, b, &x, &y, &scale));
  return Checked(x + y, scale);
}

Result<Decimal> SubDecimal(const Decimal& a, const Decimal& b) {
  Int128 x = 0, y = 0;
  int scale;
  RETURN_NOT_OK(Align(a, b, &x, &y, &scale));
  return Checked(x - y, scale);
}

Result<Decimal> MulDecimal(const Decimal& a, const Decimal& b) {
  Int128 v = 0;
  if (__builtin_mul_overflow(a.v, b.v, &v)) return Overflow();
  int scale = a.scale + b.scale;
  if (scale > kMaxDecimalScale) {
    v = DivRound(v, Pow10(scale - kMaxDecimalScale));
    scale = kMaxDecimalScale;
  }
  return Checked(v, scale);
}

Result<Decimal> DivDecimal(const Decimal& a, const Decimal& b) {
  if (b.v == 0) return Status::Sql(sqlstate::kDivisionByZero, "division by zero");
  if (a.v == 0) return Decimal{0, std::max({a.scale, b.scale, 0})};
  // PostgreSQL's select_div_scale: at least 16 significant digits, and no fewer fractional
  // digits than either input shows.
  int w1, f1, w2, f2;
  Weight(a, &w1, &f1);
  Weight(b, &w2, &f2);
  int qweight = w1 - w2 - (f1 <= f2 ? 1 : 0);
  int rscale = std::max({16 - qweight * 4, a.scale, b.scale, 0});
  rscale = std::min(rscale, kMaxDecimalScale);
  int e = rscale + b.scale - a.scale;
  Int128 q;
  if (e >= 0) {
    Int128 n = 0;
    if (!ScaleUp(a.v, e, &n)) return Overflow();
    q = DivRound(n, b.v);
  } else {
    Int128 d = 0;
    if (!ScaleUp(b.v, -e, &d)) return Decimal{0, rscale};
    q = DivRound(a.v, d);
  }
  return Checked(q, rscale);
}

Result<Decimal> ModDecimal(const Decimal& a, const Decimal& b) {
  if (b.v == 0) return Status::Sql(sqlstate::kDivisionByZero, "division by zero");
  Int128 x = 0, y = 0;
  int scale;
  RETURN_NOT_OK(Align(a, b, &x, &y, &scale));
  return Decimal{x % y, scale};
}

namespace {

Result<Decimal> RoundOrTrunc(const Decimal& d, int digits, bool round) {
  digits = std::clamp(digits, -kMaxDecimalDigits, kMaxDecimalScale);
  if (digits >= d.scale) return Rescale(d, digits);
  Int128 unit = Pow10(std::min(d.scale - digits, kMaxDecimalDigits));
  Int128 q = round ? DivRound(d.v, unit) : d.v / unit;
  if (digits >= 0) return Checked(q, digits);
  Int128 v = 0;
  if (!ScaleUp(q, -digits, &v)) return Overflow();
  return Checked(v, 0);
}

}  // namespace

Result<Decimal> RoundDecimal(const Decimal& d, int digits) { return RoundOrTrunc(d, digits, true); }
Result<Decimal> TruncDecimal(const Decimal& d, int digits) {
  return RoundOrTrunc(d, digits, false);
}

Decimal CeilDecimal(const Decimal& d) {
  Int128 unit = Pow10(d.scale), q = d.v / unit;
  if (d.v % unit != 0 && d.v > 0) q++;
  return Decimal{q, 0};
}

Decimal FloorDecimal(const Decimal& d) {
  Int128 unit = Pow10(d.scale), q = d.v / unit;
  if (d.v % unit != 0 && d.v < 0) q--;
  return Decimal{q, 0};
}

void EncodeDecimalKey(const Decimal& d, std::string* out) {
  if (d.v == 0) {
    out->push_back(2);
    return;
  }
  bool neg = d.v < 0;
  std::string digits = DigitsOf(Abs(d.v));
  int exp = static_cast<int>(digits.size()) - d.scale;  // value = 0.digits * 10^exp
  while (digits.back() == '0') digits.pop_back();
  uint16_t e = static_cast<uint16_t>(exp + 0x8000);
  auto put = [&](uint8_t b) { out->push_back(static_cast<char>(neg ? ~b : b)); };
  out->push_back(neg ? 1 : 3);
  put(static_cast<uint8_t>(e >> 8));
  put(static_cast<uint8_t>(e & 0xff));
  for (char c : digits) put(static_cast<uint8_t>(c - '0' + 1));
  put(0);
}

Result<Decimal> DecodeDecimalKey(std::string_view* key) {
  auto bad = [] { return Status::Corruption("numeric key does not decode"); };
  if (key->empty()) return bad();
  uint8_t tag = static_cast<uint8_t>((*key)[0]);
  if (tag == 2) {
    key->remove_prefix(1);
    return Decimal{};
  }
  if ((tag != 1 && tag != 3) || key->size() < 4) return bad();
  bool neg = tag == 1;
  auto get = [&](size_t i) { return static_cast<uint8_t>(neg ? ~(*key)[i] : (*key)[i]); };
  int exp = static_cast<int>((get(1) << 8 | get(2))) - 0x8000;
  std::string digits;
  size_t i = 3;
  for (; i < key->size() && get(i) != 0; i++) {
    if (get(i) > 10 || digits.size() >= static_cast<size_t>(kMaxDecimalDigits)) return bad();
    digits.push_back(static_cast<char>('0' + get(i) - 1));
  }
  if (i >= key->size() || digits.empty()) return bad();
  key->remove_prefix(i + 1);
  Int128 v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  int scale = static_cast<int>(digits.size()) - exp;
  if (scale < 0) {
    if (!ScaleUp(v, -scale, &v)) return bad();
    scale = 0;
  }
  if (scale > kMaxDecimalScale) return bad();
  return Decimal{neg ? -v : v, scale};
}

size_t HashDecimal(const Decimal& d) {
  Decimal n = Normalize(d);
  if (n.scale == 0 && n.v >= INT64_MIN && n.v <= INT64_MAX)
    return std::hash<int64_t>()(static_cast<int64_t>(n.v));
  return std::hash<std::string>()(FormatDecimal(n));
}

}  // namespace wattdb
