#include "common/codec.h"

#include <cstring>

#include "common/bytes.h"

namespace wattdb {

namespace {

void PutBigEndian(uint64_t v, std::string* out) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = static_cast<char>(v >> ((7 - i) * 8));
  out->append(b, 8);
}

uint64_t GetBigEndian(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

}  // namespace

void EncodeKeyInt(int64_t v, std::string* out) {
  PutBigEndian(static_cast<uint64_t>(v) ^ (1ULL << 63), out);
}

void EncodeKeyText(std::string_view s, std::string* out) {
  for (char c : s) {
    out->push_back(c);
    if (c == 0) out->push_back(static_cast<char>(0xff));
  }
  out->push_back(0);
  out->push_back(1);
}

void EncodeKeyValue(const Value& v, std::string* out) {
  switch (v.type()) {
    case TypeId::kNull:
      break;
    case TypeId::kBool:
      out->push_back(v.as_bool() ? 1 : 0);
      break;
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      EncodeKeyInt(v.as_int(), out);
      break;
    case TypeId::kDouble: {
      double d = v.as_double();
      if (d == 0) d = 0;  // -0.0 and 0.0 are equal keys
      uint64_t bits;
      std::memcpy(&bits, &d, 8);
      bits = (bits & (1ULL << 63)) ? ~bits : bits | (1ULL << 63);
      PutBigEndian(bits, out);
      break;
    }
    case TypeId::kNumeric:
      EncodeDecimalKey(v.as_decimal(), out);
      break;
    case TypeId::kArray:
      EncodeKeyValue(Value::Text(v.ToText()), out);
      break;  // not a key type
    case TypeId::kText:
      EncodeKeyText(v.as_text(), out);
      break;
  }
}

std::string EncodeKey(const TableSchema& schema, const std::vector<Value>& row) {
  std::string out;
  for (int k : schema.key_columns) EncodeKeyValue(row[k], &out);
  return out;
}

namespace {

// Decodes one value of each of `types` from the front of *key, consuming them.
Result<std::vector<Value>> DecodeKeyColumns(std::string_view* rest,
                                            const std::vector<SqlType>& types) {
  std::string_view& key = *rest;
  std::vector<Value> out;
  auto bad = [] { return Status::Corruption("key does not decode"); };
  for (const auto& t : types) {
    switch (t.id) {
      case TypeId::kArray:
        return bad();  // arrays are never keys
      case TypeId::kNumeric: {
        ASSIGN_OR_RETURN(Decimal d, DecodeDecimalKey(&key));
        out.push_back(Value::Numeric(d));
        break;
      }
      case TypeId::kBool:
        if (key.empty()) return bad();
        out.push_back(Value::Bool(key[0] != 0));
        key.remove_prefix(1);
        break;
      case TypeId::kInt32:
      case TypeId::kInt64:
      case TypeId::kTimestamp: {
        if (key.size() < 8) return bad();
        int64_t i = static_cast<int64_t>(GetBigEndian(key) ^ (1ULL << 63));
        out.push_back(t.id == TypeId::kInt32   ? Value::Int32(i)
                      : t.id == TypeId::kInt64 ? Value::Int64(i)
                                               : Value::Timestamp(i));
        key.remove_prefix(8);
        break;
      }
      case TypeId::kDouble: {
        if (key.size() < 8) return bad();
        uint64_t bits = GetBigEndian(key);
        bits = (bits & (1ULL << 63)) ? bits & ~(1ULL << 63) : ~bits;
        double d;
        std::memcpy(&d, &bits, 8);
        out.push_back(Value::Double(d));
        key.remove_prefix(8);
        break;
      }
      case TypeId::kText: {
        std::string s;
        size_t i = 0;
        for (;;) {
          if (i >= key.size()) return bad();
          char c = key[i];
          if (c != 0) {
            s.push_back(c);
            i++;
            continue;
          }
          if (i + 1 >= key.size()) return bad();
          if (static_cast<uint8_t>(key[i + 1]) == 0xff) {
            s.push_back(0);
            i += 2;
          } else if (key[i + 1] == 1) {
            i += 2;
            break;
          } else {
            return bad();
          }
        }
        out.push_back(Value::Text(std::move(s)));
        key.remove_prefix(i);
        break;
      }
      case TypeId::kNull:
        return bad();
    }
  }
  return out;
}

}  // namespace

Result<std::vector<Value>> DecodeKey(std::string_view key, const std::vector<SqlType>& types) {
  ASSIGN_OR_RETURN(std::vector<Value> out, DecodeKeyColumns(&key, types));
  if (!key.empty()) return Status::Corruption("key does not decode");
  return out;
}

Result<size_t> KeyPrefixBytes(std::string_view key, const std::vector<SqlType>& types) {
  std::string_view rest = key;
  RETURN_NOT_OK(DecodeKeyColumns(&rest, types).status());
  return key.size() - rest.size();
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    if (static_cast<uint8_t>(s.back()) != 0xff) {
      s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
      return s;
    }
    s.pop_back();
  }
  return "";
}

void EncodeIndexColumn(const Value& v, bool desc, std::string* out) {
  size_t start = out->size();
  if (v.is_null()) {
    out->push_back(2);
  } else {
    out->push_back(1);
    EncodeKeyValue(v, out);
  }
  if (desc) {
    for (size_t i = start; i < out->size(); i++) (*out)[i] = static_cast<char>(~(*out)[i]);
  }
}

std::string EncodeIndexKey(const IndexKeySpec& spec, const std::vector<Value>& row) {
  std::string out;
  for (size_t i = 0; i < spec.columns.size(); i++)
    EncodeIndexColumn(row[spec.columns[i]], spec.desc[i], &out);
  return out;
}

bool IndexKeyHasNull(const IndexKeySpec& spec, const std::vector<Value>& row) {
  for (int c : spec.columns) {
    if (row[c].is_null()) return true;
  }
  return false;
}

void AppendRowHeader(size_t columns, std::string* out) { ByteWriter(out).VarU64(columns); }

void AppendRowNull(std::string* out) { out->push_back(static_cast<char>(TypeId::kNull)); }

void AppendRowInt(TypeId type, int64_t v, std::string* out) {
  ByteWriter w(out);
  w.U8(static_cast<uint8_t>(type));
  w.VarI64(v);
}

void AppendRowNumeric(const Decimal& d, std::string* out) {
  ByteWriter w(out);
  w.U8(static_cast<uint8_t>(TypeId::kNumeric));
  auto u = static_cast<unsigned __int128>(d.v);
  w.U8(static_cast<uint8_t>(d.scale));
  w.U64(static_cast<uint64_t>(u));
  w.U64(static_cast<uint64_t>(u >> 64));
}

void AppendRowText(std::string_view s, std::string* out) {
  ByteWriter w(out);
  w.U8(static_cast<uint8_t>(TypeId::kText));
  w.Str(s);
}

void AppendRowValue(const Value& v, std::string* out) {
  switch (v.type()) {
    case TypeId::kNull:
      AppendRowNull(out);
      break;
    case TypeId::kBool: {
      ByteWriter w(out);
      w.U8(static_cast<uint8_t>(TypeId::kBool));
      w.U8(v.as_bool());
      break;
    }
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      AppendRowInt(v.type(), v.as_int(), out);
      break;
    case TypeId::kDouble: {
      ByteWriter w(out);
      w.U8(static_cast<uint8_t>(TypeId::kDouble));
      uint64_t bits;
      double d = v.as_double();
      std::memcpy(&bits, &d, 8);
      w.U64(bits);
      break;
    }
    case TypeId::kText:
      AppendRowText(v.as_text(), out);
      break;
    case TypeId::kArray: {
      std::string elems;
      EncodeRow(v.as_array(), &elems);
      ByteWriter w(out);
      w.U8(static_cast<uint8_t>(TypeId::kArray));
      w.Str(elems);
      break;
    }
    case TypeId::kNumeric:
      AppendRowNumeric(v.as_decimal(), out);
      break;
  }
}

void EncodeRow(const std::vector<Value>& row, std::string* out) {
  AppendRowHeader(row.size(), out);
  for (const auto& v : row) AppendRowValue(v, out);
}

Status DecodeRow(std::string_view in, std::vector<Value>* row) {
  ByteReader r(in);
  uint64_t n;
  auto bad = [] { return Status::Corruption("row does not decode"); };
  if (!r.VarU64(&n) || n > in.size()) return bad();
  row->clear();
  row->reserve(n);
  for (uint64_t i = 0; i < n; i++) {
    uint8_t tag;
    if (!r.U8(&tag)) return bad();
    switch (static_cast<TypeId>(tag)) {
      case TypeId::kNull:
        row->push_back(Value());
        break;
      case TypeId::kBool: {
        uint8_t b;
        if (!r.U8(&b)) return bad();
        row->push_back(Value::Bool(b));
        break;
      }
      case TypeId::kInt32:
      case TypeId::kInt64:
      case TypeId::kTimestamp: {
        int64_t v;
        if (!r.VarI64(&v)) return bad();
        TypeId t = static_cast<TypeId>(tag);
        row->push_back(t == TypeId::kInt32   ? Value::Int32(v)
                       : t == TypeId::kInt64 ? Value::Int64(v)
                                             : Value::Timestamp(v));
        break;
      }
      case TypeId::kDouble: {
        uint64_t bits;
        if (!r.U64(&bits)) return bad();
        double d;
        std::memcpy(&d, &bits, 8);
        row->push_back(Value::Double(d));
        break;
      }
      case TypeId::kText: {
        std::string s;
        if (!r.Str(&s)) return bad();
        row->push_back(Value::Text(std::move(s)));
        break;
      }
      case TypeId::kArray: {
        std::string_view elems;
        std::vector<Value> vals;
        if (!r.Str(&elems) || !DecodeRow(elems, &vals).ok()) return bad();
        row->push_back(Value::Array(std::move(vals)));
        break;
      }
      case TypeId::kNumeric: {
        uint8_t scale;
        uint64_t lo, hi;
        if (!r.U8(&scale) || scale > kMaxDecimalScale || !r.U64(&lo) || !r.U64(&hi)) return bad();
        auto u = (static_cast<unsigned __int128>(hi) << 64) | lo;
        row->push_back(Value::Numeric(Decimal{static_cast<Int128>(u), scale}));
        break;
      }
      default:
        return bad();
    }
  }
  if (!r.empty()) return bad();
  return Status::OK();
}

std::string KeyToString(std::string_view key, const std::vector<SqlType>& types, bool upper) {
  if (key.empty()) return upper ? "+inf" : "-inf";
  auto vals = DecodeKey(key, types);
  if (!vals.ok())
    return "0x" + [&] {
      std::string h;
      for (unsigned char c : key) h += fmt::format("{:02x}", c);
      return h;
    }();
  std::string s = "(";
  for (size_t i = 0; i < vals->size(); i++) {
    if (i) s += ",";
    s += (*vals)[i].ToText();
  }
  return s + ")";
}

}  // namespace wattdb
