#include "master/pg_values.h"

#include <cstring>

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

}  // namespace

void EncodeValue(const Value& v, const SqlType& t, bool binary, std::string* out) {
  if (!binary) {
    out->append(v.ToText());
    return;
  }
  switch (t.id) {
    case TypeId::kBool: out->push_back(v.as_bool() ? 1 : 0); break;
    case TypeId::kInt32: PutBE(static_cast<uint32_t>(static_cast<int32_t>(v.as_int())), 4, out); break;
    case TypeId::kInt64:
    case TypeId::kTimestamp: PutBE(static_cast<uint64_t>(v.as_int()), 8, out); break;
    case TypeId::kDouble: {
      double d = v.ToDouble();
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      PutBE(bits, 8, out);
      break;
    }
    case TypeId::kText:
    case TypeId::kNull: out->append(v.ToText()); break;
  }
}

Result<SqlType> TypeFromOid(int32_t oid) {
  switch (oid) {
    case 0:
    case 705: return SqlType{TypeId::kNull};
    case 16: return SqlType{TypeId::kBool};
    case 21:
    case 23: return SqlType{TypeId::kInt32};
    case 20: return SqlType{TypeId::kInt64};
    case 700:
    case 701: return SqlType{TypeId::kDouble};
    case 1114: return SqlType{TypeId::kTimestamp};
    case 25:
    case 1043:
    case 1042: return SqlType{TypeId::kText};
    default:
      return Status::Sql("0A000", fmt::format("parameter type with OID {} is not supported", oid));
  }
}

Result<Value> DecodeParam(std::string_view bytes, bool binary, const SqlType& t, int32_t oid) {
  if (!binary) return Value::Text(std::string(bytes)).CastTo(t);
  auto bad = [&] {
    return Status::Sql("08P01", fmt::format("incorrect binary data format in parameter of type {}", t.ToString()));
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
    case TypeId::kText:
    case TypeId::kNull: v = Value::Text(std::string(bytes)); break;
  }
  return v.CastTo(t);
}

}  // namespace wattdb::master::pg
