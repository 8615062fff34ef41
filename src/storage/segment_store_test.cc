#include "storage/segment_store.h"

#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "common/codec.h"

namespace wattdb::storage {
namespace {

namespace fs = std::filesystem;

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
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    std::vector<std::pair<int64_t, std::string>> out;
    std::vector<ScanRow> rows;
    while (true) {
      auto more = (*sc)->Next(3, &rows);
      EXPECT_TRUE(more.ok());
      if (!more.ok() || !*more) break;
    }
    for (auto& r : rows) {
      std::vector<Value> v;
      EXPECT_TRUE(DecodeRow(r.row, &v).ok());
      out.emplace_back(v[0].as_int(), v[1].as_text());
    }
    return out;
  }

  fs::path root_;
  std::unique_ptr<SegmentStore> store_;
};

TEST_F(SegmentStoreTest, SnapshotSeesItsVersion) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->Apply(10, {{1, K(1), VersionKind::kPut, R(1, "a")},
                                 {1, K(2), VersionKind::kPut, R(2, "b")}}).ok());
  ASSERT_TRUE(store_->Apply(20, {{1, K(1), VersionKind::kPut, R(1, "a2")},
                                 {1, K(2), VersionKind::kDelete, ""}}).ok());
  ASSERT_TRUE(store_->Apply(30, {{1, K(3), VersionKind::kPut, R(3, "c")}}).ok());

  using V = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(ScanAll(*store_, 1, 5), V{});
  EXPECT_EQ(ScanAll(*store_, 1, 10), (V{{1, "a"}, {2, "b"}}));
  EXPECT_EQ(ScanAll(*store_, 1, 25), (V{{1, "a2"}}));
  EXPECT_EQ(ScanAll(*store_, 1, 99), (V{{1, "a2"}, {3, "c"}}));

  auto lv = store_->Latest(1, K(2));
  ASSERT_TRUE(lv.ok());
  EXPECT_TRUE(lv->found);
  EXPECT_TRUE(lv->deleted);
  EXPECT_EQ(lv->ts, 20u);
  EXPECT_FALSE(store_->Latest(1, K(4))->found);
}

TEST_F(SegmentStoreTest, ScanHonoursRangeAndDetectsStaleness) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, K(0), K(100)}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 50; i++) ops.push_back({1, K(i), VersionKind::kPut, R(i, "x")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  auto sc = store_->Scan(1, K(10), K(20), 5);
  ASSERT_TRUE(sc.ok());
  std::vector<ScanRow> rows;
  while (*(*sc)->Next(4, &rows)) {
  }
  EXPECT_EQ(rows.size(), 10u);
  EXPECT_TRUE(store_->Scan(1, K(50), K(200), 5).status().IsStale());
  EXPECT_TRUE(store_->Scan(1, "", K(20), 5).status().IsStale());
  EXPECT_TRUE(store_->Scan(9, "", "", 5).status().IsNotFound());
}

TEST_F(SegmentStoreTest, SplitMovesUpperHalfAtomically) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back({1, K(i), VersionKind::kPut, R(i, "v1")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  for (auto& op : ops) op.row = R(0, "v2");
  ASSERT_TRUE(store_->Apply(9, ops).ok());
  auto split = store_->Split(1, 2);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  auto lower = ScanAll(*store_, 1, 5);
  auto upper = ScanAll(*store_, 2, 5);
  EXPECT_EQ(lower.size() + upper.size(), 100u);
  EXPECT_GT(lower.size(), 30u);
  EXPECT_GT(upper.size(), 30u);
  EXPECT_EQ(upper.front().first, static_cast<int64_t>(lower.size()));
  EXPECT_EQ((*store_->Get(1))->meta().hi, *split);
  EXPECT_EQ((*store_->Get(2))->meta().lo, *split);
  // Old versions travelled with their keys.
  EXPECT_EQ(ScanAll(*store_, 2, 9).front().second, "v2");
  EXPECT_EQ(ScanAll(*store_, 2, 5).front().second, "v1");
}

TEST_F(SegmentStoreTest, ExportImportCarriesEveryVersion) {
  ASSERT_TRUE(store_->CreateSegment({4, 7, K(0), ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 1000; i++) ops.push_back({4, K(i), VersionKind::kPut, R(i, "old")});
  ASSERT_TRUE(store_->Apply(10, ops).ok());
  ASSERT_TRUE(store_->Apply(20, {{4, K(3), VersionKind::kPut, R(3, "new")}}).ok());
  auto exp = store_->Export(4, (root_ / "export4").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  EXPECT_FALSE(exp->files.empty());

  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Import(*exp).ok());
  EXPECT_EQ(ScanAll(**other, 4, 10), ScanAll(*store_, 4, 10));
  EXPECT_EQ(ScanAll(**other, 4, 20)[3].second, "new");
  EXPECT_EQ(ScanAll(**other, 4, 10)[3].second, "old");
  EXPECT_EQ((*(*other)->Get(4))->meta().lo, K(0));
  // A second import of the same id is refused.
  EXPECT_FALSE((*other)->Import(*exp).ok());
}

TEST_F(SegmentStoreTest, EmptySegmentExportsAndImports) {
  ASSERT_TRUE(store_->CreateSegment({5, 7, "", ""}).ok());
  auto exp = store_->Export(5, (root_ / "export5").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE((*other)->Import(*exp).ok());
  EXPECT_TRUE(ScanAll(**other, 5, 100).empty());
}

TEST_F(SegmentStoreTest, DroppedSegmentStaysReadableByRunningScan) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 20; i++) ops.push_back({1, K(i), VersionKind::kPut, R(i, "x")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  auto sc = store_->Scan(1, "", "", 5);
  ASSERT_TRUE(sc.ok());
  ASSERT_TRUE(store_->DropSegment(1).ok());
  EXPECT_TRUE(store_->Get(1).status().IsNotFound());
  std::vector<ScanRow> rows;
  while (*(*sc)->Next(7, &rows)) {
  }
  EXPECT_EQ(rows.size(), 20u);
}

TEST_F(SegmentStoreTest, GcDropsOnlyVersionsNoSnapshotCanSee) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  for (Timestamp ts : {10, 20, 30, 40}) {
    ASSERT_TRUE(store_->Apply(ts, {{1, K(1), VersionKind::kPut, R(1, fmt::format("v{}", ts))},
                                   {1, K(2), VersionKind::kPut, R(2, fmt::format("w{}", ts))}}).ok());
  }
  ASSERT_TRUE(store_->Apply(25, {{1, K(2), VersionKind::kDelete, ""}}).ok());
  // Distinct row versions still readable at some snapshot.
  auto versions = [&] {
    std::set<std::string> seen;
    for (Timestamp ts : {5, 10, 15, 20, 25, 30, 35, 40, 45}) {
      for (auto& [id, v] : ScanAll(*store_, 1, ts)) seen.insert(v);
    }
    return seen.size();
  };
  size_t before = versions();
  store_->SetGcHorizon(32);
  store_->SetGcHorizon(5);  // ignored: the horizon only moves forward
  EXPECT_EQ(store_->gc_horizon(), 32u);
  ASSERT_TRUE(store_->CompactSegment(1).ok());
  // Readers at or above the horizon see exactly what they saw before.
  using V = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(ScanAll(*store_, 1, 32), (V{{1, "v30"}, {2, "w30"}}));
  EXPECT_EQ(ScanAll(*store_, 1, 45), (V{{1, "v40"}, {2, "w40"}}));
  // Versions below the horizon that are shadowed are gone: a reader at 15 (which no longer
  // exists, by contract) would find nothing older than the newest visible one at 32.
  EXPECT_TRUE(ScanAll(*store_, 1, 15).empty());
  EXPECT_LT(versions(), before);
}

TEST_F(SegmentStoreTest, ReopenKeepsSegmentsAndData) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", K(50)}).ok());
  ASSERT_TRUE(store_->CreateSegment({2, 7, K(50), ""}).ok());
  ASSERT_TRUE(store_->Apply(5, {{1, K(1), VersionKind::kPut, R(1, "one")},
                                {2, K(60), VersionKind::kPut, R(60, "sixty")}}).ok());
  ASSERT_TRUE(store_->DropSegment(2).ok());
  store_.reset();
  auto s = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->List().size(), 1u);
  EXPECT_EQ(ScanAll(**s, 1, 5).size(), 1u);
  EXPECT_EQ((*(*s)->Get(1))->meta().hi, K(50));
}

}  // namespace
}  // namespace wattdb::storage
