#include "common/value.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>

namespace wattdb {

std::string SqlType::ToString() const {
  switch (id) {
    case TypeId::kNull: return "unknown";
    case TypeId::kBool: return "boolean";
    case TypeId::kInt32: return "integer";
    case TypeId::kInt64: return "bigint";
    case TypeId::kDouble: return "double precision";
    case TypeId::kText:
      return max_len > 0 ? fmt::format("character varying({})", max_len) : "text";
  }
  return "unknown";
}

int32_t SqlType::PgOid() const {
  switch (id) {
    case TypeId::kNull: return 25;
    case TypeId::kBool: return 16;
    case TypeId::kInt32: return 23;
    case TypeId::kInt64: return 20;
    case TypeId::kDouble: return 701;
    case TypeId::kText: return max_len > 0 ? 1043 : 25;
  }
  return 25;
}

int16_t SqlType::PgLen() const {
  switch (id) {
    case TypeId::kBool: return 1;
    case TypeId::kInt32: return 4;
    case TypeId::kInt64: return 8;
    case TypeId::kDouble: return 8;
    default: return -1;
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
    case TypeId::kNull: return "";
    case TypeId::kBool: return i_ ? "t" : "f";
    case TypeId::kInt32:
    case TypeId::kInt64: return std::to_string(i_);
    case TypeId::kDouble: return FormatDouble(d_);
    case TypeId::kText: return s_;
  }
  return "";
}

int Value::Compare(const Value& o) const {
  if (is_null() || o.is_null()) {
    if (is_null() && o.is_null()) return 0;
    return is_null() ? 1 : -1;
  }
  auto cmp = [](auto a, auto b) { return a < b ? -1 : (a > b ? 1 : 0); };
  bool num_a = type_ == TypeId::kInt32 || type_ == TypeId::kInt64 || type_ == TypeId::kDouble;
  bool num_b = o.type_ == TypeId::kInt32 || o.type_ == TypeId::kInt64 || o.type_ == TypeId::kDouble;
  if (num_a && num_b) {
    if (type_ != TypeId::kDouble && o.type_ != TypeId::kDouble) return cmp(i_, o.i_);
    return cmp(ToDouble(), o.ToDouble());
  }
  if (type_ == TypeId::kText && o.type_ == TypeId::kText) {
    int c = s_.compare(o.s_);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (type_ == TypeId::kBool && o.type_ == TypeId::kBool) return cmp(i_, o.i_);
  return cmp(static_cast<int>(type_), static_cast<int>(o.type_));
}

size_t Value::Hash() const {
  switch (type_) {
    case TypeId::kNull: return 0x9e3779b9;
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64: return std::hash<int64_t>()(i_);
    case TypeId::kDouble: {
      // Integral doubles hash like ints so that 1 = 1.0 group together.
      double r = std::nearbyint(d_);
      if (r == d_ && std::fabs(d_) < 9e18) return std::hash<int64_t>()(static_cast<int64_t>(d_));
      return std::hash<double>()(d_);
    }
    case TypeId::kText: return std::hash<std::string>()(s_);
  }
  return 0;
}

namespace {

Result<Value> ParseInt(const std::string& s, const SqlType& t) {
  std::string_view v(s);
  while (!v.empty() && isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
  while (!v.empty() && isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || p != v.data() + v.size()) {
    return Status::Sql("22P02",
                       fmt::format("invalid input syntax for type {}: \"{}\"", t.ToString(), s));
  }
  if (ec == std::errc::result_out_of_range) {
    return Status::Sql("22003", fmt::format("value \"{}\" is out of range for type {}", s,
                                            t.ToString()));
  }
  return t.id == TypeId::kInt32 ? Value::Int32(out) : Value::Int64(out);
}

}  // namespace

Result<Value> Value::CastTo(const SqlType& t) const {
  if (is_null()) return Value();
  if (type_ == t.id && t.id != TypeId::kText && t.id != TypeId::kInt32) return *this;
  switch (t.id) {
    case TypeId::kNull: return *this;
    case TypeId::kBool:
      if (type_ == TypeId::kBool) return *this;
      if (type_ == TypeId::kText) {
        std::string l;
        for (char c : s_) l += static_cast<char>(tolower(static_cast<unsigned char>(c)));
        if (l == "t" || l == "true" || l == "yes" || l == "on" || l == "1") return Bool(true);
        if (l == "f" || l == "false" || l == "no" || l == "off" || l == "0") return Bool(false);
        return Status::Sql("22P02", fmt::format("invalid input syntax for type boolean: \"{}\"", s_));
      }
      if (type_ == TypeId::kInt32 || type_ == TypeId::kInt64) return Bool(i_ != 0);
      break;
    case TypeId::kInt32:
    case TypeId::kInt64: {
      int64_t v;
      if (type_ == TypeId::kInt32 || type_ == TypeId::kInt64) {
        v = i_;
      } else if (type_ == TypeId::kDouble) {
        if (std::isnan(d_) || d_ >= 9.223372036854775807e18 || d_ < -9.223372036854775808e18) {
          return Status::Sql("22003", fmt::format("{} out of range", t.ToString()));
        }
        v = static_cast<int64_t>(std::nearbyint(d_));  // round half to even, like PostgreSQL
      } else if (type_ == TypeId::kText) {
        return ParseInt(s_, t);
      } else if (type_ == TypeId::kBool) {
        v = i_;
      } else {
        break;
      }
      if (t.id == TypeId::kInt32 && (v > std::numeric_limits<int32_t>::max() ||
                                     v < std::numeric_limits<int32_t>::min())) {
        return Status::Sql("22003", "integer out of range");
      }
      return t.id == TypeId::kInt32 ? Int32(v) : Int64(v);
    }
    case TypeId::kDouble:
      if (type_ == TypeId::kInt32 || type_ == TypeId::kInt64) return Double(static_cast<double>(i_));
      if (type_ == TypeId::kText) {
        std::string_view v(s_);
        while (!v.empty() && isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
        while (!v.empty() && isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
        std::string low;
        for (char c : v) low += static_cast<char>(tolower(static_cast<unsigned char>(c)));
        if (low == "nan") return Double(std::nan(""));
        if (low == "infinity" || low == "inf") return Double(HUGE_VAL);
        if (low == "-infinity" || low == "-inf") return Double(-HUGE_VAL);
        double d = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
        if (v.empty() || p != v.data() + v.size() || ec != std::errc()) {
          return Status::Sql("22P02", fmt::format(
                                          "invalid input syntax for type double precision: \"{}\"", s_));
        }
        return Double(d);
      }
      break;
    case TypeId::kText: {
      std::string s = ToText();
      if (t.max_len > 0 && static_cast<int64_t>(s.size()) > t.max_len) {
        // PostgreSQL counts characters; we count UTF-8 code points the same way.
        int64_t chars = 0;
        for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
        if (chars > t.max_len) {
          return Status::Sql("22001", fmt::format("value too long for type character varying({})",
                                                  t.max_len));
        }
      }
      return Text(std::move(s));
    }
  }
  return Status::Sql("42804", fmt::format("cannot cast type {} to {}",
                                          SqlType{type_, 0}.ToString(), t.ToString()));
}

}  // namespace wattdb
