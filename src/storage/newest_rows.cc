#include "storage/newest_rows.h"

namespace wattdb::storage {

std::atomic<size_t> NewestRows::total_bytes_{0};

const NewestRow* NewestRows::FindLocked(std::string_view key) const {
  auto it = rows_.find(key);
  return it == rows_.end() ? nullptr : &it->second;
}

std::optional<NewestRow> NewestRows::Get(std::string_view key) const {
  if (entries_.load(std::memory_order_acquire) == 0) return std::nullopt;  // a miss is always safe
  std::lock_guard<std::mutex> l(mu_);
  const NewestRow* r = FindLocked(key);
  return r ? std::optional<NewestRow>(*r) : std::nullopt;
}

bool NewestRows::GetVersion(std::string_view key, Timestamp* ts, bool* deleted) const {
  if (entries_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard<std::mutex> l(mu_);
  const NewestRow* r = FindLocked(key);
  if (!r) return false;
  *ts = r->ts;
  *deleted = r->deleted;
  return true;
}

bool NewestRows::PutIf(const std::string& key, NewestRow r,
                       const std::function<bool()>& still_valid) {
  std::lock_guard<std::mutex> l(mu_);
  if (still_valid && !still_valid()) return false;
  size_t cost = Cost(key, r);
  auto it = rows_.find(key);
  if (it != rows_.end()) {
    size_t old = Cost(key, it->second);
    bytes_ -= old;
    total_bytes_ -= old;
    rows_.erase(it);
    entries_.store(rows_.size(), std::memory_order_release);
  }
  if (total_bytes_.load() + cost > kBudgetBytes) ClearLocked();
  if (total_bytes_.load() + cost > kBudgetBytes) return false;  // the other segments hold it
  bytes_ += cost;
  total_bytes_ += cost;
  rows_.emplace(key, std::move(r));
  entries_.store(rows_.size(), std::memory_order_release);
  return true;
}

void NewestRows::Update(const std::string& key, NewestRow r) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return;
  size_t old = Cost(key, it->second), cost = Cost(key, r);
  it->second = std::move(r);
  bytes_ = bytes_ - old + cost;
  total_bytes_ += cost;
  total_bytes_ -= old;
}

void NewestRows::Clear() {
  std::lock_guard<std::mutex> l(mu_);
  ClearLocked();
}

void NewestRows::ClearLocked() {
  total_bytes_ -= bytes_;
  bytes_ = 0;
  rows_.clear();
  entries_.store(0, std::memory_order_release);
}

size_t NewestRows::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return rows_.size();
}

}  // namespace wattdb::storage
