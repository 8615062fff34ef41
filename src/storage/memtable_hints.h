// RepeatedRowKeys: which rows' new versions a segment's memtable inserts next to the row's
// previous one (RocksDB's memtable_insert_with_hint_prefix_extractor).
//
// A row's versions share a prefix, its user key without the version timestamp (mvcc.h), and
// a new version sorts just before the previous one. For a prefix in its domain the memtable
// keeps the place of the last insert and starts the next insert of that prefix there instead
// of at the top of the skip list: a hot row updated again and again (a branch or teller
// balance) is inserted in a few steps. Each hinted prefix costs the memtable ~250 bytes, so
// the domain holds only keys seen again recently: a direct-mapped table of fingerprints of
// the last row keys inserted says whether this key came by before. A key met once (a load, a
// random update of a large table) never takes a hint; a false "seen" (two keys with the same
// slot and fingerprint) only costs one hint.
//
// One instance per column family; RocksDB calls InDomain once per memtable insert, from the
// writer that inserts (several may, one after another: the slots are relaxed atomics).
#pragma once

#include <rocksdb/slice_transform.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <string_view>

#include "storage/mvcc.h"

namespace wattdb::storage {

class RepeatedRowKeys : public rocksdb::SliceTransform {
 public:
  static constexpr size_t kSlots = 1024;

  const char* Name() const override { return "wattdb.RepeatedRowKeys"; }
  // The row key without its version timestamp. REQUIRES: InDomain(key).
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), key.size() - 8);
  }
  // True for a row version whose row key was inserted lately (and remembers this one).
  bool InDomain(const rocksdb::Slice& key) const override {
    if (key.size() <= 9 || key[0] != kRowSpace) return false;
    uint64_t h = std::hash<std::string_view>()(std::string_view(key.data(), key.size() - 8));
    uint32_t fingerprint = static_cast<uint32_t>(h >> 32) | 1;  // 0: an empty slot
    std::atomic<uint32_t>& slot = slots_[h % kSlots];
    if (slot.load(std::memory_order_relaxed) == fingerprint) return true;
    slot.store(fingerprint, std::memory_order_relaxed);
    return false;
  }

 private:
  mutable std::array<std::atomic<uint32_t>, kSlots> slots_{};
};

}  // namespace wattdb::storage
