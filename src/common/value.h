// SQL types and values.
//
// A Value is one SQL datum: NULL or a typed scalar. INTEGER and BIGINT both hold an int64
// (INTEGER is range-checked on write); VARCHAR(n) and TEXT hold a std::string.
// Values are regular types (copyable, comparable); not thread-safe to mutate concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/decimal.h"
#include "common/status.h"

namespace wattdb {

enum class TypeId : uint8_t {
  kNull = 0,  // the type of an untyped NULL literal
  kBool = 1,
  kInt32 = 2,
  kInt64 = 3,
  kDouble = 4,
  kText = 5,
  kTimestamp = 6,  // TIMESTAMP (without time zone): microseconds since 2000-01-01 00:00:00
  kNumeric = 7,    // NUMERIC / DECIMAL (common/decimal.h)
  kArray = 8,      // one-dimensional array; SqlType::max_len holds the element TypeId
};

struct SqlType {
  TypeId id = TypeId::kNull;
  int32_t max_len = 0;  // VARCHAR(n): n; CHAR(n): -n (blank-padded); 0 = unbounded (TEXT);
                        // NUMERIC(p, s): p << 16 | s (0 = unconstrained)
  static SqlType Numeric(int precision, int scale) {
    return {TypeId::kNumeric, precision << 16 | scale};
  }
  static SqlType Array(TypeId element) { return {TypeId::kArray, static_cast<int32_t>(element)}; }
  SqlType element() const { return SqlType{static_cast<TypeId>(max_len)}; }
  int precision() const { return max_len >> 16; }
  int scale() const { return max_len & 0xffff; }

  bool operator==(const SqlType& o) const { return id == o.id && max_len == o.max_len; }
  bool IsNumeric() const {
    return id == TypeId::kInt32 || id == TypeId::kInt64 || id == TypeId::kDouble ||
           id == TypeId::kNumeric;
  }
  bool IsInteger() const { return id == TypeId::kInt32 || id == TypeId::kInt64; }
  bool IsFixedChar() const { return id == TypeId::kText && max_len < 0; }
  // SQL spelling, as PostgreSQL prints it (integer, bigint, double precision, ...).
  std::string ToString() const;
  // PostgreSQL type OID used in RowDescription.
  int32_t PgOid() const;
  // PostgreSQL typlen used in RowDescription (-1 for varlena).
  int16_t PgLen() const;
  // PostgreSQL atttypmod (-1 if none).
  int32_t PgTypmod() const;
};

// Microseconds since 2000-01-01 00:00:00 of a wall-clock time given in microseconds since the
// Unix epoch (PostgreSQL's timestamp representation).
constexpr int64_t kPgEpochUnixMicros = 946684800LL * 1000000;
// TIMESTAMP text forms: 'YYYY-MM-DD[ HH:MM[:SS[.ffffff]]]' (also 'T' as the separator).
Result<int64_t> ParseTimestamp(std::string_view s);
// An INTEGER or BIGINT (`t`) text form, as Value::FromText reads it (22P02, 22003).
Result<int64_t> ParseIntText(std::string_view s, const SqlType& t);
// A NUMERIC text form, rounded to `t`'s scale and checked against its precision if it has them.
Result<Decimal> ParseNumericText(std::string_view s, const SqlType& t);
std::string FormatTimestamp(int64_t micros);

// -1, 0 or 1 as PostgreSQL orders DOUBLE PRECISION: NaN equals NaN and is greater than every
// other value (infinity included); -0.0 equals 0.0.
inline int CompareDoubles(double a, double b) {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a == b) return 0;
  bool a_nan = a != a, b_nan = b != b;  // one at least is NaN
  return a_nan == b_nan ? 0 : (a_nan ? 1 : -1);
}

class Value {
 public:
  Value() = default;  // NULL
  static Value Null() { return Value(); }
  static Value Bool(bool b) {
    Value v(TypeId::kBool);
    v.i_ = b ? 1 : 0;
    return v;
  }
  static Value Int32(int64_t i) {
    Value v(TypeId::kInt32);
    v.i_ = i;
    return v;
  }
  static Value Int64(int64_t i) {
    Value v(TypeId::kInt64);
    v.i_ = i;
    return v;
  }
  static Value Double(double d) {
    Value v(TypeId::kDouble);
    v.d_ = d;
    return v;
  }
  static Value Timestamp(int64_t micros) {
    Value v(TypeId::kTimestamp);
    v.i_ = micros;
    return v;
  }
  static Value Numeric(Decimal d) {
    Value v(TypeId::kNumeric);
    v.dec_ = d;
    return v;
  }
  static Value Array(std::vector<Value> elems) {
    Value v(TypeId::kArray);
    v.arr_ = std::make_shared<const std::vector<Value>>(std::move(elems));
    return v;
  }
  static Value Text(std::string s) {
    Value v(TypeId::kText);
    v.s_ = std::move(s);
    return v;
  }

  bool is_null() const { return type_ == TypeId::kNull; }
  TypeId type() const { return type_; }
  bool as_bool() const { return i_ != 0; }
  int64_t as_int() const { return i_; }
  double as_double() const { return d_; }
  const std::string& as_text() const { return s_; }
  const Decimal& as_decimal() const { return dec_; }
  const std::vector<Value>& as_array() const { return *arr_; }
  // Numeric value widened to double. REQUIRES: numeric type.
  double ToDouble() const {
    return type_ == TypeId::kDouble    ? d_
           : type_ == TypeId::kNumeric ? DecimalToDouble(dec_)
                                       : static_cast<double>(i_);
  }
  // Numeric value as a decimal. REQUIRES: integer or numeric type.
  Decimal ToDecimal() const { return type_ == TypeId::kNumeric ? dec_ : DecimalFromInt(i_); }

  // Text as PostgreSQL prints it in text format (t/f for bool, shortest round-trip doubles).
  // REQUIRES: !is_null().
  std::string ToText() const;

  // Total order used by ORDER BY, GROUP BY and keys: NULL sorts last (as in PostgreSQL ASC);
  // numerics compare by value across int/double. REQUIRES: comparable types.
  int Compare(const Value& o) const;
  bool operator==(const Value& o) const { return Compare(o) == 0; }
  size_t Hash() const;
  // Bytes held outside the object (string and array storage), for memory accounting.
  size_t HeapBytes() const;

  // Converts to `t` following SQL assignment rules (int range checks -> 22003,
  // text parse failures -> 22P02, varchar length -> 22001).
  Result<Value> CastTo(const SqlType& t) const;
  // Text(std::string(s)).CastTo(t), without the intermediate copies for the common types (a
  // COPY's fields).
  static Result<Value> FromText(std::string_view s, const SqlType& t);

 private:
  explicit Value(TypeId t) : type_(t) {}
  TypeId type_ = TypeId::kNull;
  int64_t i_ = 0;
  double d_ = 0;
  Decimal dec_;
  std::string s_;
  std::shared_ptr<const std::vector<Value>> arr_;  // kArray
};

// Formats a double as PostgreSQL 15 does with extra_float_digits=1 (shortest exact form).
std::string FormatDouble(double d);

}  // namespace wattdb
