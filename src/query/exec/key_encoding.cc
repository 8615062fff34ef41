#include "query/exec/key_encoding.h"

#include <limits>

namespace wattdb::exec {

namespace {

void PutDecimal(const Decimal& d, std::string* out) {
  Decimal n = Normalize(d);  // 1.0 and 1.00 meet
  out->push_back(static_cast<char>(n.scale));
  out->append(reinterpret_cast<const char*>(&n.v), 16);
}

void PutDouble(double d, std::string* out) {
  if (d == 0) d = 0;                                         // -0.0 meets 0.0
  if (d != d) d = std::numeric_limits<double>::quiet_NaN();  // NaNs meet (they group together)
  out->append(reinterpret_cast<const char*>(&d), 8);
}

// Appends the encoding of a non-NULL value of family f.
void PutValue(Family f, const Value& v, std::string* out) {
  switch (f) {
    case Family::kNumeric:
      PutDecimal(v.ToDecimal(), out);
      return;
    case Family::kDouble:
      PutDouble(v.ToDouble(), out);
      return;
    case Family::kText: {
      const std::string& s = v.as_text();
      uint64_t n = s.size();
      out->append(reinterpret_cast<const char*>(&n), 8);
      out->append(s);
      return;
    }
    default: {
      int64_t i = v.as_int();
      out->append(reinterpret_cast<const char*>(&i), 8);
    }
  }
}

}  // namespace

Family FamilyOf(TypeId t) {
  switch (t) {
    case TypeId::kInt32:
    case TypeId::kInt64:
      return Family::kInt;
    case TypeId::kNumeric:
      return Family::kNumeric;
    case TypeId::kDouble:
      return Family::kDouble;
    case TypeId::kText:
      return Family::kText;
    case TypeId::kBool:
      return Family::kBool;
    case TypeId::kTimestamp:
      return Family::kTimestamp;
    default:
      return Family::kOther;
  }
}

bool PutKey(Family f, const Vector& v, size_t r, std::string* out) {
  if (v.IsNull(r)) return false;
  switch (v.phys()) {
    case PhysType::kDouble:
      if (f == Family::kDouble) {
        PutDouble(v.doubles()[r], out);
        return true;
      }
      break;
    case PhysType::kInt:
      if (f == Family::kInt || f == Family::kBool || f == Family::kTimestamp) {
        out->append(reinterpret_cast<const char*>(&v.ints()[r]), 8);
        return true;
      }
      break;
    case PhysType::kDecimal:
      if (f == Family::kNumeric) {
        PutDecimal(v.decimals()[r], out);
        return true;
      }
      break;
    case PhysType::kText:
      if (f == Family::kText) {
        uint64_t n = v.texts()[r].size();
        out->append(reinterpret_cast<const char*>(&n), 8);
        out->append(v.texts()[r]);
        return true;
      }
      break;
    default:
      break;
  }
  PutValue(f, v.GetValue(r), out);
  return true;
}

}  // namespace wattdb::exec
