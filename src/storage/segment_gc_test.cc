// SegmentStore's garbage collection: which versions flushes and compactions drop, what a
// collection costs, and the byte counts they leave.
#include <set>

#include <gtest/gtest.h>

#include "storage/segment_store.h"
#include "storage/segment_store_test_util.h"

namespace wattdb::storage {
namespace {

TEST_F(SegmentStoreTest, GcDropsOnlyVersionsNoSnapshotCanSee) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  for (Timestamp ts : {10, 20, 30, 40}) {
    ASSERT_TRUE(store_
                    ->Apply(ts, {{1, K(1), VersionKind::kPut, R(1, fmt::format("v{}", ts))},
                                 {1, K(2), VersionKind::kPut, R(2, fmt::format("w{}", ts))}})
                    .ok());
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

// Deleted rows, and the index entries their rows left, are dropped by a compaction of the
// whole segment once the horizon passed their deletion: nothing of them is left for scans to
// step over. Below the horizon they stay, and readers before the deletion see the rows.
TEST_F(SegmentStoreTest, AFullCompactionDropsDeletionsTheHorizonPassed) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->AddIndex(1, TextIndex(), 1).ok());
  std::vector<WriteOp> rows, dels;
  for (int i = 0; i < 1000; i++) {
    rows.push_back({1, K(i), VersionKind::kPut, R(i, i % 2 ? "odd" : "even")});
    if (i >= 10) dels.push_back({1, K(i), VersionKind::kDelete, ""});
  }
  ASSERT_TRUE(store_->Apply(5, rows).ok());
  ASSERT_TRUE(store_->Apply(10, {{1, K(1), VersionKind::kPut, R(1, "moved")}})
                  .ok());  // leaves a "gone" entry
  ASSERT_TRUE(store_->Apply(20, dels).ok());
  SegmentCounters& c = (*store_->Get(1))->counters();
  store_->SetGcHorizon(15);  // below the deletions: they stay
  ASSERT_TRUE(store_->CompactSegment(1).ok());
  const uint64_t kept = c.bytes.load();
  EXPECT_EQ(ScanAll(*store_, 1, 15).size(), 1000u);
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 15).size(), 499u);
  store_->SetGcHorizon(25);
  ASSERT_TRUE(store_->CompactSegment(1).ok());
  EXPECT_EQ(ScanAll(*store_, 1, 25).size(), 10u);
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 25), (std::vector<int64_t>{3, 5, 7, 9}));
  EXPECT_EQ(IndexLookup(*store_, 1, "moved", 25), (std::vector<int64_t>{1}));
  // Ten rows with one version and one index entry each, no deletion: a fiftieth or less.
  EXPECT_LT(c.bytes.load(), kept / 50) << kept;
}

// A collection is one compaction, whatever levels the segment's files are in: the memtable
// is flushed and every table file rewritten into the bottom level at once (not carried down
// one level at a time, rewritten at each).
TEST_F(SegmentStoreTest, ACollectionIsOneCompaction) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  for (int round = 0; round < 3; round++) {
    std::vector<WriteOp> ops;
    for (int i = 0; i < 200; i++)
      ops.push_back({1, K(i), VersionKind::kPut, R(i, fmt::format("r{}", round))});
    ASSERT_TRUE(store_->Apply(10 + round, ops).ok());
    if (round < 2) {
      ASSERT_TRUE(store_->FlushSegment(1).ok());
    }
  }
  for (int collection = 1; collection <= 2; collection++) {
    uint64_t before = *store_->CompactionsOf(1);
    ASSERT_TRUE(store_->CompactSegment(1).ok());
    EXPECT_EQ(*store_->CompactionsOf(1), before + 1) << "collection " << collection;
    ASSERT_TRUE(store_->Apply(20 + collection, {{1, K(7), VersionKind::kPut, R(7, "later")}}).ok());
  }
  EXPECT_EQ(ScanAll(*store_, 1, 30).size(), 200u);
}

// A segment's byte count is of uncompressed keys and values whichever way it was last measured:
// what commits added, what a compaction of well-compressing rows left, what a reopen finds.
TEST_F(SegmentStoreTest, ByteCountsStayUncompressedAcrossCompactionAndReopen) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 200; i++)
    ops.push_back({1, K(i), VersionKind::kPut, R(i, std::string(2000, 'a'))});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  uint64_t written = (*store_->Get(1))->counters().bytes.load();
  EXPECT_GE(written, 200u * 2000);
  ASSERT_TRUE(store_->CompactSegment(1).ok());  // nothing to collect: one version per key
  uint64_t compacted = (*store_->Get(1))->counters().bytes.load();
  EXPECT_GE(compacted, written * 9 / 10);
  EXPECT_LE(compacted, written * 11 / 10);
  store_.reset();
  auto s = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(s.ok());
  uint64_t reopened = (*(*s)->Get(1))->counters().bytes.load();
  EXPECT_GE(reopened, written * 9 / 10);
  EXPECT_LE(reopened, written * 11 / 10);
}

// Scans of a hot row step over its old versions until a compaction drops them: that work is
// counted, and a segment that wasted enough of it is compacted once the horizon passed them.
TEST_F(SegmentStoreTest, OldVersionsScansStepOverAreCollected) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_
                  ->Apply(5, {{1, K(1), VersionKind::kPut, R(1, "a")},
                              {1, K(3), VersionKind::kPut, R(3, "c")}})
                  .ok());
  for (int v = 1; v <= 40; v++) {
    ASSERT_TRUE(
        store_->Apply(10 * v, {{1, K(2), VersionKind::kPut, R(2, fmt::format("v{}", v))}}).ok());
  }
  SegmentCounters& c = (*store_->Get(1))->counters();
  using V = std::vector<std::pair<int64_t, std::string>>;
  const V want{{1, "a"}, {2, "v40"}, {3, "c"}};
  ASSERT_EQ(ScanAll(*store_, 1, 400), want);
  const uint64_t per_scan = c.old_version_work.load();
  EXPECT_GT(per_scan, 8u);  // a few steps over the 39 older versions, then a seek past them
  while (c.old_version_work.load() < SegmentStore::kCollectWorkMin)
    ASSERT_EQ(ScanAll(*store_, 1, 400), want);
  // Nothing to collect until the horizon passes the versions.
  ASSERT_EQ(*store_->CollectGarbage(4), 0);
  store_->SetGcHorizon(400);
  ASSERT_EQ(*store_->CollectGarbage(4), 1);
  EXPECT_EQ(store_->List()[0].collections, 1u);
  EXPECT_EQ(c.old_version_work.load(), 0u);
  ASSERT_EQ(ScanAll(*store_, 1, 400), want);
  EXPECT_EQ(c.old_version_work.load(), 0u);  // one version of each key is left
  // Old versions written since, and stepped over as much: collected only once the horizon
  // moves again (the versions it did not pass would survive a compaction).
  for (int v = 41; v <= 80; v++) {
    ASSERT_TRUE(
        store_->Apply(10 * v, {{1, K(2), VersionKind::kPut, R(2, fmt::format("v{}", v))}}).ok());
  }
  while (c.old_version_work.load() < SegmentStore::kCollectWorkMin)
    ASSERT_EQ(ScanAll(*store_, 1, 800).size(), 3u);
  EXPECT_EQ(*store_->CollectGarbage(4), 0);
  store_->SetGcHorizon(800);
  EXPECT_EQ(*store_->CollectGarbage(4), 1);
  EXPECT_EQ(ScanAll(*store_, 1, 800), (V{{1, "a"}, {2, "v80"}, {3, "c"}}));
  // A stopping store collects nothing more.
  for (int v = 81; v <= 120; v++) {
    ASSERT_TRUE(
        store_->Apply(10 * v, {{1, K(2), VersionKind::kPut, R(2, fmt::format("v{}", v))}}).ok());
  }
  while (c.old_version_work.load() < SegmentStore::kCollectWorkMin)
    ASSERT_EQ(ScanAll(*store_, 1, 1200).size(), 3u);
  store_->SetGcHorizon(1200);
  store_->StopCollecting();
  EXPECT_EQ(*store_->CollectGarbage(4), 0);
  EXPECT_EQ(store_->List()[0].collections, 2u);
}

// A point lookup (the range of one whole key) ends at the key's newest visible version: it
// does not step over the older ones. A range of two keys still steps over them to the next.
TEST_F(SegmentStoreTest, APointLookupStopsAtTheKeysVisibleVersion) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->Apply(5, {{1, K(3), VersionKind::kPut, R(3, "c")}}).ok());
  for (int v = 1; v <= 40; v++) {
    ASSERT_TRUE(
        store_->Apply(10 * v, {{1, K(2), VersionKind::kPut, R(2, fmt::format("v{}", v))}}).ok());
  }
  SegmentCounters& c = (*store_->Get(1))->counters();
  auto rows_in = [&](const std::string& lo, const std::string& hi, Timestamp ts) {
    auto sc = store_->Scan(1, lo, hi, ts);
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    std::vector<ScanRow> rows;
    while (true) {
      auto more = (*sc)->Next(10, &rows);
      EXPECT_TRUE(more.ok());
      if (!more.ok() || !*more) break;
    }
    std::vector<std::string> got;
    for (auto& r : rows) {
      std::vector<Value> v;
      EXPECT_TRUE(DecodeRow(r.row, &v).ok());
      got.push_back(v[1].as_text());
    }
    return got;
  };
  EXPECT_EQ(rows_in(K(2), PrefixSuccessor(K(2)), 400), std::vector<std::string>{"v40"});
  EXPECT_EQ(c.old_version_work.load(), 0u);
  EXPECT_EQ(rows_in(K(2), PrefixSuccessor(K(2)), 205), std::vector<std::string>{"v20"});
  EXPECT_EQ(c.old_version_work.load(), 0u);
  EXPECT_EQ(rows_in(K(2), PrefixSuccessor(K(3)), 400), (std::vector<std::string>{"v40", "c"}));
  EXPECT_GT(c.old_version_work.load(), 0u);
}

// A memtable's shadowed versions below the horizon never reach a table file.
TEST_F(SegmentStoreTest, AFlushDropsVersionsNoSnapshotCanSee) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  for (int v = 1; v <= 20; v++) {
    ASSERT_TRUE(
        store_->Apply(10 * v, {{1, K(2), VersionKind::kPut, R(2, fmt::format("v{}", v))}}).ok());
  }
  store_->SetGcHorizon(150);  // versions 15..20 stay: 16..20 are newer, 15 is what 150 sees
  ASSERT_TRUE(store_->FlushSegment(1).ok());
  SegmentCounters& c = (*store_->Get(1))->counters();
  using V = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(ScanAll(*store_, 1, 200), (V{{2, "v20"}}));
  EXPECT_EQ(c.old_version_work.load(), 5u);
  EXPECT_EQ(ScanAll(*store_, 1, 150), (V{{2, "v15"}}));
  EXPECT_TRUE(ScanAll(*store_, 1, 140).empty());
}

}  // namespace
}  // namespace wattdb::storage
