// LockTable: the row locks of one segment, key -> (holding transaction, op index).
//
// A COPY puts millions of keys in one table and takes them out at commit, so the table is
// built for that:
// - A run: keys one transaction locked in ascending order (a bulk load of sorted data, in
//   sorted batches), appended to an array with their bytes in one buffer. A lookup checks
//   the run's first and last key, then searches it; a key released there stays as a hole
//   until the run's tail is released or the run empties. Sequential memory, no allocation
//   per key: a sorted load never touches the hash table.
// - Every other key (another transaction's, or one below the run's last key) goes to a flat
//   hash table: open addressing with linear probing over an array of the keys' hashes (a
//   probe reads consecutive hashes, and a key is compared only when its hash matches; the
//   hashes are reused when the table grows), the keys and entries in a parallel array,
//   deletion by backward shift (no tombstones).
// A key is in at most one of the two. The table counts each holder's keys, so that a holder
// of every key (a bulk load's segments) can drop the whole table instead of releasing key by
// key. Not thread-safe (the participant guards it).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <boost/container/flat_map.hpp>

namespace wattdb::node {

struct LockEntry {
  uint64_t txn = 0;
  size_t op = 0;  // index in the holder's ops of its latest write of the key (kLockOnly: none)
};

class LockTable {
 public:
  static constexpr size_t kLockOnly = SIZE_MAX;

  // The lock on `key`, or nullptr. The pointer is valid until the table changes.
  const LockEntry* Find(std::string_view key) const;
  LockEntry* Find(std::string_view key);
  // Locks `key` for `e.txn` (nonzero) if it is free; returns the key's entry and whether it
  // was free.
  std::pair<LockEntry*, bool> Emplace(std::string_view key, LockEntry e);
  // Starts loading the memory a lookup of `key` reads first (a bulk load's lookups miss the
  // cache: issuing them a few keys ahead overlaps the misses). No effect on the contents.
  void Prefetch(std::string_view key) const;
  // Unlocks `key` if `txn` holds it.
  void Release(std::string_view key, uint64_t txn);
  // The number of keys `txn` holds here.
  size_t HeldBy(uint64_t txn) const;
  size_t size() const { return size_ + run_live_; }
  bool empty() const { return size() == 0; }
  // Whether the table is small (a few slots, a short run): emptied, it is kept for the
  // segment's next writers (their locks then allocate nothing) instead of dropped and built
  // again.
  bool small() const { return slots_.size() <= kSmallSlots && run_.size() <= kSmallSlots; }
  // Keys held in the run (for tests).
  size_t run_size() const { return run_live_; }

 private:
  struct Slot {
    std::string key;
    LockEntry entry;
  };
  struct RunEntry {
    uint64_t offset;  // of the key's bytes in run_keys_
    uint64_t length;
    LockEntry entry;  // txn 0: released (a hole)
  };
  static constexpr size_t kSmallSlots = 64;
  static uint64_t Hash(std::string_view key);
  // The slot of `key`, or of the empty slot where it would go.
  size_t Probe(std::string_view key, uint64_t hash) const;
  void Grow();
  void EraseSlot(size_t i);
  void Count(uint64_t txn, int64_t delta);
  std::string_view RunKey(const RunEntry& r) const {
    return {run_keys_.data() + r.offset, r.length};
  }
  // The run's entry for `key` (a hole included), or nullptr.
  const RunEntry* FindInRun(std::string_view key) const;

  std::vector<uint64_t> hashes_;  // per slot; 0: empty (a key hashing to 0 is stored as 1)
  std::vector<Slot> slots_;       // as many as hashes_: a power of two (or 0)
  size_t size_ = 0;               // keys in the hash table
  std::vector<RunEntry> run_;     // ascending keys, all locked by run_txn_ (or holes); no hole last
  std::string run_keys_;
  uint64_t run_txn_ = 0;
  size_t run_live_ = 0;  // run_ entries that are not holes
  // Keys held per transaction in the hash table: a handful of holders, in a flat array that
  // keeps its memory as holders come and go.
  boost::container::flat_map<uint64_t, size_t> held_;
};

}  // namespace wattdb::node
