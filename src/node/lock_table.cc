#include "node/lock_table.h"

#include <algorithm>
#include <functional>

namespace wattdb::node {

uint64_t LockTable::Hash(std::string_view key) {
  uint64_t h = std::hash<std::string_view>()(key);
  return h ? h : 1;
}

size_t LockTable::Probe(std::string_view key, uint64_t hash) const {
  size_t mask = hashes_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    uint64_t h = hashes_[i];
    if (h == 0 || (h == hash && slots_[i].key == key)) return i;
  }
}

void LockTable::Prefetch(std::string_view key) const {
  if (size_ == 0) return;
  size_t i = Hash(key) & (hashes_.size() - 1);
  __builtin_prefetch(&hashes_[i]);
  __builtin_prefetch(&slots_[i]);
}

const LockTable::RunEntry* LockTable::FindInRun(std::string_view key) const {
  if (run_.empty() || key < RunKey(run_.front()) || key > RunKey(run_.back())) return nullptr;
  auto it = std::lower_bound(run_.begin(), run_.end(), key,
                             [&](const RunEntry& r, std::string_view k) { return RunKey(r) < k; });
  return it != run_.end() && RunKey(*it) == key ? &*it : nullptr;
}

const LockEntry* LockTable::Find(std::string_view key) const {
  if (size_ != 0) {
    size_t i = Probe(key, Hash(key));
    if (hashes_[i]) return &slots_[i].entry;
  }
  if (run_live_ != 0) {
    const RunEntry* r = FindInRun(key);
    if (r && r->entry.txn != 0) return &r->entry;
  }
  return nullptr;
}

LockEntry* LockTable::Find(std::string_view key) {
  return const_cast<LockEntry*>(static_cast<const LockTable*>(this)->Find(key));
}

std::pair<LockEntry*, bool> LockTable::Emplace(std::string_view key, LockEntry e) {
  if (size_ != 0) {
    size_t i = Probe(key, Hash(key));
    if (hashes_[i]) return {&slots_[i].entry, false};
  }
  RunEntry* in_run = run_live_ != 0 ? const_cast<RunEntry*>(FindInRun(key)) : nullptr;
  if (in_run && in_run->entry.txn != 0) return {&in_run->entry, false};
  if (e.txn != 0 && (run_live_ == 0 || e.txn == run_txn_)) {
    if (in_run) {  // a hole of the run's own holder
      in_run->entry = e;
      run_live_++;
      return {&in_run->entry, true};
    }
    if (run_.empty() || key > RunKey(run_.back())) {  // extends the run
      run_txn_ = e.txn;
      run_.push_back(RunEntry{run_keys_.size(), key.size(), e});
      run_keys_.append(key);
      run_live_++;
      return {&run_.back().entry, true};
    }
  }
  if ((size_ + 1) * 4 > hashes_.size() * 3) Grow();  // load factor at most 3/4
  uint64_t hash = Hash(key);
  size_t i = Probe(key, hash);
  Slot& s = slots_[i];
  hashes_[i] = hash;
  s.key.assign(key);
  s.entry = e;
  size_++;
  Count(e.txn, 1);
  return {&s.entry, true};
}

void LockTable::Release(std::string_view key, uint64_t txn) {
  if (size_ != 0) {
    size_t i = Probe(key, Hash(key));
    if (hashes_[i]) {  // a key locked in the hash table is not locked in the run
      if (slots_[i].entry.txn == txn) EraseSlot(i);
      return;
    }
  }
  if (run_live_ == 0 || txn == 0) return;
  RunEntry* r = const_cast<RunEntry*>(FindInRun(key));
  if (!r || r->entry.txn != txn) return;
  r->entry.txn = 0;
  run_live_--;
  while (!run_.empty() && run_.back().entry.txn == 0) {  // the run ends with a live key
    run_keys_.resize(run_.back().offset);
    run_.pop_back();
  }
  if (run_live_ == 0) {
    constexpr size_t kKeepCapacity = 4096;  // entries; a bulk load's run is given back
    if (run_.capacity() > kKeepCapacity) {
      std::vector<RunEntry>().swap(run_);
      std::string().swap(run_keys_);
    }
    run_.clear();
    run_keys_.clear();
    run_txn_ = 0;
  }
}

size_t LockTable::HeldBy(uint64_t txn) const {
  auto h = held_.find(txn);
  return (h == held_.end() ? 0 : h->second) + (txn == run_txn_ ? run_live_ : 0);
}

void LockTable::Grow() {
  std::vector<uint64_t> old_hashes = std::move(hashes_);
  std::vector<Slot> old = std::move(slots_);
  size_t n = old.empty() ? 16 : old.size() * 2;
  hashes_.assign(n, 0);
  slots_.clear();
  slots_.resize(n);
  size_t mask = n - 1;
  for (size_t j = 0; j < old.size(); j++) {
    if (!old_hashes[j]) continue;
    size_t i = old_hashes[j] & mask;
    while (hashes_[i]) i = (i + 1) & mask;
    hashes_[i] = old_hashes[j];
    slots_[i] = std::move(old[j]);
  }
}

void LockTable::EraseSlot(size_t i) {
  Count(slots_[i].entry.txn, -1);
  size_--;
  // Backward shift: move later members of the probe chain into the hole, so that every key
  // stays reachable from its home slot without tombstones.
  size_t mask = hashes_.size() - 1;
  size_t hole = i;
  for (size_t j = (i + 1) & mask; hashes_[j]; j = (j + 1) & mask) {
    size_t home = hashes_[j] & mask;
    // j's key may fill the hole unless its home lies in (hole, j] (cyclically).
    bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (stays) continue;
    hashes_[hole] = hashes_[j];
    slots_[hole] = std::move(slots_[j]);
    hole = j;
  }
  hashes_[hole] = 0;
  slots_[hole].key.clear();
}

void LockTable::Count(uint64_t txn, int64_t delta) {
  size_t& n = held_[txn];
  n += delta;
  if (n == 0) held_.erase(txn);
}

}  // namespace wattdb::node
