#include "master/pgwire/pg_values.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/sqlstate.h"

namespace wattdb::master::pg {

namespace {

void PutBE(uint64_t v, int bytes, std::string* out) {
  for (int i = bytes - 1; i >= 0; i--) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetBE(std::string_view b) {
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return v;
}

// NUMERIC's binary form: int16 ndigits, weight, sign (0 or 0x4000), dscale, then ndigits
// base-10000 digits; the value is sum(digit[i] * 10000^(weight - i)).
void EncodeNumeric(const Decimal& d, std::string* out) {
  std::string text = FormatDecimal(d);
  if (text[0] == '-') text.erase(0, 1);
  size_t point = text.find('.');
  std::string ip = text.substr(0, point),
              fp = point == std::string::npos ? "" : text.substr(point + 1);
  if (ip == "0") ip.clear();
  ip.insert(0, (4 - ip.size() % 4) % 4, '0');
  fp.append((4 - fp.size() % 4) % 4, '0');
  std::vector<int> groups;
  for (size_t i = 0; i < ip.size(); i += 4) groups.push_back(std::stoi(ip.substr(i, 4)));
  int weight = static_cast<int>(groups.size()) - 1;
  for (size_t i = 0; i < fp.size(); i += 4) groups.push_back(std::stoi(fp.substr(i, 4)));
  size_t lead = 0;
  while (lead < groups.size() && groups[lead] == 0) lead++;
  groups.erase(groups.begin(), groups.begin() + lead);
  weight -= static_cast<int>(lead);
  while (!groups.empty() && groups.back() == 0) groups.pop_back();
  if (groups.empty()) weight = 0;
  PutBE(groups.size(), 2, out);
  PutBE(static_cast<uint16_t>(weight), 2, out);
  PutBE(d.v < 0 && !groups.empty() ? 0x4000 : 0, 2, out);
  PutBE(static_cast<uint16_t>(d.scale), 2, out);
  for (int g : groups) PutBE(static_cast<uint16_t>(g), 2, out);
}

Result<Decimal> DecodeNumeric(std::string_view b) {
  auto bad = [] {
    return Status::Sql(sqlstate::kProtocolViolation,
                       "incorrect binary data format in numeric parameter");
  };
  if (b.size() < 8) return bad();
  int n = static_cast<int>(GetBE(b.substr(0, 2)));
  int weight = static_cast<int16_t>(GetBE(b.substr(2, 2)));
  int sign = static_cast<int>(GetBE(b.substr(4, 2)));
  int dscale = static_cast<int>(GetBE(b.substr(6, 2)));
  if (sign == 0xC000)
    return Status::Sql(sqlstate::kFeatureNotSupported, "numeric NaN is not supported");
  if ((sign != 0 && sign != 0x4000) || b.size() != 8 + 2 * static_cast<size_t>(n) || dscale > 1000)
    return bad();
  std::string ip, fp;
  for (int i = 0; i < n; i++) {
    int g = static_cast<int>(GetBE(b.substr(8 + 2 * i, 2)));
    if (g > 9999) return bad();
    (weight - i >= 0 ? ip : fp) += fmt::format("{:04}", g);
  }
  if (n > 0 && weight >= n) ip.append(4 * static_cast<size_t>(weight - n + 1), '0');
  if (weight < -1) fp.insert(0, 4 * static_cast<size_t>(-weight - 1), '0');
  std::string text = (sign ? "-" : "") + (ip.empty() ? "0" : ip) + (fp.empty() ? "" : "." + fp);
  ASSIGN_OR_RETURN(Decimal d, ParseDecimal(text));
  return Rescale(d, dscale);
}

}  // namespace

void EncodeValue(const Value& v, const SqlType& t, bool binary, std::string* out) {
  if (!binary) {
    out->append(v.ToText());
    return;
  }
  switch (t.id) {
    case TypeId::kBool:
      out->push_back(v.as_bool() ? 1 : 0);
      break;
    case TypeId::kInt32:
      PutBE(static_cast<uint32_t>(static_cast<int32_t>(v.as_int())), 4, out);
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      PutBE(static_cast<uint64_t>(v.as_int()), 8, out);
      break;
    case TypeId::kDouble: {
      double d = v.ToDouble();
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      PutBE(bits, 8, out);
      break;
    }
    case TypeId::kNumeric:
      EncodeNumeric(v.as_decimal(), out);
      break;
    case TypeId::kArray: {
      // ndim, has-nulls, element oid, (length, lower bound), then each element length-prefixed.
      const auto& elems = v.as_array();
      SqlType et = t.element();
      bool nulls =
          std::any_of(elems.begin(), elems.end(), [](const Value& e) { return e.is_null(); });
      PutBE(elems.empty() ? 0 : 1, 4, out);
      PutBE(nulls ? 1 : 0, 4, out);
      PutBE(static_cast<uint32_t>(et.PgOid()), 4, out);
      if (!elems.empty()) {
        PutBE(elems.size(), 4, out);
        PutBE(1, 4, out);
      }
      for (const auto& e : elems) {
        if (e.is_null()) {
          PutBE(0xffffffffu, 4, out);
          continue;
        }
        std::string b;
        EncodeValue(e, et, true, &b);
        PutBE(b.size(), 4, out);
        out->append(b);
      }
      break;
    }
    case TypeId::kText:
    case TypeId::kNull:
      out->append(v.ToText());
      break;
  }
}

Result<SqlType> TypeFromOid(int32_t oid) {
  switch (oid) {
    case 0:
    case 705:
      return SqlType{TypeId::kNull};
    case 16:
      return SqlType{TypeId::kBool};
    case 21:
    case 23:
      return SqlType{TypeId::kInt32};
    case 20:
      return SqlType{TypeId::kInt64};
    case 700:
    case 701:
      return SqlType{TypeId::kDouble};
    case 1114:
      return SqlType{TypeId::kTimestamp};
    case 1700:
      return SqlType{TypeId::kNumeric};
    case 25:
    case 1043:
    case 1042:
      return SqlType{TypeId::kText};
    default:
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         fmt::format("parameter type with OID {} is not supported", oid));
  }
}

Result<Value> DecodeParam(std::string_view bytes, bool binary, const SqlType& t, int32_t oid) {
  if (!binary) return Value::Text(std::string(bytes)).CastTo(t);
  auto bad = [&] {
    return Status::Sql(
        sqlstate::kProtocolViolation,
        fmt::format("incorrect binary data format in parameter of type {}", t.ToString()));
  };
  // The client's declared type says what the bytes are; convert to the inferred type after.
  SqlType wire = t;
  if (oid != 0 && oid != 705) {
    ASSIGN_OR_RETURN(wire, TypeFromOid(oid));
  }
  Value v;
  switch (wire.id) {
    case TypeId::kBool:
      if (bytes.size() != 1) return bad();
      v = Value::Bool(bytes[0] != 0);
      break;
    case TypeId::kInt32:
    case TypeId::kInt64:
      if (bytes.size() == 2) {
        v = Value::Int32(static_cast<int16_t>(GetBE(bytes)));
      } else if (bytes.size() == 4) {
        v = Value::Int32(static_cast<int32_t>(GetBE(bytes)));
      } else if (bytes.size() == 8) {
        v = Value::Int64(static_cast<int64_t>(GetBE(bytes)));
      } else {
        return bad();
      }
      break;
    case TypeId::kDouble:
      if (bytes.size() == 8) {
        uint64_t bits = GetBE(bytes);
        double d;
        std::memcpy(&d, &bits, 8);
        v = Value::Double(d);
      } else if (bytes.size() == 4) {
        uint32_t bits = static_cast<uint32_t>(GetBE(bytes));
        float f;
        std::memcpy(&f, &bits, 4);
        v = Value::Double(f);
      } else {
        return bad();
      }
      break;
    case TypeId::kTimestamp:
      if (bytes.size() != 8) return bad();
      v = Value::Timestamp(static_cast<int64_t>(GetBE(bytes)));
      break;
    case TypeId::kNumeric: {
      ASSIGN_OR_RETURN(Decimal d, DecodeNumeric(bytes));
      v = Value::Numeric(d);
      break;
    }
    case TypeId::kArray:
      return Status::Sql(sqlstate::kFeatureNotSupported,
                         "array parameters in binary format are not supported");
    case TypeId::kText:
    case TypeId::kNull:
      v = Value::Text(std::string(bytes));
      break;
  }
  return v.CastTo(t);
}

}  // namespace wattdb::master::pg
