#include "query/exec/row_decode.h"

#include <cstring>

#include "common/bytes.h"
#include "common/codec.h"

namespace wattdb::exec {

namespace {

// Moves past one encoded value (its tag already read).
bool SkipValue(ByteReader& r, uint8_t tag) {
  switch (static_cast<TypeId>(tag)) {
    case TypeId::kNull:
      return true;
    case TypeId::kBool: {
      uint8_t b;
      return r.U8(&b);
    }
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kTimestamp: {
      uint64_t v;
      return r.VarU64(&v);
    }
    case TypeId::kDouble: {
      uint64_t v;
      return r.U64(&v);
    }
    case TypeId::kText:
    case TypeId::kArray: {
      std::string_view s;
      return r.Str(&s);
    }
    case TypeId::kNumeric: {
      uint8_t scale;
      uint64_t lo, hi;
      return r.U8(&scale) && scale <= kMaxDecimalScale && r.U64(&lo) && r.U64(&hi);
    }
  }
  return false;
}

}  // namespace

Result<size_t> EncodedRowWidth(std::string_view in) {
  ByteReader r(in);
  uint64_t n;
  if (!r.VarU64(&n) || n > in.size()) return Status::Corruption("row does not decode");
  return static_cast<size_t>(n);
}

Status AppendEncodedRow(std::string_view in, Batch* out, const std::vector<bool>* used) {
  ByteReader r(in);
  uint64_t n;
  auto bad = [] { return Status::Corruption("row does not decode"); };
  if (!r.VarU64(&n) || n > in.size()) return bad();
  if (n != out->cols.size()) return Status::Corruption("row width does not match the table");
  // Typed appends go straight into the columns; those of a row found malformed midway are
  // taken back.
  size_t c = 0;
  for (; c < n; c++) {
    Vector& col = out->cols[c];
    uint8_t tag;
    if (!r.U8(&tag)) break;
    if (used && c < used->size() && !(*used)[c]) {
      if (!SkipValue(r, tag)) break;
      continue;
    }
    bool ok = true;
    switch (static_cast<TypeId>(tag)) {
      case TypeId::kNull:
        col.AppendNull();
        break;
      case TypeId::kBool: {
        uint8_t b;
        ok = r.U8(&b);
        if (ok) col.AppendInt(TypeId::kBool, b != 0);
        break;
      }
      case TypeId::kInt32:
      case TypeId::kInt64:
      case TypeId::kTimestamp: {
        int64_t v;
        ok = r.VarI64(&v);
        if (ok) col.AppendInt(static_cast<TypeId>(tag), v);
        break;
      }
      case TypeId::kDouble: {
        uint64_t bits;
        ok = r.U64(&bits);
        if (ok) {
          double d;
          std::memcpy(&d, &bits, 8);
          col.AppendDouble(d);
        }
        break;
      }
      case TypeId::kText: {
        std::string_view s;
        ok = r.Str(&s);
        if (ok) col.AppendText(s);
        break;
      }
      case TypeId::kNumeric: {
        uint8_t scale;
        uint64_t lo, hi;
        ok = r.U8(&scale) && scale <= kMaxDecimalScale && r.U64(&lo) && r.U64(&hi);
        if (ok) {
          auto u = (static_cast<unsigned __int128>(hi) << 64) | lo;
          col.AppendDecimal(Decimal{static_cast<Int128>(u), scale});
        }
        break;
      }
      case TypeId::kArray: {
        std::string_view elems;
        std::vector<Value> vals;
        ok = r.Str(&elems) && DecodeRow(elems, &vals).ok();
        if (ok) col.Append(Value::Array(std::move(vals)));
        break;
      }
      default:
        ok = false;
    }
    if (!ok) break;
  }
  if (c == n && r.empty()) {
    out->rows++;
    return Status::OK();
  }
  for (size_t i = 0; i < c + 1 && i < n; i++) {
    if (!used || i >= used->size() || (*used)[i]) out->cols[i].Truncate(out->rows);
  }
  return bad();
}

void PadUnused(const std::vector<bool>& used, Batch* out) {
  for (size_t c = 0; c < out->cols.size() && c < used.size(); c++) {
    if (!used[c]) out->cols[c].AppendNulls(out->rows - out->cols[c].size());
  }
}

}  // namespace wattdb::exec
