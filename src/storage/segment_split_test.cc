// SegmentStore's splits from the top: one piece of a given size, or many pieces at once, with
// every version and index entry of their keys, and the state they are measured and copied in.
#include <functional>

#include <gtest/gtest.h>

#include "storage/segment_store.h"
#include "storage/segment_store_test_util.h"

namespace wattdb::storage {
namespace {

// Split from the top: the new segment gets about `top_bytes` of the highest keys, with all
// their versions and index entries; the rest stays. Asking for about everything halves.
TEST_F(SegmentStoreTest, SplitFromTheTopMovesAboutTopBytesOfTheHighestKeys) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->AddIndex(1, TextIndex(), 1).ok());
  ASSERT_NO_FATAL_FAILURE(PutTwoVersions(1, 100));
  uint64_t total = (*store_->Get(1))->counters().bytes.load();
  auto split = store_->Split(1, 2, total / 10);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  auto lower = ScanAll(*store_, 1, 5), upper = ScanAll(*store_, 2, 5);  // at 5 a row holds its key
  ASSERT_EQ(lower.size() + upper.size(), 100u);
  EXPECT_GE(upper.size(), 10u);
  EXPECT_LE(upper.size(), 12u);  // the rows are equal-sized, but the index entries count too
  EXPECT_EQ(upper.front().first, static_cast<int64_t>(lower.size()));
  EXPECT_EQ(*split, K(static_cast<int>(lower.size())));
  EXPECT_EQ(upper.front().second, "v1");  // old versions moved with their keys
  EXPECT_EQ(ScanAll(*store_, 2, 9).front().second, "v2");
  EXPECT_EQ(IndexLookup(*store_, 2, "v2", 9).size(), upper.size());
  EXPECT_EQ(IndexLookup(*store_, 1, "v2", 9).size(), lower.size());
  // The remaining segment's counter is what it held less what moved.
  EXPECT_LT((*store_->Get(1))->counters().bytes.load(), total * 95 / 100);
  // More than the segment holds: split at the middle instead.
  auto half = store_->Split(1, 3, total * 10);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  auto rest = ScanAll(*store_, 1, 5), mid = ScanAll(*store_, 3, 5);
  EXPECT_EQ(rest.size() + mid.size(), lower.size());
  EXPECT_GE(rest.size(), lower.size() / 2 - 2);
  EXPECT_GE(mid.size(), lower.size() / 2 - 2);
}

// Several pieces cut off the top in one step: each about the size asked, in key order, with
// all versions and index entries of its keys; fewer when the segment holds less, one key at
// least always staying; a late request for ids already settled as unused is refused.
TEST_F(SegmentStoreTest, SplitPiecesCutsSeveralPiecesOffTheTopAtOnce) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->AddIndex(1, TextIndex(), 1).ok());
  ASSERT_NO_FATAL_FAILURE(PutTwoVersions(1, 200));
  uint64_t total = (*store_->Get(1))->counters().bytes.load();
  auto keys = store_->SplitPieces(1, 10, total / 10, 3);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 3u);
  auto lower = ScanAll(*store_, 1, 5);
  size_t rows = lower.size();
  std::string prev_hi = (*store_->Get(1))->meta().hi;
  EXPECT_EQ(prev_hi, (*keys)[0]);
  for (int i = 0; i < 3; i++) {
    SCOPED_TRACE(i);
    auto piece = ScanAll(*store_, 10 + i, 5);
    ASSERT_FALSE(piece.empty());
    EXPECT_GE(piece.size(),
              19u);  // equal-sized rows: about a tenth of 200 (index entries count too)
    EXPECT_LE(piece.size(), 24u);
    EXPECT_EQ(K(static_cast<int>(piece.front().first)), (*keys)[i]);
    EXPECT_EQ(piece.front().first, static_cast<int64_t>(rows))
        << "pieces follow each other without a gap";
    auto meta = (*store_->Get(10 + i))->meta();
    EXPECT_EQ(meta.lo, prev_hi);
    prev_hi = meta.hi;
    EXPECT_EQ(piece.front().second, "v1");  // old versions moved with their keys
    EXPECT_EQ(ScanAll(*store_, 10 + i, 9).size(), piece.size());
    EXPECT_EQ(IndexLookup(*store_, 10 + i, "v2", 9).size(), piece.size());
    rows += piece.size();
  }
  EXPECT_EQ(prev_hi, "");  // the top piece keeps the old segment's open end
  EXPECT_EQ(rows, 200u);
  EXPECT_EQ(IndexLookup(*store_, 1, "v2", 9).size(), lower.size());
  // Asked for more pieces than the rest holds: as many as fit, something stays.
  ASSERT_TRUE(store_->SettleSplit(1, 23).status().IsNotFound());  // id 23 is barred from now on
  auto late = store_->SplitPieces(1, 20, total / 10, 4);
  EXPECT_FALSE(late.ok()) << "a settled-as-unused id was made";
  EXPECT_TRUE(store_->Get(20).status().IsNotFound());
  auto more = store_->SplitPieces(1, 30, total / 10, 50);
  ASSERT_TRUE(more.ok()) << more.status().ToString();
  EXPECT_LT(more->size(), 50u);
  EXPECT_GE(more->size(), 4u);
  EXPECT_FALSE(ScanAll(*store_, 1, 5).empty());
  EXPECT_TRUE(store_->Get(30 + more->size()).status().IsNotFound());
  // And all of it after a reopen.
  store_.reset();
  auto reopened = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  size_t all = ScanAll(**reopened, 1, 9).size();
  for (int i = 0; i < 3; i++) all += ScanAll(**reopened, 10 + i, 9).size();
  for (size_t i = 0; i < more->size(); i++) all += ScanAll(**reopened, 30 + i, 9).size();
  EXPECT_EQ(all, 200u);
}

// With its rows in table files, a cut from the top starts at a file's first key, found from
// the files' size estimates without reading rows, and the copy cuts the pieces as they fill.
TEST_F(SegmentStoreTest, SplitPiecesStartsAtATableFileEstimatedToHoldTheTop) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  const std::string v(300, 'v');          // files of several blocks: size estimates inside a file
  for (int file = 0; file < 6; file++) {  // rows 50 * file .. 50 * file + 49 in a file each
    std::vector<WriteOp> ops;
    for (int i = file * 50; i < file * 50 + 50; i++)
      ops.push_back({1, K(i), VersionKind::kPut, R(i, v)});
    ASSERT_TRUE(store_->Apply(5 + file, ops).ok());
    ASSERT_TRUE(store_->FlushSegment(1).ok());
  }
  uint64_t total = (*store_->Get(1))->counters().bytes.load();
  uint64_t piece = total * 12 / 60;  // a fifth of the segment: 60 rows' worth
  auto keys = store_->SplitPieces(1, 10, piece, 2);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  auto lower = ScanAll(*store_, 1, 20), first = ScanAll(*store_, 10, 20),
       second = ScanAll(*store_, 11, 20);
  ASSERT_FALSE(lower.empty());
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  EXPECT_EQ(first.front().first % 50, 0)
      << "the top starts at a file's first key, not at " << first.front().first;
  EXPECT_GE(300 - first.front().first, 100) << "about two pieces' worth (120 rows) lie above it";
  EXPECT_LE(300 - first.front().first, 200);
  EXPECT_EQ(K(static_cast<int>(first.front().first)), (*keys)[0]);
  EXPECT_EQ(K(static_cast<int>(second.front().first)), (*keys)[1]);
  EXPECT_EQ(second.front().first, first.back().first + 1);
  EXPECT_GE(first.size(), 58u);  // the first piece filled to `piece` before the cut
  EXPECT_LE(first.size(), 62u);
  EXPECT_EQ(lower.size() + first.size() + second.size(), 300u);
  EXPECT_EQ(lower.back().first + 1, first.front().first);
  EXPECT_EQ((*store_->Get(10))->meta().hi, (*keys)[1]);
  EXPECT_EQ((*store_->Get(11))->meta().hi, "");
}

// Old versions collected between finding the cuts and copying do not change what the pieces
// hold: both read one state (before, the pieces came out about half the size measured, and a
// piece whose keys were all collected failed the split).
TEST_F(SegmentStoreTest, VersionsCollectedDuringASplitLeaveItsPiecesAsMeasured) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_NO_FATAL_FAILURE(PutTwoVersions(1, 200));
  uint64_t total = (*store_->Get(1))->counters().bytes.load();
  store_->SetGcHorizon(20);  // the versions at 5 are hidden from every reader from now on
  store_->set_after_split_find_for_test([&] { ASSERT_TRUE(store_->CompactSegment(1).ok()); });
  auto keys = store_->SplitPieces(1, 10, total / 10, 3);
  store_->set_after_split_find_for_test(nullptr);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 3u);
  for (int i = 0; i < 3; i++) {
    SCOPED_TRACE(i);
    auto piece = ScanAll(*store_, 10 + i, 9);
    EXPECT_GE(piece.size(), 18u) << "a tenth of the rows, as measured with both versions";
    EXPECT_LE(piece.size(), 22u);
    EXPECT_GE((*store_->Get(10 + i))->counters().bytes.load(), total / 10);
  }
  size_t all = ScanAll(*store_, 1, 9).size();
  for (int i = 0; i < 3; i++) all += ScanAll(*store_, 10 + i, 9).size();
  EXPECT_EQ(all, 200u);
}

}  // namespace
}  // namespace wattdb::storage
