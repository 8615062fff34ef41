// ByteWriter / ByteReader: a minimal little-endian binary encoding (fixed ints, varints,
// length-prefixed strings) used by the row format, the catalog records and plan serialization.
// ByteReader never reads past its input: every getter returns false on truncation.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace wattdb {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}
  void U8(uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U64(uint64_t v) { out_->append(reinterpret_cast<const char*>(&v), 8); }
  void VarU64(uint64_t v) {
    char b[10];
    size_t n = 0;
    while (v >= 0x80) {
      b[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    b[n++] = static_cast<char>(v);
    out_->append(b, n);
  }
  void VarI64(int64_t v) {
    VarU64((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  void Str(std::string_view s) {
    VarU64(s.size());
    out_->append(s.data(), s.size());
  }

 private:
  std::string* out_;  // borrowed; outlives the writer
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool U8(uint8_t* v) {
    if (in_.empty()) return false;
    *v = static_cast<uint8_t>(in_[0]);
    in_.remove_prefix(1);
    return true;
  }
  bool U64(uint64_t* v) {
    if (in_.size() < 8) return false;
    std::memcpy(v, in_.data(), 8);
    in_.remove_prefix(8);
    return true;
  }
  bool VarU64(uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!U8(&b)) return false;
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = r;
        return true;
      }
    }
    return false;
  }
  bool VarI64(int64_t* v) {
    uint64_t u;
    if (!VarU64(&u)) return false;
    *v = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
    return true;
  }
  // The next n bytes, as a view into the input.
  bool Bytes(size_t n, std::string_view* s) {
    if (n > in_.size()) return false;
    *s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool Str(std::string_view* s) {
    uint64_t n;
    if (!VarU64(&n) || n > in_.size()) return false;
    *s = in_.substr(0, n);
    in_.remove_prefix(n);
    return true;
  }
  bool Str(std::string* s) {
    std::string_view v;
    if (!Str(&v)) return false;
    s->assign(v);
    return true;
  }
  bool empty() const { return in_.empty(); }
  std::string_view rest() const { return in_; }

 private:
  std::string_view in_;
};

}  // namespace wattdb
