#include "query/exec/batch_codec.h"

#include <algorithm>
#include <cstring>

#include "common/bytes.h"
#include "common/codec.h"

namespace wattdb::exec {

namespace {

constexpr uint64_t kMaxRows = 1 << 20;
constexpr uint64_t kMaxCols = 1 << 16;

// How an integer or text column's values follow its NULL bitmap.
enum Layout : uint8_t {
  kPlain = 0,       // each value: a zigzag varint / a length-prefixed text
  kDelta = 1,       // integers: each value's difference from the one before (zigzag varint)
  kDictionary = 2,  // texts: the distinct values (length-prefixed), then one byte per value
};
// A text column of at most this many distinct values travels as a dictionary.
constexpr size_t kMaxDictionary = 32;

size_t VarSize(uint64_t v) { return v < (1u << 7) ? 1 : (64 - static_cast<size_t>(__builtin_clzll(v)) + 6) / 7; }
uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

// Integers go as differences when those are smaller (keys in order, timestamps near each
// other), as judged from the first kSample values.
constexpr size_t kSample = 64;

void EncodeInts(const Vector& v, size_t rows, ByteWriter& w) {
  const int64_t* x = v.ints();
  size_t plain = 0, delta = 0;
  uint64_t prev = 0;
  for (size_t i = 0; i < std::min(rows, kSample); i++) {
    if (v.IsNull(i)) continue;
    plain += VarSize(ZigZag(x[i]));
    delta += VarSize(ZigZag(static_cast<int64_t>(static_cast<uint64_t>(x[i]) - prev)));
    prev = static_cast<uint64_t>(x[i]);
  }
  w.U8(delta < plain ? kDelta : kPlain);
  prev = 0;
  for (size_t i = 0; i < rows; i++) {
    if (v.IsNull(i)) continue;
    w.VarI64(delta < plain ? static_cast<int64_t>(static_cast<uint64_t>(x[i]) - prev) : x[i]);
    prev = static_cast<uint64_t>(x[i]);
  }
}

// Fills `dict` with the distinct non-NULL values of `v` and `codes` with each one's index,
// unless there are more than kMaxDictionary of them, or more than half of the first values
// are distinct (false: the column is not worth a dictionary).
bool DictionaryOf(const Vector& v, size_t rows, std::vector<std::string_view>* dict, std::string* codes) {
  const std::string_view* t = v.texts();
  size_t hit = 0;
  for (size_t i = 0; i < rows; i++) {
    if (v.IsNull(i)) continue;
    if (codes->size() == kSample / 4 && dict->size() > codes->size() / 2) return false;
    // The last value met first; shared bytes (repeats in a column image) without comparing.
    if (dict->empty() || ((*dict)[hit].data() != t[i].data() && (*dict)[hit] != t[i])) {
      hit = 0;
      while (hit < dict->size() && (*dict)[hit] != t[i]) hit++;
      if (hit == dict->size()) {
        if (hit == kMaxDictionary) return false;
        dict->push_back(t[i]);
      }
    }
    codes->push_back(static_cast<char>(hit));
  }
  return true;
}

void EncodeTexts(const Vector& v, size_t rows, ByteWriter& w, std::string* out) {
  std::vector<std::string_view> dict;
  std::string codes;
  if (rows > 1 && DictionaryOf(v, rows, &dict, &codes) && dict.size() < codes.size()) {
    w.U8(kDictionary);
    w.VarU64(dict.size());
    for (std::string_view s : dict) w.Str(s);
    out->append(codes);
    return;
  }
  w.U8(kPlain);
  for (size_t i = 0; i < rows; i++) {
    if (!v.IsNull(i)) w.Str(v.texts()[i]);
  }
}

void EncodeColumn(const Vector& v, size_t rows, ByteWriter& w, std::string* out) {
  w.U8(static_cast<uint8_t>(v.phys()));
  w.U8(static_cast<uint8_t>(v.value_type()));
  bool nulls = v.HasNulls();
  w.U8(nulls ? 1 : 0);
  if (nulls) {
    for (size_t i = 0; i < rows; i += 8) {
      uint8_t bits = 0;
      for (size_t j = 0; j < 8 && i + j < rows; j++) bits |= static_cast<uint8_t>(v.IsNull(i + j) << j);
      w.U8(bits);
    }
  }
  switch (v.phys()) {
    case PhysType::kInt:
      EncodeInts(v, rows, w);
      break;
    case PhysType::kDouble:
      for (size_t i = 0; i < rows; i++) {
        if (v.IsNull(i)) continue;
        uint64_t bits;
        std::memcpy(&bits, &v.doubles()[i], 8);
        w.U64(bits);
      }
      break;
    case PhysType::kDecimal:
      for (size_t i = 0; i < rows; i++) {
        if (v.IsNull(i)) continue;
        const Decimal& d = v.decimals()[i];
        auto u = static_cast<unsigned __int128>(d.v);
        w.U8(static_cast<uint8_t>(d.scale));
        w.U64(static_cast<uint64_t>(u));
        w.U64(static_cast<uint64_t>(u >> 64));
      }
      break;
    case PhysType::kText:
      EncodeTexts(v, rows, w, out);
      break;
    case PhysType::kBoxed: {
      std::vector<Value> vals;
      vals.reserve(rows);
      for (size_t i = 0; i < rows; i++) vals.push_back(v.boxed()[i]);
      std::string enc;
      EncodeRow(vals, &enc);
      w.Str(enc);
      break;
    }
    case PhysType::kEmpty:
      break;
  }
}

Status DecodeColumn(ByteReader& r, size_t rows, Vector* v, const std::shared_ptr<const TextArena>& in_owner) {
  auto bad = [] { return Status::Corruption("column batch does not decode"); };
  uint8_t phys, type, has_nulls;
  if (!r.U8(&phys) || !r.U8(&type) || !r.U8(&has_nulls) || phys > static_cast<uint8_t>(PhysType::kBoxed) ||
      type > static_cast<uint8_t>(TypeId::kArray)) {
    return bad();
  }
  std::vector<uint8_t> null(rows, 0);
  if (has_nulls) {
    for (size_t i = 0; i < rows; i += 8) {
      uint8_t bits;
      if (!r.U8(&bits)) return bad();
      for (size_t j = 0; j < 8 && i + j < rows; j++) null[i + j] = (bits >> j) & 1;
    }
  }
  auto p = static_cast<PhysType>(phys);
  auto t = static_cast<TypeId>(type);
  if (p != PhysType::kEmpty && p != PhysType::kBoxed && PhysOf(t) != p) return bad();
  v->Clear();
  if (rows == 0) return Status::OK();
  if (p == PhysType::kEmpty) {
    v->AppendNulls(rows);
    return Status::OK();
  }
  uint8_t layout = kPlain;
  if (p == PhysType::kInt || p == PhysType::kText) {
    const uint8_t other = p == PhysType::kInt ? kDelta : kDictionary;
    if (!r.U8(&layout) || (layout != kPlain && layout != other)) return bad();
  }
  if (p == PhysType::kInt || p == PhysType::kDouble || p == PhysType::kDecimal) {
    // Straight into the arrays: NULL rows keep their zero entry.
    v->Init(t, rows);
    uint8_t* nulls = v->mutable_nulls();
    uint64_t prev = 0;  // kDelta
    for (size_t i = 0; i < rows; i++) {
      if (null[i]) {
        nulls[i] = 1;
        continue;
      }
      if (p == PhysType::kInt) {
        int64_t x;
        if (!r.VarI64(&x)) return bad();
        if (layout == kDelta) x = static_cast<int64_t>(prev += static_cast<uint64_t>(x));
        v->mutable_ints()[i] = x;
      } else if (p == PhysType::kDouble) {
        uint64_t bits;
        if (!r.U64(&bits)) return bad();
        std::memcpy(&v->mutable_doubles()[i], &bits, 8);
      } else {
        uint8_t scale;
        uint64_t lo, hi;
        if (!r.U8(&scale) || scale > kMaxDecimalScale || !r.U64(&lo) || !r.U64(&hi)) return bad();
        auto u = (static_cast<unsigned __int128>(hi) << 64) | lo;
        v->mutable_decimals()[i] = Decimal{static_cast<Int128>(u), scale};
      }
    }
    return Status::OK();
  }
  if (p == PhysType::kText && layout == kDictionary) {
    // The distinct values are views into the input (kept alive) or copies made once.
    uint64_t n;
    if (!r.VarU64(&n) || n == 0 || n > kMaxDictionary) return bad();
    std::string_view dict[kMaxDictionary];
    std::shared_ptr<TextArena> copies = in_owner ? nullptr : std::make_shared<TextArena>();
    for (uint64_t d = 0; d < n; d++) {
      if (!r.Str(&dict[d])) return bad();
      if (copies) dict[d] = copies->Copy(dict[d]);
    }
    v->Init(TypeId::kText, rows);
    v->KeepArena(in_owner ? in_owner : copies);
    std::string_view* texts = v->mutable_texts();
    uint8_t* nulls = v->mutable_nulls();
    for (size_t i = 0; i < rows; i++) {
      uint8_t code;
      if (null[i]) {
        nulls[i] = 1;
      } else if (r.U8(&code) && code < n) {
        texts[i] = dict[code];
      } else {
        return bad();
      }
    }
    return Status::OK();
  }
  if (p == PhysType::kText && in_owner) {
    v->Init(TypeId::kText, rows);
    v->KeepArena(in_owner);
    std::string_view* texts = v->mutable_texts();
    uint8_t* nulls = v->mutable_nulls();
    for (size_t i = 0; i < rows; i++) {
      if (null[i]) {
        nulls[i] = 1;
      } else if (!r.Str(&texts[i])) {
        return bad();
      }
    }
    return Status::OK();
  }
  v->Reserve(rows);  // appended below, boxed or copied
  if (p == PhysType::kBoxed) {
    std::string_view enc;
    std::vector<Value> vals;
    if (!r.Str(&enc) || !DecodeRow(enc, &vals).ok() || vals.size() != rows) return bad();
    for (auto& x : vals) v->Append(std::move(x));
    return Status::OK();
  }
  for (size_t i = 0; i < rows; i++) {  // texts, copied
    std::string_view s;
    if (null[i]) {
      v->AppendNull();
    } else if (r.Str(&s)) {
      v->AppendText(s);
    } else {
      return bad();
    }
  }
  return Status::OK();
}

}  // namespace

void EncodeBatch(const Batch& b, std::string* out) {
  ByteWriter w(out);
  w.VarU64(b.cols.size());
  w.VarU64(b.rows);
  for (const auto& c : b.cols) EncodeColumn(c, b.rows, w, out);
}

Status DecodeBatch(std::string_view in, Batch* out, const std::shared_ptr<const TextArena>& in_owner) {
  ByteReader r(in);
  uint64_t ncols, rows;
  if (!r.VarU64(&ncols) || !r.VarU64(&rows) || ncols > kMaxCols || rows > kMaxRows) {
    return Status::Corruption("column batch does not decode");
  }
  out->Reset(ncols);
  for (auto& c : out->cols) RETURN_NOT_OK(DecodeColumn(r, rows, &c, in_owner));
  if (!r.empty()) return Status::Corruption("column batch has trailing bytes");
  out->rows = rows;
  return Status::OK();
}

std::string EncodeOperatorStats(const std::vector<OperatorStats>& stats) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(stats.size());
  for (const auto& s : stats) {
    w.VarU64(s.rows);
    w.VarU64(s.batches);
    w.VarU64(static_cast<uint64_t>(s.ms * 1000));
  }
  return out;
}

bool DecodeOperatorStats(std::string_view in, std::vector<OperatorStats>* stats) {
  ByteReader r(in);
  uint64_t n;
  if (!r.VarU64(&n) || n > 10000) return false;
  stats->resize(n);
  for (auto& s : *stats) {
    uint64_t us;
    if (!r.VarU64(&s.rows) || !r.VarU64(&s.batches) || !r.VarU64(&us)) return false;
    s.ms = static_cast<double>(us) / 1000;
  }
  return r.empty();
}

}  // namespace wattdb::exec
