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
  auto at = index_.find(key);
  if (at == index_.end()) {
    auto& entry = *keys_.emplace(std::string(key), Versions()).first;
    at = index_.emplace(std::string_view(entry.first), &entry).first;
  }
  at->second->second.push_back(Version{ts, deleted, deleted ? SharedBytes() : SharedBytes(row)});
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
  for (auto it = keys_.lower_bound(lo); it != keys_.end() && (hi.empty() || it->first < hi); ++it) {
    AppendVisible(it->first, it->second, read_ts, out);
  }
}

void RecentVersions::VisibleAt(std::string_view key, Timestamp read_ts, std::vector<RecentRow>* out) const {
  auto at = index_.find(key);
  if (at != index_.end()) AppendVisible(at->second->first, at->second->second, read_ts, out);
}

bool RecentVersions::Latest(std::string_view key, Timestamp* ts, bool* deleted, std::string* row) const {
  auto at = index_.find(key);
  if (at == index_.end()) return false;
  const Version& v = at->second->second.back();
  *ts = v.ts;
  *deleted = v.deleted;
  if (!v.deleted) row->assign(v.row.view());
  return true;
}

}  // namespace wattdb::storage
