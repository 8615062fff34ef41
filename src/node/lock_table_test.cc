#include "node/lock_table.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

namespace wattdb::node {
namespace {

TEST(LockTableTest, KeysAreLockedOnceAndReleasedByTheirHolderOnly) {
  LockTable t;
  EXPECT_EQ(t.Find("a"), nullptr);
  auto [e, fresh] = t.Emplace("a", {7, 0});
  EXPECT_TRUE(fresh);
  e->op = 3;
  auto [again, fresh2] = t.Emplace("a", {8, 1});
  EXPECT_FALSE(fresh2);
  EXPECT_EQ(again->txn, 7u);
  EXPECT_EQ(again->op, 3u);
  t.Release("a", 8);  // not the holder: nothing happens
  ASSERT_NE(t.Find("a"), nullptr);
  EXPECT_EQ(t.HeldBy(7), 1u);
  t.Release("a", 7);
  EXPECT_EQ(t.Find("a"), nullptr);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.HeldBy(7), 0u);
}

// Random locks and releases of keys that collide in small tables and make long probe
// chains: the table always agrees with a map, and each holder's count is right.
TEST(LockTableTest, AgreesWithAMapThroughGrowthAndBackwardShifts) {
  std::mt19937_64 rng(42);
  LockTable t;
  std::map<std::string, LockEntry> model;
  for (int step = 0; step < 200000; step++) {
    std::string key = "k" + std::to_string(rng() % 5000);
    uint64_t txn = 1 + rng() % 4;
    if (rng() % 3) {
      auto [e, fresh] = t.Emplace(key, {txn, static_cast<size_t>(step)});
      auto [m, mfresh] = model.try_emplace(key, LockEntry{txn, static_cast<size_t>(step)});
      ASSERT_EQ(fresh, mfresh) << key;
      ASSERT_EQ(e->txn, m->second.txn);
      ASSERT_EQ(e->op, m->second.op);
    } else {
      t.Release(key, txn);
      auto m = model.find(key);
      if (m != model.end() && m->second.txn == txn) model.erase(m);
    }
    if (step % 10000 == 0) {
      ASSERT_EQ(t.size(), model.size());
      for (uint64_t h = 1; h <= 4; h++) {
        size_t n = 0;
        for (const auto& [k, e] : model) n += e.txn == h;
        ASSERT_EQ(t.HeldBy(h), n);
      }
      for (int i = 0; i < 5000; i++) {
        std::string k = "k" + std::to_string(i);
        const LockEntry* e = t.Find(k);
        auto m = model.find(k);
        ASSERT_EQ(e != nullptr, m != model.end()) << k;
        if (e) {
          ASSERT_EQ(e->txn, m->second.txn);
        }
      }
    }
  }
}

}  // namespace
}  // namespace wattdb::node
