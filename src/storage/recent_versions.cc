#include "storage/recent_versions.h"

#include <algorithm>

namespace wattdb::storage {

std::atomic<size_t> RecentVersions::total_bytes_{0};
std::atomic<size_t> RecentVersions::total_budget_{RecentVersions::kDefaultTotalBudget};

void RecentVersions::Record(std::string_view key, Timestamp ts, bool deleted, std::string_view row) {
  if (!armed_) return;
  size_t cost = key.size() + row.size() + 64;
  if (bytes_ + cost > kMaxBytes || total_bytes_.fetch_add(cost) + cost > total_budget_.load()) {
    if (bytes_ + cost <= kMaxBytes) total_bytes_.fetch_sub(cost);  // added just now
    Disarm();
    return;
  }
  bytes_ += cost;
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.emplace(std::string(key), std::vector<Version>()).first;
  it->second.push_back(Version{ts, deleted, deleted ? std::string() : std::string(row)});
}

void RecentVersions::VisibleAt(std::string_view lo, std::string_view hi, Timestamp read_ts,
                               std::vector<RecentRow>* out) const {
  for (auto it = keys_.lower_bound(lo); it != keys_.end() && (hi.empty() || it->first < hi); ++it) {
    const std::vector<Version>& vs = it->second;
    for (auto v = vs.rbegin(); v != vs.rend(); ++v) {
      if (v->ts > read_ts) continue;
      out->push_back(RecentRow{it->first, v->deleted, v->row});
      break;
    }
  }
}

bool RecentVersions::Latest(std::string_view key, Timestamp* ts, bool* deleted, std::string* row) const {
  auto it = keys_.find(key);
  if (it == keys_.end()) return false;
  const Version& v = it->second.back();
  *ts = v.ts;
  *deleted = v.deleted;
  if (!v.deleted) *row = v.row;
  return true;
}

}  // namespace wattdb::storage
