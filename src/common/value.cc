#include "common/value.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "common/sqlstate.h"

namespace wattdb {

std::string SqlType::ToString() const {
  switch (id) {
    case TypeId::kNull:
      return "unknown";
    case TypeId::kBool:
      return "boolean";
    case TypeId::kInt32:
      return "integer";
    case TypeId::kInt64:
      return "bigint";
    case TypeId::kDouble:
      return "double precision";
    case TypeId::kTimestamp:
      return "timestamp without time zone";
    case TypeId::kNumeric:
      return max_len ? fmt::format("numeric({},{})", precision(), scale()) : "numeric";
    case TypeId::kArray:
      return element().ToString() + "[]";
    case TypeId::kText:
      if (max_len < 0) return fmt::format("character({})", -max_len);
      return max_len > 0 ? fmt::format("character varying({})", max_len) : "text";
  }
  return "unknown";
}

int32_t SqlType::PgOid() const {
  switch (id) {
    case TypeId::kNull:
      return 25;
    case TypeId::kBool:
      return 16;
    case TypeId::kInt32:
      return 23;
    case TypeId::kInt64:
      return 20;
    case TypeId::kDouble:
      return 701;
    case TypeId::kTimestamp:
      return 1114;
    case TypeId::kNumeric:
      return 1700;
    case TypeId::kText:
      return max_len > 0 ? 1043 : max_len < 0 ? 1042 : 25;
    case TypeId::kArray:
      switch (element().id) {
        case TypeId::kBool:
          return 1000;
        case TypeId::kInt32:
          return 1007;
        case TypeId::kInt64:
          return 1016;
        case TypeId::kDouble:
          return 1022;
        case TypeId::kNumeric:
          return 1231;
        case TypeId::kTimestamp:
          return 1115;
        default:
          return 1009;  // text[]
      }
  }
  return 25;
}

int32_t SqlType::PgTypmod() const {
  if (id == TypeId::kNumeric && max_len) return max_len + 4;
  if (id == TypeId::kText && max_len) return (max_len < 0 ? -max_len : max_len) + 4;
  return -1;
}

int16_t SqlType::PgLen() const {
  switch (id) {
    case TypeId::kBool:
      return 1;
    case TypeId::kInt32:
      return 4;
    case TypeId::kInt64:
      return 8;
    case TypeId::kDouble:
      return 8;
    case TypeId::kTimestamp:
      return 8;
    default:
      return -1;
  }
}

std::string FormatDouble(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char buf[64];
  // Shortest representation that round-trips, as PostgreSQL >= 12 prints float8.
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, end);
  // PostgreSQL uses exponent form like 1e+20 and 1e-05; to_chars gives 1e+20 and 1e-05 too.
  return s;
}

std::string Value::ToText() const {
  switch (type_) {
    case TypeId::kNull:
      return "";
    case TypeId::kBool:
      return i_ ? "t" : "f";
    case TypeId::kInt32:
    case TypeId::kInt64:
      return std::to_string(i_);
    case TypeId::kDouble:
      return FormatDouble(d_);
    case TypeId::kText:
      return s_;
    case TypeId::kTimestamp:
      return FormatTimestamp(i_);
    case TypeId::kNumeric:
      return FormatDecimal(dec_);
    case TypeId::kArray: {
      // PostgreSQL's array text form: {a,b,NULL,"x y"}.
      std::string out = "{";
      for (size_t i = 0; i < arr_->size(); i++) {
        const Value& e = (*arr_)[i];
        if (i) out += ',';
        if (e.is_null()) {
          out += "NULL";
          continue;
        }
        std::string t = e.ToText();
        bool quote =
            t.empty() || t == "NULL" || t.find_first_of("{},\" \\\t\n") != std::string::npos;
        if (!quote) {
          out += t;
          continue;
        }
        out += '"';
        for (char c : t) {
          if (c == '"' || c == '\\') out += '\\';
          out += c;
        }
        out += '"';
      }
      return out + "}";
    }
  }
  return "";
}

int Value::Compare(const Value& o) const {
  if (is_null() || o.is_null()) {
    if (is_null() && o.is_null()) return 0;
    return is_null() ? 1 : -1;
  }
  auto cmp = [](auto a, auto b) { return a < b ? -1 : (a > b ? 1 : 0); };
  bool num_a = SqlType{type_}.IsNumeric(), num_b = SqlType{o.type_}.IsNumeric();
  if (num_a && num_b) {
    if (type_ == TypeId::kDouble || o.type_ == TypeId::kDouble)
      return CompareDoubles(ToDouble(), o.ToDouble());
    if (type_ == TypeId::kNumeric || o.type_ == TypeId::kNumeric)
      return CompareDecimal(ToDecimal(), o.ToDecimal());
    return cmp(i_, o.i_);
  }
  if (type_ == TypeId::kArray && o.type_ == TypeId::kArray) {
    for (size_t i = 0; i < arr_->size() && i < o.arr_->size(); i++) {
      if (int c = (*arr_)[i].Compare((*o.arr_)[i])) return c;
    }
    return cmp(arr_->size(), o.arr_->size());
  }
  if (type_ == TypeId::kText && o.type_ == TypeId::kText) {
    int c = s_.compare(o.s_);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (type_ == o.type_ && (type_ == TypeId::kBool || type_ == TypeId::kTimestamp))
    return cmp(i_, o.i_);
  return cmp(static_cast<int>(type_), static_cast<int>(o.type_));
}

size_t Value::Hash() const {
  switch (type_) {
    case TypeId::kNull:
      return 0x9e3779b9;
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return std::hash<int64_t>()(i_);
    case TypeId::kDouble: {
      // Integral doubles hash like ints so that 1 = 1.0 group together.
      double r = std::nearbyint(d_);
      if (r == d_ && std::fabs(d_) < 9e18) return std::hash<int64_t>()(static_cast<int64_t>(d_));
      if (d_ != d_) return 0x7ff8;  // every NaN alike (they compare equal)
      return std::hash<double>()(d_);
    }
    case TypeId::kText:
      return std::hash<std::string>()(s_);
    case TypeId::kNumeric:
      return HashDecimal(dec_);
    case TypeId::kArray: {
      size_t h = arr_->size();
      for (const auto& e : *arr_) h = h * 31 + e.Hash();
      return h;
    }
  }
  return 0;
}

namespace {

// Days from 1970-01-01 to y-m-d (proleptic Gregorian), and back (H. Hinnant's algorithms).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

}  // namespace

Result<int64_t> ParseTimestamp(std::string_view in) {
  auto bad = [&] {
    return Status::Sql(sqlstate::kInvalidDatetimeFormat,
                       fmt::format("invalid input syntax for type timestamp: \"{}\"", in));
  };
  std::string_view s = in;
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  size_t i = 0;
  auto num = [&](size_t min_digits, size_t max_digits, int64_t* out) {
    size_t start = i;
    int64_t v = 0;
    while (i < s.size() && i - start < max_digits && s[i] >= '0' && s[i] <= '9')
      v = v * 10 + (s[i++] - '0');
    *out = v;
    return i - start >= min_digits;
  };
  int64_t y, mo, d, h = 0, mi = 0, sec = 0, frac = 0;
  if (!num(4, 6, &y) || i >= s.size() || s[i++] != '-' || !num(1, 2, &mo) || i >= s.size() ||
      s[i++] != '-' || !num(1, 2, &d)) {
    return bad();
  }
  if (i < s.size()) {
    if (s[i] != ' ' && s[i] != 'T') return bad();
    i++;
    if (!num(1, 2, &h) || i >= s.size() || s[i++] != ':' || !num(1, 2, &mi)) return bad();
    if (i < s.size() && s[i] == ':') {
      i++;
      if (!num(1, 2, &sec)) return bad();
      if (i < s.size() && s[i] == '.') {
        i++;
        size_t start = i;
        if (!num(1, 6, &frac)) return bad();
        for (size_t k = i - start; k < 6; k++) frac *= 10;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;  // beyond microseconds
      }
    }
  }
  if (i != s.size()) return bad();
  static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || (mo == 2 && d == 29 && !leap) || h > 23 ||
      mi > 59 || sec > 60) {
    return Status::Sql(sqlstate::kDatetimeFieldOverflow,
                       fmt::format("date/time field value out of range: \"{}\"", in));
  }
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) - 10957;
  return ((days * 24 + h) * 60 + mi) * 60000000 + sec * 1000000 + frac;
}

std::string FormatTimestamp(int64_t us) {
  int64_t day_us = 86400LL * 1000000;
  int64_t days = us / day_us, rem = us % day_us;
  if (rem < 0) {
    rem += day_us;
    days--;
  }
  int64_t y;
  unsigned m, d;
  CivilFromDays(days + 10957, &y, &m, &d);
  int64_t secs = rem / 1000000, frac = rem % 1000000;
  std::string out = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", y, m, d, secs / 3600,
                                secs / 60 % 60, secs % 60);
  if (frac) {
    std::string f = fmt::format("{:06}", frac);
    while (f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return out;
}

namespace {

bool IsBlank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // isspace in the C locale

Result<Value> ParseInt(std::string_view s, const SqlType& t) {
  ASSIGN_OR_RETURN(int64_t out, ParseIntText(s, t));
  return t.id == TypeId::kInt32 ? Value::Int32(out) : Value::Int64(out);
}

}  // namespace

Result<int64_t> ParseIntText(std::string_view s, const SqlType& t) {
  std::string_view v(s);
  while (!v.empty() && IsBlank(v.front())) v.remove_prefix(1);
  while (!v.empty() && IsBlank(v.back())) v.remove_suffix(1);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || p != v.data() + v.size()) {
    return Status::Sql(sqlstate::kInvalidTextRepresentation,
                       fmt::format("invalid input syntax for type {}: \"{}\"", t.ToString(), s));
  }
  if (ec == std::errc::result_out_of_range ||
      (t.id == TypeId::kInt32 &&
       (out > std::numeric_limits<int32_t>::max() || out < std::numeric_limits<int32_t>::min()))) {
    return Status::Sql(sqlstate::kNumericValueOutOfRange,
                       fmt::format("value \"{}\" is out of range for type {}", s, t.ToString()));
  }
  return out;
}

Result<Decimal> ParseNumericText(std::string_view s, const SqlType& t) {
  ASSIGN_OR_RETURN(Decimal d, ParseDecimal(s));
  if (!t.max_len) return d;
  return ApplyTypmod(d, t.precision(), t.scale());
}

// PostgreSQL's one-dimensional array text form: {a,"b c",NULL}.
static Result<std::vector<Value>> ParseArrayText(const std::string& s, const SqlType& element) {
  auto bad = [&] {
    return Status::Sql(sqlstate::kInvalidTextRepresentation,
                       fmt::format("malformed array literal: \"{}\"", s));
  };
  size_t i = 0, n = s.size();
  while (i < n && isspace(static_cast<unsigned char>(s[i]))) i++;
  if (i >= n || s[i++] != '{') return bad();
  std::vector<Value> out;
  while (i < n && isspace(static_cast<unsigned char>(s[i]))) i++;
  if (i < n && s[i] == '}') return out;
  while (true) {
    while (i < n && isspace(static_cast<unsigned char>(s[i]))) i++;
    std::string item;
    bool quoted = i < n && s[i] == '"';
    if (quoted) {
      for (i++; i < n && s[i] != '"'; i++) {
        if (s[i] == '\\' && i + 1 < n) i++;
        item += s[i];
      }
      if (i++ >= n) return bad();
    } else {
      while (i < n && s[i] != ',' && s[i] != '}') item += s[i++];
      while (!item.empty() && isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
      if (item.empty() || item.find_first_of("{\"") != std::string::npos) return bad();
    }
    if (!quoted && (item == "NULL" || item == "null")) {
      out.push_back(Value());
    } else {
      ASSIGN_OR_RETURN(Value v, Value::Text(item).CastTo(element));
      out.push_back(std::move(v));
    }
    while (i < n && isspace(static_cast<unsigned char>(s[i]))) i++;
    if (i < n && s[i] == ',') {
      i++;
      continue;
    }
    if (i < n && s[i] == '}') return out;
    return bad();
  }
}

namespace {

Result<Value> BoolFromText(const std::string& s) {
  std::string l;
  for (char c : s) l += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  if (l == "t" || l == "true" || l == "yes" || l == "on" || l == "1") return Value::Bool(true);
  if (l == "f" || l == "false" || l == "no" || l == "off" || l == "0") return Value::Bool(false);
  return Status::Sql(sqlstate::kInvalidTextRepresentation,
                     fmt::format("invalid input syntax for type boolean: \"{}\"", s));
}

Result<Value> DoubleFromText(const std::string& s) {
  std::string_view v(s);
  while (!v.empty() && isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  std::string low;
  for (char c : v) low += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  if (low == "nan") return Value::Double(std::nan(""));
  if (low == "infinity" || low == "inf") return Value::Double(HUGE_VAL);
  if (low == "-infinity" || low == "-inf") return Value::Double(-HUGE_VAL);
  double d = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || p != v.data() + v.size() || ec != std::errc()) {
    return Status::Sql(sqlstate::kInvalidTextRepresentation,
                       fmt::format("invalid input syntax for type double precision: \"{}\"", s));
  }
  return Value::Double(d);
}

// `s` as a value of text type `t`: VARCHAR(n) refuses more than n characters, CHAR(n)
// (max_len < 0) is padded to n with blanks.
Result<Value> FitText(std::string s, const SqlType& t) {
  int64_t limit = t.max_len < 0 ? -static_cast<int64_t>(t.max_len) : t.max_len;
  // PostgreSQL counts characters; we count UTF-8 code points the same way.
  auto chars = [](const std::string& x) {
    int64_t n = 0;
    for (unsigned char c : x) n += (c & 0xC0) != 0x80;
    return n;
  };
  if (limit > 0 && static_cast<int64_t>(s.size()) > limit && chars(s) > limit) {
    // Trailing blanks beyond a CHAR(n)'s length are dropped, as in PostgreSQL.
    size_t end = s.find_last_not_of(' ');
    std::string trimmed = end == std::string::npos ? "" : s.substr(0, end + 1);
    if (t.max_len > 0 || chars(trimmed) > limit) {
      return Status::Sql(sqlstate::kStringDataRightTruncation,
                         fmt::format("value too long for type {}", t.ToString()));
    }
    s = std::move(trimmed);
  }
  if (t.max_len < 0) s.append(static_cast<size_t>(limit - chars(s)), ' ');
  return Value::Text(std::move(s));
}

// `v` (not NULL) as integer type `t`; nullopt if no cast exists.
std::optional<Result<Value>> CastToInteger(const Value& v, const SqlType& t) {
  int64_t i;
  switch (v.type()) {
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kBool:
      i = v.as_int();
      break;
    case TypeId::kDouble: {
      double d = v.as_double();
      if (std::isnan(d) || d >= 9.223372036854775807e18 || d < -9.223372036854775808e18) {
        return Status::Sql(sqlstate::kNumericValueOutOfRange,
                           fmt::format("{} out of range", t.ToString()));
      }
      i = static_cast<int64_t>(std::nearbyint(d));  // round half to even, like PostgreSQL
      break;
    }
    case TypeId::kNumeric: {
      auto r = DecimalToInt(v.as_decimal());
      if (!r.ok())
        return Status::Sql(sqlstate::kNumericValueOutOfRange,
                           fmt::format("{} out of range", t.ToString()));
      i = *r;
      break;
    }
    case TypeId::kText:
      return ParseInt(v.as_text(), t);
    default:
      return std::nullopt;
  }
  if (t.id == TypeId::kInt32 &&
      (i > std::numeric_limits<int32_t>::max() || i < std::numeric_limits<int32_t>::min())) {
    return Status::Sql(sqlstate::kNumericValueOutOfRange, "integer out of range");
  }
  return t.id == TypeId::kInt32 ? Value::Int32(i) : Value::Int64(i);
}

// `v` (not NULL) as numeric type `t` (with its precision and scale, if any); nullopt if no
// cast exists.
std::optional<Result<Value>> CastToNumeric(const Value& v, const SqlType& t) {
  Result<Decimal> d = Decimal{};
  switch (v.type()) {
    case TypeId::kNumeric:
      d = v.as_decimal();
      break;
    case TypeId::kInt32:
    case TypeId::kInt64:
      d = DecimalFromInt(v.as_int());
      break;
    case TypeId::kDouble:
      d = DecimalFromDouble(v.as_double());
      break;
    case TypeId::kText:
      d = ParseDecimal(v.as_text());
      break;
    default:
      return std::nullopt;
  }
  if (!d.ok()) return d.status();
  if (t.max_len) {
    d = ApplyTypmod(*d, t.precision(), t.scale());
    if (!d.ok()) return d.status();
  }
  return Value::Numeric(*d);
}

}  // namespace

Result<Value> Value::CastTo(const SqlType& t) const {
  if (is_null()) return Value();
  if (type_ == t.id && t.id != TypeId::kText && t.id != TypeId::kInt32 &&
      !(t.id == TypeId::kNumeric && t.max_len)) {
    return *this;
  }
  switch (t.id) {
    case TypeId::kNull:
      return *this;
    case TypeId::kBool:
      if (type_ == TypeId::kBool) return *this;
      if (type_ == TypeId::kText) return BoolFromText(s_);
      if (type_ == TypeId::kInt32 || type_ == TypeId::kInt64) return Bool(i_ != 0);
      break;
    case TypeId::kInt32:
    case TypeId::kInt64:
      if (auto r = CastToInteger(*this, t)) return std::move(*r);
      break;
    case TypeId::kNumeric:
      if (auto r = CastToNumeric(*this, t)) return std::move(*r);
      break;
    case TypeId::kDouble:
      if (type_ == TypeId::kInt32 || type_ == TypeId::kInt64)
        return Double(static_cast<double>(i_));
      if (type_ == TypeId::kNumeric) return Double(DecimalToDouble(dec_));
      if (type_ == TypeId::kText) return DoubleFromText(s_);
      break;
    case TypeId::kArray: {
      if (type_ == TypeId::kArray) {
        std::vector<Value> out;
        for (const auto& e : *arr_) {
          ASSIGN_OR_RETURN(Value c, e.CastTo(t.element()));
          out.push_back(std::move(c));
        }
        return Array(std::move(out));
      }
      if (type_ != TypeId::kText) break;
      ASSIGN_OR_RETURN(std::vector<Value> elems, ParseArrayText(s_, t.element()));
      return Array(std::move(elems));
    }
    case TypeId::kTimestamp:
      if (type_ == TypeId::kText) {
        ASSIGN_OR_RETURN(int64_t us, ParseTimestamp(s_));
        return Timestamp(us);
      }
      break;
    case TypeId::kText:
      return FitText(ToText(), t);
  }
  return Status::Sql(
      sqlstate::kDatatypeMismatch,
      fmt::format("cannot cast type {} to {}", SqlType{type_, 0}.ToString(), t.ToString()));
}

Result<Value> Value::FromText(std::string_view s, const SqlType& t) {
  switch (t.id) {
    case TypeId::kInt32:
    case TypeId::kInt64:
      return ParseInt(s, t);
    case TypeId::kNumeric: {
      ASSIGN_OR_RETURN(Decimal d, ParseNumericText(s, t));
      return Numeric(d);
    }
    case TypeId::kTimestamp: {
      ASSIGN_OR_RETURN(int64_t us, ParseTimestamp(s));
      return Timestamp(us);
    }
    case TypeId::kText:
      if (!t.max_len) return Text(std::string(s));
      break;
    default:
      break;
  }
  return Text(std::string(s)).CastTo(t);
}

size_t Value::HeapBytes() const {
  size_t n =
      s_.capacity() > std::string().capacity() ? s_.capacity() : 0;  // beyond the inline buffer
  if (arr_) {
    for (const auto& e : *arr_) n += sizeof(Value) + e.HeapBytes();
  }
  return n;
}

}  // namespace wattdb
