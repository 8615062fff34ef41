#include "query/exec/batch_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/bytes.h"
#include "common/codec.h"

namespace wattdb::exec {

namespace {

constexpr uint64_t kMaxRows = 1 << 20;
constexpr uint64_t kMaxCols = 1 << 16;

// How an integer or text column's values follow its NULL bitmap.
enum Layout : uint8_t {
  kPlain = 0,        // texts: each value length-prefixed
  kDictionary = 2,   // texts: the distinct values (length-prefixed), then one byte per value
                     // (none if there is one value: every row holds it)
  kPacked = 3,       // integers: each row's offset from the smallest value
  kPackedDelta = 4,  // integers: each row's difference from the non-NULL row before, as an
                     // offset from the smallest difference (after the value before the first)
  kBits = 5,         // kPacked with entries of fewer bits than whole bytes would take
  kBitsDelta = 6,    // kPackedDelta so
};
bool IsIntLayout(uint8_t l) {
  return l == kPacked || l == kPackedDelta || l == kBits || l == kBitsDelta;
}
bool IsDelta(uint8_t l) { return l == kPackedDelta || l == kBitsDelta; }
bool IsBits(uint8_t l) { return l == kBits || l == kBitsDelta; }
// What follows a column's types: no NULL bitmap (no NULLs), one bit a row, or nothing
// because every row is NULL (a column the reader does not need, a kEmpty vector).
enum NullFlag : uint8_t { kNoNulls = 0, kNullBitmap = 1, kAllNull = 2 };

static_assert(std::endian::native == std::endian::little,
              "the bit packing below reads bytes as words");

// Bit j of the result: byte p[j] is nonzero (NULL bytes are 0 or 1).
inline uint8_t PackBits8(const uint8_t* p) {
  uint64_t x;
  std::memcpy(&x, p, 8);
  return static_cast<uint8_t>(((x & 0x0101010101010101ULL) * 0x0102040810204080ULL) >> 56);
}

// Byte j of the result (eight bytes at out): bit j of `bits`, as 0 or 1.
inline void UnpackBits8(uint8_t bits, uint8_t* out) {
  uint64_t x = (bits * 0x0101010101010101ULL) & 0x8040201008040201ULL;
  x = ((((x & 0x7F7F7F7F7F7F7F7FULL) + 0x7F7F7F7F7F7F7F7FULL) | x) >> 7) & 0x0101010101010101ULL;
  std::memcpy(out, &x, 8);
}

// A text column of at most this many distinct values travels as a dictionary.
constexpr size_t kMaxDictionary = 32;

// Packed integers: every row has an entry of `width` bytes (0, 1, 2, 4 or 8; a NULL row's
// entry is 0 / no difference), so both sides run one tight loop per column.
uint8_t WidthOf(uint64_t range) {
  return range == 0 ? 0 : range <= 0xff ? 1 : range <= 0xffff ? 2 : range <= 0xffffffff ? 4 : 8;
}

template <typename U, typename Entry>
void PackAs(size_t rows, char* out, const Entry& entry) {
  for (size_t i = 0; i < rows; i++) {
    auto u = static_cast<U>(entry(i));
    std::memcpy(out + i * sizeof(U), &u, sizeof(U));
  }
}

// Appends entry(0..rows) as `width`-byte little-endian integers.
template <typename Entry>
void Pack(size_t rows, uint8_t width, std::string* out, const Entry& entry) {
  size_t at = out->size();
  out->resize(at + rows * width);
  char* p = out->data() + at;
  switch (width) {
    case 1:
      PackAs<uint8_t>(rows, p, entry);
      break;
    case 2:
      PackAs<uint16_t>(rows, p, entry);
      break;
    case 4:
      PackAs<uint32_t>(rows, p, entry);
      break;
    case 8:
      PackAs<uint64_t>(rows, p, entry);
      break;
    default:
      break;
  }
}

// The smallest and largest of some integers (compared by value: std::min's reference kept
// callers' loops from holding them in registers).
struct Range {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  void Add(int64_t y) {
    lo = y < lo ? y : lo;
    hi = y > hi ? y : hi;
  }
  uint64_t span() const { return static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo); }
};

// Integers go as offsets from their smallest value, or as differences from the non-NULL row
// before when those span fewer bits (keys in order, timestamps near each other); in entries
// of whole bytes if that wastes no bits, else of as many bits as the widest needs (up to
// kMaxBitEntry). NULL rows have entry 0: the smallest value, or no change for the differences.
void EncodeInts(const Vector& v, size_t rows, bool nulls, ByteWriter& w, std::string* out) {
  if (const PackedInts* p = v.packed();
      p && !nulls && rows == v.size()) {  // as it lies (a constant: no entries)
    w.U8(p->bits ? kBits : kPacked);
    w.U8(p->bits ? p->bits : p->width);
    w.U64(p->base);
    out->append(p->entries ? p->entries : "",
                p->bits ? BitEntryBytes(rows, p->bits) : rows * p->width);
    return;
  }
  const int64_t* x = v.ints();
  const uint8_t* null = v.nulls();
  auto is_null = [&](size_t i) { return nulls && null[i] != 0; };
  size_t first = 0;
  while (first < rows && is_null(first)) first++;
  if (first == rows) {  // no values: all entries zero
    w.U8(kPacked);
    w.U8(0);
    w.U64(0);
    return;
  }
  auto u = [&](size_t i) { return static_cast<uint64_t>(x[i]); };
  // The values' range and the differences' range between non-NULL neighbours, in one pass.
  Range values, diffs;
  values.Add(x[first]);
  for (size_t i = first + 1, prev = first; i < rows; i++) {
    if (is_null(i)) continue;
    values.Add(x[i]);
    diffs.Add(static_cast<int64_t>(u(i) - u(prev)));
    prev = i;
  }
  if (diffs.lo > diffs.hi) diffs = {0, 0};  // one value
  const bool delta = std::bit_width(diffs.span()) < std::bit_width(values.span());
  const uint64_t span = delta ? diffs.span() : values.span();
  const auto bits = static_cast<uint8_t>(std::bit_width(span));
  const uint8_t width = WidthOf(span);
  const bool bitwise = bits % 8 != 0 && bits < kMaxBitEntry;
  // The value "before" the first is such that the first's difference is the smallest one.
  const auto base = static_cast<uint64_t>(delta ? diffs.lo : values.lo);
  const uint64_t start = u(first) - base;
  w.U8(bitwise ? (delta ? kBitsDelta : kBits) : (delta ? kPackedDelta : kPacked));
  w.U8(bitwise ? bits : width);
  if (delta) w.U64(start);
  w.U64(base);
  if (!nulls && !bitwise && delta) {
    Pack(rows, width, out, [&](size_t i) { return (i == 0 ? 0 : u(i) - u(i - 1) - base); });
  } else if (!nulls && !bitwise) {
    Pack(rows, width, out, [&](size_t i) { return u(i) - base; });
  } else {
    std::vector<uint64_t> e(rows, 0);
    uint64_t prev = start;
    for (size_t i = first; i < rows; i++) {
      if (is_null(i)) continue;
      e[i] = delta ? u(i) - prev - base : u(i) - base;
      prev = u(i);
    }
    if (bitwise) {
      const size_t at = out->size(), bytes = BitEntryBytes(rows, bits);
      out->resize(at + bytes + 8);
      PackBitEntries(e.data(), rows, bits, out->data() + at);
      out->resize(at + bytes);
    } else {
      Pack(rows, width, out, [&](size_t i) { return e[i]; });
    }
  }
}

// The largest of p[0..n) (0 if n is 0). Kept out of line: on its own the loop vectorizes
// (sixteen bytes a step), inlined into the decoder it did not.
[[gnu::noinline]] uint8_t MaxByte(const uint8_t* p, size_t n) {
  uint8_t top = 0;
  for (size_t i = 0; i < n; i++) top = p[i] > top ? p[i] : top;
  return top;
}

// Reads a packed integer column's header and entries (its layout byte read) into *p; *start
// is the first value of a delta layout's column. False if malformed.
bool ReadPacked(ByteReader& r, uint8_t layout, size_t rows, PackedInts* p, uint64_t* start) {
  std::string_view entries;
  uint8_t size = 0;
  if (!r.U8(&size)) return false;
  const bool valid = IsBits(layout) ? size >= 1 && size <= kMaxBitEntry
                                    : size == 0 || size == 1 || size == 2 || size == 4 || size == 8;
  if (!valid) return false;
  (IsBits(layout) ? p->bits : p->width) = size;
  const size_t bytes = p->bits ? BitEntryBytes(rows, p->bits) : rows * p->width;
  if ((IsDelta(layout) && !r.U64(start)) || !r.U64(&p->base) || !r.Bytes(bytes, &entries))
    return false;
  p->entries = entries.data();
  return true;
}

// Reads a packed integer column (its layout byte read) into x[0..rows), whose NULL rows
// (`null`, or none) get 0; false if malformed.
bool DecodeInts(ByteReader& r, uint8_t layout, size_t rows, const uint8_t* null, int64_t* out) {
  PackedInts p;
  uint64_t start = 0;
  if (!ReadPacked(r, layout, rows, &p, &start)) return false;
  UnpackInts(p, rows, out);
  auto* x = reinterpret_cast<uint64_t*>(out);
  if (IsDelta(layout)) {
    uint64_t prev = start;
    if (null) {
      for (size_t i = 0; i < rows; i++) {
        if (!null[i]) prev += x[i];
        x[i] = prev;
      }
    } else {
      for (size_t i = 0; i < rows; i++) x[i] = prev += x[i];
    }
  }
  if (null) {
    for (size_t i = 0; i < rows; i++) x[i] = null[i] ? 0 : x[i];
  }
  return true;
}

// Texts go as a dictionary and a byte per non-NULL value when the vector carries one (a
// column image's) or has few distinct values; else each one length-prefixed.
void EncodeTexts(const Vector& v, size_t rows, bool nulls, ByteWriter& w, std::string* out) {
  std::shared_ptr<const TextDictionary> found;
  const TextDictionary* d = v.dictionary();
  if (d && (d->values.size() > kMaxDictionary || d->codes.size() < rows)) d = nullptr;
  if (!d && rows > 1) {
    found = FindDictionary(v, rows, kMaxDictionary);
    d = found.get();
  }
  if (d && d->values.size() < rows) {
    w.U8(kDictionary);
    w.VarU64(d->values.size());
    for (std::string_view s : d->values) w.Str(s);
    if (d->values.size() == 1) return;  // a batch of one value (and NULLs) needs no codes
    if (!nulls) {
      out->append(reinterpret_cast<const char*>(d->codes.data()), rows);
      return;
    }
    for (size_t i = 0; i < rows; i++) {
      if (!v.IsNull(i)) out->push_back(static_cast<char>(d->codes[i]));
    }
    return;
  }
  w.U8(kPlain);
  for (size_t i = 0; i < rows; i++) {
    if (!v.IsNull(i)) w.Str(v.texts()[i]);
  }
}

void EncodeColumnTo(const Vector& v, size_t rows, ByteWriter& w, std::string* out) {
  if (const std::string* e = v.encoding(); e && rows == v.size()) {  // made once, sent as it is
    out->append(*e);
    return;
  }
  w.U8(static_cast<uint8_t>(v.phys()));
  w.U8(static_cast<uint8_t>(v.value_type()));
  if (v.phys() == PhysType::kEmpty) {  // only NULLs: nothing follows
    w.U8(rows > 0 ? kAllNull : kNoNulls);
    return;
  }
  bool nulls = v.HasNulls();
  w.U8(nulls ? kNullBitmap : kNoNulls);
  if (rows == 0) return;  // nothing follows (as the decoder expects)
  if (nulls) {
    const uint8_t* null = v.nulls();
    size_t full = rows / 8 * 8;
    size_t at = out->size();
    out->resize(at + (rows + 7) / 8);
    auto* bits = reinterpret_cast<uint8_t*>(out->data() + at);
    for (size_t i = 0; i < full; i += 8) *bits++ = PackBits8(null + i);
    if (full < rows) {
      uint8_t last = 0;
      for (size_t j = 0; full + j < rows; j++) last |= static_cast<uint8_t>(null[full + j] << j);
      *bits = last;
    }
  }
  switch (v.phys()) {
    case PhysType::kInt:
      EncodeInts(v, rows, nulls, w, out);
      break;
    case PhysType::kDouble:  // every row (a NULL row's entry is zero)
      out->append(reinterpret_cast<const char*>(v.doubles()), rows * sizeof(double));
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
      EncodeTexts(v, rows, nulls, w, out);
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

// A column's NULL map as read: null[i] is 1 for a NULL row (8 spare zero entries so that
// bits unpack in whole words), `values` the number of non-NULL rows.
struct NullMap {
  bool has_nulls = false;
  std::vector<uint8_t> null;  // empty when !has_nulls
  size_t values = 0;
  bool is_null(size_t i) const { return has_nulls && null[i] != 0; }
};

// Ints or doubles. Packed ints stay packed (Vector::packed) when the input is kept alive.
bool DecodeNumbers(ByteReader& r, PhysType p, TypeId t, size_t rows, NullMap& nm, Vector* v,
                   const std::shared_ptr<const TextArena>& in_owner) {
  uint8_t layout = 0;
  if (p == PhysType::kInt && (!r.U8(&layout) || !IsIntLayout(layout))) return false;
  if ((layout == kPacked || layout == kBits) && in_owner) {
    // Offsets stay where they lie until something reads the values (Vector::packed).
    PackedInts packed;
    if (!ReadPacked(r, layout, rows, &packed, nullptr)) return false;
    if (nm.has_nulls) nm.null.resize(rows);
    v->InitPacked(t, rows, std::move(nm.null), packed, in_owner);
    return true;
  }
  // Every row's entry straight into the array; NULL rows' entries then set to zero.
  v->InitUnset(t, rows);
  if (p == PhysType::kInt) {
    if (!DecodeInts(r, layout, rows, nm.has_nulls ? nm.null.data() : nullptr, v->mutable_ints()))
      return false;
  } else {
    std::string_view raw;
    if (!r.Bytes(rows * sizeof(double), &raw)) return false;
    std::memcpy(v->mutable_doubles(), raw.data(), raw.size());
  }
  if (nm.has_nulls) {
    std::memcpy(v->mutable_nulls(), nm.null.data(), rows);
    if (p == PhysType::kDouble) {
      double* d = v->mutable_doubles();
      for (size_t i = 0; i < rows; i++) d[i] = nm.null[i] ? 0 : d[i];
    }
  }
  return true;
}

// Straight into the array: NULL rows keep their zero entry.
bool DecodeDecimals(ByteReader& r, TypeId t, size_t rows, const NullMap& nm, Vector* v) {
  v->Init(t, rows);
  uint8_t* nulls = v->mutable_nulls();
  Decimal* decimals = v->mutable_decimals();
  for (size_t i = 0; i < rows; i++) {
    if (nm.is_null(i)) {
      nulls[i] = 1;
      continue;
    }
    uint8_t scale;
    uint64_t lo, hi;
    if (!r.U8(&scale) || scale > kMaxDecimalScale || !r.U64(&lo) || !r.U64(&hi)) return false;
    auto u = (static_cast<unsigned __int128>(hi) << 64) | lo;
    decimals[i] = Decimal{static_cast<Int128>(u), scale};
  }
  return true;
}

// Dictionary-coded texts. The distinct values are views into the input (kept alive) or
// copies made once.
bool DecodeDictionary(ByteReader& r, size_t rows, const NullMap& nm, Vector* v,
                      const std::shared_ptr<const TextArena>& in_owner) {
  uint64_t n;
  if (!r.VarU64(&n) || n == 0 || n > kMaxDictionary) return false;
  std::string_view dict[kMaxDictionary];
  std::shared_ptr<TextArena> copies = in_owner ? nullptr : std::make_shared<TextArena>();
  for (uint64_t d = 0; d < n; d++) {
    if (!r.Str(&dict[d])) return false;
    if (copies) dict[d] = copies->Copy(dict[d]);
  }
  std::string_view codes;  // one per non-NULL row; none when every row holds the one value
  if (n > 1 && !r.Bytes(nm.values, &codes)) return false;
  auto* code = reinterpret_cast<const uint8_t*>(codes.data());
  if (n > 1 && MaxByte(code, nm.values) >= n) return false;
  // The rows' views are laid out when something reads them; operators that work per
  // value (length(), grouping) read the codes.
  auto attached = std::make_shared<TextDictionary>();
  attached->values.assign(dict, dict + n);
  std::vector<uint8_t> nulls;  // empty: none
  if (nm.has_nulls) nulls.assign(nm.null.begin(), nm.null.begin() + rows);
  if (n == 1) {
    attached->codes.assign(rows, 0);  // every row the one value
  } else if (!nm.has_nulls) {
    attached->codes.assign(code, code + rows);
  } else {
    attached->codes.assign(rows, 0);
    for (size_t i = 0, k = 0; i < rows; i++) {
      if (!nm.null[i]) attached->codes[i] = code[k++];
    }
  }
  v->InitFromDictionary(TypeId::kText, std::move(nulls), std::move(attached),
                        in_owner ? in_owner : copies);
  return true;
}

// Plain texts: views into the input when it is kept alive, else copies.
bool DecodePlainTexts(ByteReader& r, size_t rows, const NullMap& nm, Vector* v,
                      const std::shared_ptr<const TextArena>& in_owner) {
  if (in_owner) {
    v->InitUnset(TypeId::kText, rows);
    v->KeepArena(in_owner);
    std::string_view* texts = v->mutable_texts();
    uint8_t* nulls = v->mutable_nulls();
    for (size_t i = 0; i < rows; i++) {
      if (nm.is_null(i)) {
        nulls[i] = 1;
        texts[i] = std::string_view();
      } else if (!r.Str(&texts[i])) {
        return false;
      }
    }
    return true;
  }
  v->Reserve(rows);
  for (size_t i = 0; i < rows; i++) {
    std::string_view s;
    if (nm.is_null(i)) {
      v->AppendNull();
    } else if (r.Str(&s)) {
      v->AppendText(s);
    } else {
      return false;
    }
  }
  return true;
}

bool DecodeBoxed(ByteReader& r, size_t rows, Vector* v) {
  v->Reserve(rows);
  std::string_view enc;
  std::vector<Value> vals;
  if (!r.Str(&enc) || !DecodeRow(enc, &vals).ok() || vals.size() != rows) return false;
  for (auto& x : vals) v->Append(std::move(x));
  return true;
}

// The NULL bitmap, if the column has one.
bool ReadNullMap(ByteReader& r, size_t rows, bool has_nulls, NullMap* nm) {
  nm->has_nulls = has_nulls;
  nm->values = rows;
  if (!has_nulls) return true;
  nm->null.assign(rows + 8, 0);
  std::string_view bits;
  if (!r.Bytes((rows + 7) / 8, &bits)) return false;
  for (size_t i = 0; i < bits.size(); i++)
    UnpackBits8(static_cast<uint8_t>(bits[i]), nm->null.data() + 8 * i);
  std::fill(nm->null.begin() + rows, nm->null.end(), 0);  // bits past the last row mean nothing
  for (size_t i = 0; i < rows; i++) nm->values -= nm->null[i];
  return true;
}

Status DecodeColumn(ByteReader& r, size_t rows, Vector* v,
                    const std::shared_ptr<const TextArena>& in_owner) {
  auto bad = [] { return Status::Corruption("column batch does not decode"); };
  uint8_t phys, type, flag;
  if (!r.U8(&phys) || !r.U8(&type) || !r.U8(&flag) ||
      phys > static_cast<uint8_t>(PhysType::kBoxed) ||
      type > static_cast<uint8_t>(TypeId::kArray) || flag > kAllNull) {
    return bad();
  }
  if (flag == kAllNull) {
    if (phys != static_cast<uint8_t>(PhysType::kEmpty)) return bad();
    v->Clear();
    v->AppendNulls(rows);
    return Status::OK();
  }
  NullMap nm;
  if (!ReadNullMap(r, rows, flag == kNullBitmap, &nm)) return bad();
  auto p = static_cast<PhysType>(phys);
  auto t = static_cast<TypeId>(type);
  if (p != PhysType::kEmpty && p != PhysType::kBoxed && PhysOf(t) != p) return bad();
  v->Clear();
  if (rows == 0) return Status::OK();
  bool ok = true;
  switch (p) {
    case PhysType::kEmpty:
      v->AppendNulls(rows);
      break;
    case PhysType::kInt:
    case PhysType::kDouble:
      ok = DecodeNumbers(r, p, t, rows, nm, v, in_owner);
      break;
    case PhysType::kDecimal:
      ok = DecodeDecimals(r, t, rows, nm, v);
      break;
    case PhysType::kText: {
      uint8_t layout;
      if (!r.U8(&layout) || (layout != kPlain && layout != kDictionary)) return bad();
      ok = layout == kDictionary ? DecodeDictionary(r, rows, nm, v, in_owner)
                                 : DecodePlainTexts(r, rows, nm, v, in_owner);
      break;
    }
    case PhysType::kBoxed:
      ok = DecodeBoxed(r, rows, v);
      break;
  }
  return ok ? Status::OK() : bad();
}

}  // namespace

void EncodeBatch(const Batch& b, std::string* out) {
  ByteWriter w(out);
  w.VarU64(b.cols.size());
  w.VarU64(b.rows);
  for (const auto& c : b.cols) EncodeColumnTo(c, b.rows, w, out);
}

void EncodeColumn(const Vector& v, size_t rows, std::string* out) {
  ByteWriter w(out);
  EncodeColumnTo(v, rows, w, out);
}

Status DecodeBatch(std::string_view in, Batch* out,
                   const std::shared_ptr<const TextArena>& in_owner) {
  ByteReader r(in);
  uint64_t ncols, rows;
  if (!r.VarU64(&ncols) || !r.VarU64(&rows) || ncols > kMaxCols || rows > kMaxRows) {
    return Status::Corruption("column batch does not decode");
  }
  out->Reset(ncols);
  for (auto& c : out->cols) {
    Status s = DecodeColumn(r, rows, &c, in_owner);
    if (!s.ok()) {
      out->Reset(0);  // nothing half-written (with unset entries) is left behind
      return s;
    }
  }
  if (!r.empty()) {
    out->Reset(0);
    return Status::Corruption("column batch has trailing bytes");
  }
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
