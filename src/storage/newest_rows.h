// NewestRows: a segment's cache of the newest committed version of keys that are written
// often (a point lookup met older versions of them) and read by key, so that a point read at
// a snapshot that sees that version (most of them) needs no storage iterator, snapshot or
// seek. Keys read but seldom written stay out: their reads cost what they did (RocksDB's
// block cache serves them), and the cache costs them nothing.
//
// Contract (kept by SegmentStore and SegmentScanner, see segment_store.h):
// - a commit replaces the cached versions of keys it wrote while its write window is open
//   (after its write batch, before Apply returns): a reader that waited for the commit finds
//   them;
// - a point scan of a key with several versions offers the newest one only if no write was
//   in flight on the segment when its view was taken and none began since (PutIf's check,
//   under the cache's lock, which commits' updates also take);
// - a split clears the cache of the segment it shrinks; a bulk (ingested) commit clears it.
// Entries exist only for stored keys; keys are prefix-free, so a hit for the low bound of a
// range [key, successor) is the range's only key.
//
// Bounded by a process-wide budget: a put that would exceed it clears the segment's entries
// first, and is dropped if the other segments' entries fill the budget. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "storage/mvcc.h"

namespace wattdb::storage {

struct NewestRow {
  Timestamp ts = 0;
  bool deleted = false;
  std::string row;  // encoded row (empty for a deletion)
};

class NewestRows {
 public:
  static constexpr size_t kBudgetBytes = 256u << 20;  // every segment of the process together

  NewestRows() = default;
  ~NewestRows() { Clear(); }
  NewestRows(const NewestRows&) = delete;
  NewestRows& operator=(const NewestRows&) = delete;

  std::optional<NewestRow> Get(std::string_view key) const;
  // Get's version without its row: true and *ts, *deleted if `key` is cached.
  bool GetVersion(std::string_view key, Timestamp* ts, bool* deleted) const;
  // A commit's version of `key`: replaces a cached one (keys no point read asked for stay out).
  void Update(const std::string& key, NewestRow r);
  // Puts `r` if `still_valid` (checked under the lock; null: always). False if not put.
  bool PutIf(const std::string& key, NewestRow r, const std::function<bool()>& still_valid);
  void Clear();
  size_t size() const;

 private:
  static size_t Cost(const std::string& key, const NewestRow& r) {
    return key.size() + r.row.size() + 64;
  }
  void ClearLocked();
  // Get's and GetVersion's lookup: the entry of `key` or null. REQUIRES mu_ held.
  const NewestRow* FindLocked(std::string_view key) const;
  // Looks keys up by string_view without building a std::string.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
  };

  static std::atomic<size_t> total_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, NewestRow, KeyHash, std::equal_to<>> rows_;
  size_t bytes_ = 0;
  std::atomic<size_t> entries_{0};  // rows_.size(): a lookup in an empty cache takes no lock
};

}  // namespace wattdb::storage
