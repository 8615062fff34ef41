#include "node/lock_table.h"

#include <cstdio>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

namespace wattdb::node {
namespace {

std::string fmt(int i) {
  char b[16];
  snprintf(b, sizeof b, "k%08d", i);
  return b;
}

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

// A sorted bulk load's keys go to the run, without the hash table; keys of other holders
// and keys below the run's end go to the hash table, and both are found.
TEST(LockTableTest, AscendingKeysOfOneHolderFormARun) {
  LockTable t;
  for (int i = 0; i < 1000; i++) ASSERT_TRUE(t.Emplace(fmt(i), {7, static_cast<size_t>(i)}).second);
  EXPECT_EQ(t.run_size(), 1000u);
  ASSERT_TRUE(t.Emplace(fmt(5000), {8, 0}).second);     // another holder, after the run
  ASSERT_TRUE(t.Emplace(fmt(1001), {7, 1001}).second);  // the run's holder again, still ascending
  EXPECT_EQ(t.run_size(), 1001u);
  ASSERT_FALSE(t.Emplace(fmt(10), {8, 0}).second);  // held in the run
  EXPECT_EQ(t.Find(fmt(10))->txn, 7u);
  EXPECT_EQ(t.Find(fmt(10))->op, 10u);
  EXPECT_EQ(t.Find(fmt(1000)), nullptr);  // between run keys, never locked
  EXPECT_EQ(t.HeldBy(7), 1001u);
  EXPECT_EQ(t.HeldBy(8), 1u);

  t.Release(fmt(10), 8);  // not the holder
  EXPECT_NE(t.Find(fmt(10)), nullptr);
  t.Release(fmt(10), 7);  // a hole: free for anyone
  EXPECT_EQ(t.Find(fmt(10)), nullptr);
  ASSERT_TRUE(t.Emplace(fmt(10), {8, 3}).second);
  EXPECT_EQ(t.Find(fmt(10))->txn, 8u);
  EXPECT_FALSE(t.Emplace(fmt(10), {7, 0}).second);
  t.Release(fmt(10), 8);
  ASSERT_TRUE(t.Emplace(fmt(10), {7, 9}).second);  // the holder takes its hole back
  EXPECT_EQ(t.run_size(), 1001u);

  // Releasing the tail (a rolled-back batch) lets the holder append again from there.
  for (int i = 500; i <= 1001; i++) t.Release(fmt(i), 7);
  EXPECT_EQ(t.run_size(), 500u);
  ASSERT_TRUE(t.Emplace(fmt(600), {7, 1}).second);
  EXPECT_EQ(t.run_size(), 501u);
  for (int i = 0; i < 500; i++) t.Release(fmt(i), 7);
  t.Release(fmt(600), 7);
  EXPECT_EQ(t.HeldBy(7), 0u);
  EXPECT_EQ(t.size(), 1u);                        // txn 8's key
  ASSERT_TRUE(t.Emplace(fmt(3), {9, 0}).second);  // an empty run starts over for any holder
  EXPECT_EQ(t.run_size(), 1u);
}

// Random locks and releases of keys that collide in small tables and make long probe
// chains, with runs forming and breaking: the table always agrees with a map, and each
// holder's count is right.
TEST(LockTableTest, AgreesWithAMapThroughGrowthAndBackwardShifts) {
  std::mt19937_64 rng(42);
  LockTable t;
  std::map<std::string, LockEntry> model;
  uint64_t last[5] = {};
  size_t longest_run = 0;
  for (int step = 0; step < 200000; step++) {
    if (step % 20000 == 0) {  // every holder ends; holder 1 starts the next round
      for (const auto& [k, e] : model) t.Release(k, e.txn);
      model.clear();
      ASSERT_TRUE(t.empty());
      for (auto& l : last) l = 0;
    }
    // Holder 1 locks ascending keys (a sorted load: runs form); the others mostly keys
    // above their last one, sometimes any key.
    uint64_t txn = step % 20000 < 10 || rng() % 2 ? 1 : 2 + rng() % 3;
    int next = static_cast<int>(last[txn] += rng() % 3);
    std::string key = fmt(txn == 1 || rng() % 4 ? next % 5000 : static_cast<int>(rng() % 5000));
    if (rng() % 3) {
      auto [e, fresh] = t.Emplace(key, {txn, static_cast<size_t>(step)});
      auto [m, mfresh] = model.try_emplace(key, LockEntry{txn, static_cast<size_t>(step)});
      ASSERT_EQ(fresh, mfresh) << key;
      ASSERT_EQ(e->txn, m->second.txn);
      ASSERT_EQ(e->op, m->second.op);
    } else {
      key = fmt(static_cast<int>(rng() % 5000));
      t.Release(key, txn);
      auto m = model.find(key);
      if (m != model.end() && m->second.txn == txn) model.erase(m);
    }
    longest_run = std::max(longest_run, t.run_size());
    if (step % 10000 == 0) {
      ASSERT_EQ(t.size(), model.size());
      for (uint64_t h = 1; h <= 4; h++) {
        size_t n = 0;
        for (const auto& [k, e] : model) n += e.txn == h;
        ASSERT_EQ(t.HeldBy(h), n);
      }
      for (int i = 0; i < 5000; i++) {
        std::string k = fmt(i);
        const LockEntry* e = t.Find(k);
        auto m = model.find(k);
        ASSERT_EQ(e != nullptr, m != model.end()) << k;
        if (e) {
          ASSERT_EQ(e->txn, m->second.txn);
        }
      }
    }
  }
  EXPECT_GT(longest_run, 100u);
}

}  // namespace
}  // namespace wattdb::node
