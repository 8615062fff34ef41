// KeyIndex: encoded keys (key_encoding.h) to 32-bit values, for hash aggregation's groups. One
// flat open-addressing table of (hash, value) slots and the keys' bytes in one buffer: a
// lookup costs one or two cache misses instead of a bucket list walk and a string per key.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace wattdb::exec {

class KeyIndex {
 public:
  // The value stored for `key`, or nullptr.
  const uint32_t* Find(std::string_view key) const;
  // Stores `value` for `key`. REQUIRES: Find(key) == nullptr.
  void Insert(std::string_view key, uint32_t value);
  size_t size() const { return ends_.size(); }
  void Clear();
  // Memory held, for work_mem accounting.
  size_t bytes() const {
    return slots_.capacity() * sizeof(Slot) + bytes_.capacity() + ends_.capacity() * 4;
  }

  static uint64_t Hash(std::string_view key);

 private:
  // Keys of up to kInline bytes (one or two encoded columns) are compared in the slot itself.
  static constexpr size_t kInline = 16;
  struct Slot {
    uint64_t hash = 0;
    uint32_t key = kEmpty;  // index into ends_
    uint32_t value = 0;
    uint32_t size = 0;
    char inline_key[kInline];
  };
  bool Matches(const Slot& s, uint64_t h, std::string_view key) const {
    if (s.hash != h || s.size != key.size()) return false;
    if (key.size() <= kInline) return std::memcmp(s.inline_key, key.data(), key.size()) == 0;
    return KeyAt(s.key) == key;
  }
  static constexpr uint32_t kEmpty = UINT32_MAX;
  std::string_view KeyAt(uint32_t i) const {
    uint32_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_).substr(begin, ends_[i] - begin);
  }
  void Grow();

  std::vector<Slot> slots_;  // a power of two in size, at most half full
  std::string bytes_;
  std::vector<uint32_t> ends_;
};

// IntKeyIndex: 64-bit integer keys to 32-bit values, in one flat open-addressing table of
// 16-byte slots (a table for 10,000 keys fits in a core's L2 cache).
class IntKeyIndex {
 public:
  const uint32_t* Find(int64_t key) const {
    if (slots_.empty()) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = Hash(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  uint32_t* Find(int64_t key) {
    return const_cast<uint32_t*>(static_cast<const IntKeyIndex*>(this)->Find(key));
  }
  // Starts loading key's slot into the cache (for a Find a few keys later).
  void Prefetch(int64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[Hash(key) & (slots_.size() - 1)]);
  }
  // REQUIRES: Find(key) == nullptr.
  void Insert(int64_t key, uint32_t value);
  size_t size() const { return size_; }
  size_t bytes() const { return slots_.capacity() * sizeof(Slot); }

 private:
  struct Slot {
    int64_t key = 0;
    uint32_t value = 0;
    uint32_t used = 0;
  };
  static uint64_t Hash(int64_t key) {
    uint64_t h = static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
  }
  std::vector<Slot> slots_;  // a power of two in size, at most half full
  size_t size_ = 0;
};

}  // namespace wattdb::exec
