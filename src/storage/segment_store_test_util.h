// The SegmentStore tests' fixture: a store in a fresh directory, and helpers that write and
// read rows (id, text) and an index on the text.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "storage/segment_store.h"

namespace wattdb::storage {

namespace fs = std::filesystem;

// Every row `sc` yields, read `batch` rows per call (a failed call is a test failure).
inline std::vector<ScanRow> Drain(Result<std::unique_ptr<SegmentScanner>>& sc, size_t batch) {
  EXPECT_TRUE(sc.ok()) << sc.status().ToString();
  std::vector<ScanRow> rows;
  if (!sc.ok()) return rows;
  while (true) {
    auto more = (*sc)->Next(batch, &rows);
    EXPECT_TRUE(more.ok());
    if (!more.ok() || !*more) break;
  }
  return rows;
}

class SegmentStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("wattdb_storage_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    auto s = SegmentStore::Open((root_ / "a").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(root_);
  }

  // Rows 0 .. rows - 1 of segment `seg`: "v1" at 5, then "v2" at 9.
  void PutTwoVersions(SegmentId seg, int rows) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < rows; i++) ops.push_back({seg, K(i), VersionKind::kPut, R(i, "v1")});
    ASSERT_TRUE(store_->Apply(5, ops).ok());
    for (auto& op : ops) op.row = R(0, "v2");
    ASSERT_TRUE(store_->Apply(9, ops).ok());
  }
  static std::string K(int64_t i) {
    std::string k;
    EncodeKeyValue(Value::Int64(i), &k);
    return k;
  }
  static std::string R(int64_t i, const std::string& s) {
    std::string r;
    EncodeRow({Value::Int64(i), Value::Text(s)}, &r);
    return r;
  }
  std::vector<std::pair<int64_t, std::string>> ScanAll(SegmentStore& st, SegmentId seg,
                                                       Timestamp ts) {
    SegmentMeta m = (*st.Get(seg))->meta();
    auto sc = st.Scan(seg, m.lo, m.hi, ts);
    std::vector<std::pair<int64_t, std::string>> out;
    for (auto& r : Drain(sc, 3)) {
      std::vector<Value> v;
      EXPECT_TRUE(DecodeRow(r.row, &v).ok());
      out.emplace_back(v[0].as_int(), v[1].as_text());
    }
    return out;
  }

  fs::path root_;
  std::unique_ptr<SegmentStore> store_;
};

// Index entries: rows are (id, text); index 3 is on the text column.
inline std::vector<int64_t> IndexLookup(SegmentStore& st, SegmentId seg, const std::string& text,
                                        Timestamp ts) {
  SegmentMeta m = (*st.Get(seg))->meta();
  std::string k;
  EncodeIndexColumn(Value::Text(text), false, &k);
  auto sc = st.ScanIndex(seg, m.lo, m.hi, 3, k, PrefixSuccessor(k), ts);
  std::vector<int64_t> out;
  for (auto& r : Drain(sc, 2)) {
    std::vector<Value> v;
    EXPECT_TRUE(DecodeRow(r.row, &v).ok());
    EXPECT_EQ(v[1].as_text(), text);
    out.push_back(v[0].as_int());
  }
  return out;
}

inline IndexKeySpec TextIndex() { return IndexKeySpec{3, {1}, {false}}; }

}  // namespace wattdb::storage
