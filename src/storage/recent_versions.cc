#include "storage/recent_versions.h"

#include <algorithm>

namespace wattdb::storage {

std::atomic<size_t> RecentVersions::total_bytes_{0};
std::atomic<size_t> RecentVersions::total_budget_{RecentVersions::kDefaultTotalBudget};

void RecentVersions::Record(std::string_view key, Timestamp ts, bool deleted,
                            std::string_view row) {
  if (!armed_) return;
  size_t cost = key.size() + row.size() + 64;
  if (bytes_ + cost > kMaxBytes || total_bytes_.fetch_add(cost) + cost > total_budget_.load()) {
    if (bytes_ + cost <= kMaxBytes) total_bytes_.fetch_sub(cost);  // added just now
    Disarm();
    return;
  }
  bytes_ += cost;
  auto at = keys_.find(key);
  if (at == keys_.end()) {
    at = keys_.emplace(std::string(key), Versions()).first;
    unsorted_.push_back(&*at);
  }
  at->second.push_back(Version{ts, deleted, deleted ? SharedBytes() : SharedBytes(row)});
}

void RecentVersions::SortKeys() const {
  if (unsorted_.empty()) return;
  auto less = [](const Keys::value_type* a, const Keys::value_type* b) {
    return a->first < b->first;
  };
  std::sort(unsorted_.begin(), unsorted_.end(), less);
  const size_t mid = sorted_.size();
  sorted_.insert(sorted_.end(), unsorted_.begin(), unsorted_.end());
  std::inplace_merge(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(mid),
                     sorted_.end(), less);
  unsorted_.clear();
}

void RecentVersions::AppendVisible(const std::string& key, const Versions& vs, Timestamp read_ts,
                                   std::vector<RecentRow>* out) {
  for (auto v = vs.rbegin(); v != vs.rend(); ++v) {
    if (v->ts > read_ts) continue;
    out->push_back(RecentRow{key, v->deleted, v->row});
    return;
  }
}

void RecentVersions::VisibleAt(std::string_view lo, std::string_view hi, Timestamp read_ts,
                               std::vector<RecentRow>* out) const {
  SortKeys();
  auto it = std::lower_bound(
      sorted_.begin(), sorted_.end(), lo,
      [](const Keys::value_type* e, std::string_view v) { return std::string_view(e->first) < v; });
  for (; it != sorted_.end() && (hi.empty() || (*it)->first < hi); ++it) {
    AppendVisible((*it)->first, (*it)->second, read_ts, out);
  }
}

void RecentVersions::VisibleAt(std::string_view key, Timestamp read_ts,
                               std::vector<RecentRow>* out) const {
  auto at = keys_.find(key);
  if (at != keys_.end()) AppendVisible(at->first, at->second, read_ts, out);
}

bool RecentVersions::Latest(std::string_view key, Timestamp* ts, bool* deleted,
                            std::string* row) const {
  auto at = keys_.find(key);
  if (at == keys_.end()) return false;
  const Version& v = at->second.back();
  *ts = v.ts;
  *deleted = v.deleted;
  if (!v.deleted && row) row->assign(v.row.view());
  return true;
}

}  // namespace wattdb::storage
