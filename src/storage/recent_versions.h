// RecentVersions: the versions commits wrote to one segment since a chosen data version, in
// memory, so that state derived from the segment's rows at that version (a column image,
// node/column_cache.h) keeps answering reads after later commits by merging them in: the
// main + delta arrangement of column stores.
//
// Contract (kept by Segment, which owns one): recording starts with Arm at the segment's
// current data version; from then on every change of the data version either records a
// commit's versions (Record) or ends the recording (Disarm: splits, ingested commits,
// imports, a recording past kMaxBytes), under the same lock as the version grows. So while
// Covers(base) holds, the recording holds every version committed to the segment since data
// version `base`, and per key in commit order (a key's commits are serialized by its lock,
// and later ones take later timestamps).
//
// Not thread-safe: Segment guards it (a ranged read orders the keys recorded since the last
// one, so even const calls must not overlap).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/shared_bytes.h"
#include "common/small_containers.h"
#include "storage/mvcc.h"

namespace wattdb::storage {

// A key's version as a reader at some timestamp sees it through RecentVersions.
// Its row shares the recording's bytes: reading a range of versions copies no rows.
struct RecentRow {
  std::string key;  // primary key
  bool deleted = false;
  SharedBytes row;  // encoded row (empty if deleted)
};

class RecentVersions {
 public:
  static constexpr size_t kMaxBytes = 16u << 20;
  // Every recording of the process together: a Record that would pass it ends its recording.
  static constexpr size_t kDefaultTotalBudget = 512u << 20;

  RecentVersions() = default;
  ~RecentVersions() { Disarm(); }
  RecentVersions(const RecentVersions&) = delete;
  RecentVersions& operator=(const RecentVersions&) = delete;

  void Arm(uint64_t base) {
    Disarm();
    armed_ = true;
    base_ = base;
  }
  void Disarm() {
    total_bytes_.fetch_sub(bytes_);
    armed_ = false;
    keys_.clear();
    sorted_.clear();
    unsorted_.clear();
    bytes_ = 0;
  }
  // The bytes all recordings of the process hold, and their budget (tests lower it).
  static size_t total_bytes() { return total_bytes_.load(); }
  static void set_total_budget(size_t bytes) { total_budget_.store(bytes); }
  bool Covers(uint64_t base) const { return armed_ && base_ == base; }
  bool armed() const { return armed_; }
  size_t bytes() const { return bytes_; }
  // A committed version of `key` (no-op unless armed; disarms past kMaxBytes, or past the
  // process's total budget).
  void Record(std::string_view key, Timestamp ts, bool deleted, std::string_view row);
  // Appends to `out`, in key order, the version each recorded key of [lo, hi) ("" =
  // unbounded) has at `read_ts`: its newest recorded one at or below read_ts. Keys with no
  // such version are left out (the base state answers for them).
  void VisibleAt(std::string_view lo, std::string_view hi, Timestamp read_ts,
                 std::vector<RecentRow>* out) const;
  // The same for a range that holds `key` alone (a stored key: keys are prefix-free), found
  // by hashing instead of a walk down the ordered keys.
  void VisibleAt(std::string_view key, Timestamp read_ts, std::vector<RecentRow>* out) const;
  // The newest recorded version of `key`: its timestamp, whether it deletes, its row (if
  // live and `row` is not null). False if none was recorded.
  bool Latest(std::string_view key, Timestamp* ts, bool* deleted, std::string* row) const;

 private:
  struct Version {
    Timestamp ts;
    bool deleted;
    SharedBytes row;  // handed to readers without a copy
  };
  bool armed_ = false;
  uint64_t base_ = 0;
  size_t bytes_ = 0;
  using Versions = SmallVector<Version, 1>;  // oldest first; a key's first inline
  // The newest of `vs` at or below read_ts, if any, appended to `out` as key's.
  static void AppendVisible(const std::string& key, const Versions& vs, Timestamp read_ts,
                            std::vector<RecentRow>* out);
  // Brings the keys recorded since the last ordered read into sorted_.
  void SortKeys() const;
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>()(k); }
  };
  // Every recorded key (a hash table: a commit's Record finds or adds its key in constant
  // time, without walking an ordered tree), with its versions. Entries stay put.
  using Keys = std::unordered_map<std::string, Versions, KeyHash, std::equal_to<>>;
  Keys keys_;
  // The keys in key order for ranged reads: sorted_ holds those recorded before the last such
  // read, in order; unsorted_ the ones since, which the next ranged read sorts and merges in
  // (so a commit pays no ordering, and a read sorts only what is new).
  mutable std::vector<const Keys::value_type*> sorted_, unsorted_;
  static std::atomic<size_t> total_bytes_;
  static std::atomic<size_t> total_budget_;
};

}  // namespace wattdb::storage
