#include "query/exec/key_index.h"

#include <cstring>

namespace wattdb::exec {

uint64_t KeyIndex::Hash(std::string_view key) {
  // 8 bytes at a time, multiply and fold (keys are short: a few columns' encodings).
  const uint64_t k = 0x9E3779B97F4A7C15ull;
  uint64_t h = key.size() * k;
  size_t i = 0;
  for (; i + 8 <= key.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, key.data() + i, 8);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  if (i < key.size()) {
    uint64_t w = 0;
    std::memcpy(&w, key.data() + i, key.size() - i);
    h = (h ^ w) * k;
    h ^= h >> 29;
  }
  h *= 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 32);
}

const uint32_t* KeyIndex::Find(std::string_view key) const {
  if (slots_.empty()) return nullptr;
  uint64_t h = Hash(key);
  size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key == kEmpty) return nullptr;
    if (Matches(s, h, key)) return &s.value;
  }
}

void KeyIndex::Insert(std::string_view key, uint32_t value) {
  if ((ends_.size() + 1) * 2 > slots_.size()) Grow();
  bytes_.append(key);
  ends_.push_back(static_cast<uint32_t>(bytes_.size()));
  uint64_t h = Hash(key);
  size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].key != kEmpty) i = (i + 1) & mask;
  Slot& s = slots_[i];
  s.hash = h;
  s.key = static_cast<uint32_t>(ends_.size() - 1);
  s.value = value;
  s.size = static_cast<uint32_t>(key.size());
  if (key.size() <= kInline) std::memcpy(s.inline_key, key.data(), key.size());
}

void KeyIndex::Grow() {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
  size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    size_t i = s.hash & mask;
    while (slots_[i].key != kEmpty) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void IntKeyIndex::Insert(int64_t key, uint32_t value) {
  if ((size_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{});
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t mask = slots_.size() - 1;
      size_t i = Hash(s.key) & mask;
      while (slots_[i].used) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  size_t mask = slots_.size() - 1;
  size_t i = Hash(key) & mask;
  while (slots_[i].used) i = (i + 1) & mask;
  slots_[i] = {key, value, 1};
  size_++;
}

void KeyIndex::Clear() {
  slots_.clear();
  bytes_.clear();
  ends_.clear();
}

}  // namespace wattdb::exec
