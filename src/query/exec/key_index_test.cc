#include "query/exec/key_index.h"

#include <string>

#include <gtest/gtest.h>

namespace wattdb::exec {
namespace {

TEST(KeyIndex, FindsEveryInsertedKeyAndNoOther) {
  KeyIndex index;
  EXPECT_EQ(index.Find("a"), nullptr);
  // Keys of many lengths (0..20 bytes), sharing prefixes, through several growths.
  std::vector<std::string> keys;
  for (int i = 0; i < 20000; i++) keys.push_back(std::string(i % 21, 'k') + std::to_string(i));
  keys.push_back("");
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_EQ(index.Find(keys[i]), nullptr) << keys[i];
    index.Insert(keys[i], static_cast<uint32_t>(i * 7));
  }
  EXPECT_EQ(index.size(), keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    const uint32_t* v = index.Find(keys[i]);
    ASSERT_NE(v, nullptr) << keys[i];
    EXPECT_EQ(*v, i * 7);
  }
  EXPECT_EQ(index.Find("k20000"), nullptr);
  EXPECT_EQ(index.Find(std::string("\0", 1)), nullptr);  // not the empty key
  EXPECT_GT(index.bytes(), keys.size() * 16);
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.Find(keys[5]), nullptr);
}

TEST(IntKeyIndex, FindsEveryInsertedKeyAndNoOther) {
  IntKeyIndex index;
  EXPECT_EQ(index.Find(0), nullptr);
  // Extremes, zero, and keys that collide in the low bits, through several growths.
  std::vector<int64_t> keys = {0, -1, INT64_MIN, INT64_MAX};
  for (int64_t i = 1; i <= 20000; i++) keys.push_back(i * 1024 * (i % 2 ? 1 : -1));
  for (size_t i = 0; i < keys.size(); i++) {
    ASSERT_EQ(index.Find(keys[i]), nullptr) << keys[i];
    index.Insert(keys[i], static_cast<uint32_t>(i * 3));
  }
  EXPECT_EQ(index.size(), keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    const uint32_t* v = index.Find(keys[i]);
    ASSERT_NE(v, nullptr) << keys[i];
    EXPECT_EQ(*v, i * 3);
  }
  for (int64_t absent : {int64_t{1}, int64_t{1023}, int64_t{-1024}, int64_t{2048}, INT64_MIN + 1}) {
    EXPECT_EQ(index.Find(absent), nullptr) << absent;
  }
  EXPECT_GE(index.bytes(), keys.size() * 16 * 2);
}

}  // namespace
}  // namespace wattdb::exec
