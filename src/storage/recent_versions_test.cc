#include "storage/recent_versions.h"

#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace wattdb::storage {
namespace {

struct ModelVersion {
  Timestamp ts;
  bool deleted;
  std::string row;
};
using Model = std::map<std::string, std::vector<ModelVersion>>;

// What VisibleAt(lo, hi, read_ts) must answer: each key of [lo, hi) in order, at its newest
// version at or below read_ts.
std::vector<std::string> Expected(const Model& m, const std::string& lo, const std::string& hi,
                                  Timestamp read_ts) {
  std::vector<std::string> out;
  for (auto it = m.lower_bound(lo); it != m.end() && (hi.empty() || it->first < hi); ++it) {
    for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) {
      if (v->ts > read_ts) continue;
      out.push_back(it->first + (v->deleted ? "-" : "+" + v->row));
      break;
    }
  }
  return out;
}

std::vector<std::string> Shown(const std::vector<RecentRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.key + (r.deleted ? "-" : "+" + r.row.ToString()));
  return out;
}

// Commits of random keys interleaved with ranged and point reads at random timestamps: every
// read answers as an ordered model does, whichever keys arrived since the last ranged read.
TEST(RecentVersionsTest, ReadsAnswerInKeyOrderWhateverTheOrderOfCommits) {
  RecentVersions rv;
  rv.Arm(1);
  Model model;
  std::mt19937 rng(7);
  auto key = [&] { return fmt::format("k{:04}", rng() % 600); };
  Timestamp ts = 1;
  for (int step = 0; step < 4000; step++) {
    if (rng() % 8 != 0) {
      std::string k = key();
      bool del = rng() % 5 == 0;
      std::string row = del ? "" : fmt::format("r{}", step);
      ts++;
      rv.Record(k, ts, del, row);
      model[k].push_back({ts, del, row});
      continue;
    }
    Timestamp read_ts = 1 + rng() % ts;
    std::string lo = rng() % 4 == 0 ? "" : key(), hi = rng() % 4 == 0 ? "" : key();
    if (!hi.empty() && hi < lo) std::swap(lo, hi);
    std::vector<RecentRow> rows;
    rv.VisibleAt(lo, hi, read_ts, &rows);
    ASSERT_EQ(Shown(rows), Expected(model, lo, hi, read_ts))
        << "step " << step << " [" << lo << ", " << hi << ")";
    std::string k = key();
    rows.clear();
    rv.VisibleAt(k, read_ts, &rows);
    ASSERT_EQ(Shown(rows), Expected(model, k, k + '\0', read_ts))
        << "step " << step << " key " << k;
    Timestamp newest = 0;
    bool deleted = false;
    std::string row;
    bool found = rv.Latest(k, &newest, &deleted, &row);
    auto m = model.find(k);
    ASSERT_EQ(found, m != model.end());
    if (found) {
      EXPECT_EQ(newest, m->second.back().ts);
      EXPECT_EQ(deleted, m->second.back().deleted);
      if (!deleted) {
        EXPECT_EQ(row, m->second.back().row);
      }
    }
  }
  ASSERT_GT(model.size(), 500u);
  std::vector<RecentRow> all;
  rv.VisibleAt("", "", ts, &all);
  EXPECT_EQ(Shown(all), Expected(model, "", "", ts));
  // A recording armed again starts empty.
  rv.Arm(2);
  all.clear();
  rv.VisibleAt("", "", ts, &all);
  EXPECT_TRUE(all.empty());
  rv.Record("b", ts + 1, false, "x");
  rv.Record("a", ts + 2, false, "y");
  rv.VisibleAt("", "", ts + 2, &all);
  EXPECT_EQ(Shown(all), (std::vector<std::string>{"a+y", "b+x"}));
}

}  // namespace
}  // namespace wattdb::storage
