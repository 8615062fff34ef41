#include "storage/segment_store.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/sst_file_reader.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table_properties.h>
#include <rocksdb/write_batch.h>

#include "common/bytes.h"
#include "common/codec.h"
#include "storage/kv_store.h"
#include "storage/log_prefill_fs.h"
#include "storage/segment_store_test_util.h"
#include "storage/segment_store_util.h"

namespace wattdb::storage {
namespace {

TEST_F(SegmentStoreTest, IndexEntriesFollowRowVersions) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 10; i++)
    ops.push_back({1, K(i), VersionKind::kPut, R(i, i % 2 ? "odd" : "even")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  // Built at 5: entries for every row visible then.
  ASSERT_TRUE(store_->AddIndex(1, TextIndex(), 5).ok());
  EXPECT_EQ(store_->AddIndex(1, TextIndex(), 5).code(), Status::Code::kAlreadyExists);
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 5), (std::vector<int64_t>{1, 3, 5, 7, 9}));
  // Maintained from then on: an update moves row 3, a delete removes row 5, an insert adds 11,
  // and a rewrite of row 7 with the same value changes nothing.
  ASSERT_TRUE(store_
                  ->Apply(9, {{1, K(3), VersionKind::kPut, R(3, "even")},
                              {1, K(5), VersionKind::kDelete, ""},
                              {1, K(11), VersionKind::kPut, R(11, "odd")},
                              {1, K(7), VersionKind::kPut, R(7, "odd")}})
                  .ok());
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 9), (std::vector<int64_t>{1, 7, 9, 11}));
  EXPECT_EQ(IndexLookup(*store_, 1, "even", 9), (std::vector<int64_t>{0, 2, 3, 4, 6, 8}));
  // Old snapshots see the old entries.
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 8), (std::vector<int64_t>{1, 3, 5, 7, 9}));
  // Two writes of one key in one commit: entries go from the committed row to the last write.
  ASSERT_TRUE(store_
                  ->Apply(12, {{1, K(1), VersionKind::kPut, R(1, "mid")},
                               {1, K(1), VersionKind::kPut, R(1, "last")}})
                  .ok());
  EXPECT_EQ(IndexLookup(*store_, 1, "mid", 12), std::vector<int64_t>{});
  EXPECT_EQ(IndexLookup(*store_, 1, "last", 12), std::vector<int64_t>{1});
  EXPECT_EQ(IndexLookup(*store_, 1, "odd", 12), (std::vector<int64_t>{7, 9, 11}));
  // Row scans never see index entries.
  EXPECT_EQ(ScanAll(*store_, 1, 12).size(), 10u);
  // Dropped: the entries go, the segment forgets the index.
  ASSERT_TRUE(store_->DropIndex(1, 3).ok());
  EXPECT_TRUE((*store_->Get(1))->meta().indexes.empty());
  EXPECT_EQ(store_->ScanIndex(1, "", "", 3, "", "", 12).status().code(),
            Status::Code::kInvalidArgument);
}

TEST_F(SegmentStoreTest, IndexEntriesMoveWithSplitsAndExports) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_->AddIndex(1, TextIndex(), 1).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++)
    ops.push_back({1, K(i), VersionKind::kPut, R(i, i % 3 ? "x" : "y")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  auto split = store_->Split(1, 2);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ((*store_->Get(2))->meta().indexes, std::vector<IndexKeySpec>{TextIndex()});
  auto lower = IndexLookup(*store_, 1, "y", 5), upper = IndexLookup(*store_, 2, "y", 5);
  EXPECT_EQ(lower.size() + upper.size(), 34u);
  std::string lo_split = *split;
  for (int64_t i : upper) EXPECT_GE(K(i), lo_split);
  for (int64_t i : lower) EXPECT_LT(K(i), lo_split);
  // A scan that expects the pre-split range learns the segment shrank.
  EXPECT_TRUE(store_->ScanIndex(1, "", "", 3, "", "", 5).status().IsStale());

  auto exp = store_->Export(2, (root_ / "export2").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Import(*exp).ok());
  EXPECT_EQ(IndexLookup(**other, 2, "y", 5), upper);
  // The imported segment keeps maintaining the index.
  ASSERT_TRUE((*other)->Apply(6, {{2, K(99), VersionKind::kPut, R(99, "y")}}).ok());
  EXPECT_EQ(IndexLookup(**other, 2, "y", 6).back(), 99);
}

// A commit of more than kIngestAbove rows is ingested as table files: what it stores, and
// when it is visible, is what the write-batch path gives (here: the same rows committed in
// small pieces in a second store), the outcome is recorded, and all of it survives a reopen
// and a move of the segment. Segment 2's rows are written into several files on as many
// threads (their cuts fall between keys, never between two writes of one key).
TEST_F(SegmentStoreTest, ALargeCommitIsIngestedAndReadsAsABatchCommitWould) {
  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE(other.ok());
  store_->set_ingest_file_rows(9999);
  for (SegmentStore* st : {store_.get(), other->get()}) {
    ASSERT_TRUE(st->CreateSegment({1, 7, "", K(60000)}).ok());
    ASSERT_TRUE(st->CreateSegment({2, 7, K(60000), ""}).ok());
    ASSERT_TRUE(st->Apply(5, {{1, K(7), VersionKind::kPut, R(7, "older")}}).ok());
  }
  // Both segments, keys out of order, one key written twice (the last write wins), a delete.
  std::vector<WriteOp> ops;
  const int n = static_cast<int>(SegmentStore::kIngestAbove) + 20000;
  for (int i = n - 1; i >= 0; i--)
    ops.push_back({i < 60000 ? 1u : 2u, K(i), VersionKind::kPut, R(i, "v")});
  for (int i = 60000; i < n; i += 37) ops.push_back({2, K(i), VersionKind::kPut, R(i, "again")});
  ops.push_back({1, K(3), VersionKind::kPut, R(3, "again")});
  ops.push_back({1, K(7), VersionKind::kDelete, ""});
  ASSERT_TRUE(store_->Apply(10, ops, 0, /*txn=*/42).ok());
  EXPECT_EQ(store_->ingested_commits(), 1u);
  for (size_t at = 0; at < ops.size(); at += 1000) {
    std::vector<WriteOp> piece(ops.begin() + at, ops.begin() + std::min(ops.size(), at + 1000));
    ASSERT_TRUE((*other)->Apply(10, piece).ok());
  }
  EXPECT_EQ((*other)->ingested_commits(), 0u);
  auto check = [&](SegmentStore& st) {
    for (SegmentId seg : {1u, 2u}) {
      EXPECT_EQ(ScanAll(st, seg, 10), ScanAll(**other, seg, 10)) << "segment " << seg;
      EXPECT_EQ(ScanAll(st, seg, 9), ScanAll(**other, seg, 9)) << "segment " << seg;
    }
    auto older = ScanAll(st, 1, 9);
    ASSERT_EQ(older.size(), 1u);
    EXPECT_EQ(older[0].second, "older");
    auto now = ScanAll(st, 1, 10);
    ASSERT_EQ(now.size(), 59999u);  // key 7 deleted
    EXPECT_EQ(now[3].second, "again");
    auto upper = ScanAll(st, 2, 10);
    ASSERT_EQ(upper.size(), static_cast<size_t>(n - 60000));
    for (size_t i = 0; i < upper.size(); i++)
      ASSERT_EQ(upper[i].second, i % 37 == 0 ? "again" : "v") << i;
    EXPECT_EQ(*st.CommittedAt(42), std::optional<Timestamp>(10));
  };
  check(*store_);
  store_.reset();
  auto reopened = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  store_ = std::move(reopened).value();
  check(*store_);
  // The ingested files move with their segment, under a later version of one row.
  ASSERT_TRUE(store_->Apply(20, {{1, K(5), VersionKind::kPut, R(5, "newer")}}).ok());
  auto exp = store_->Export(1, (root_ / "export1").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  auto moved = SegmentStore::Open((root_ / "c").string());
  ASSERT_TRUE(moved.ok());
  Status imported = (*moved)->Import(*exp);
  ASSERT_TRUE(imported.ok()) << imported.ToString();
  EXPECT_EQ(ScanAll(**moved, 1, 10), ScanAll(**other, 1, 10));
  EXPECT_EQ(ScanAll(**moved, 1, 20)[5].second, "newer");
  EXPECT_EQ(ScanAll(**moved, 1, 9).size(), 1u);
}

TEST_F(SegmentStoreTest, SnapshotSeesItsVersion) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_
                  ->Apply(10, {{1, K(1), VersionKind::kPut, R(1, "a")},
                               {1, K(2), VersionKind::kPut, R(2, "b")}})
                  .ok());
  ASSERT_TRUE(store_
                  ->Apply(20, {{1, K(1), VersionKind::kPut, R(1, "a2")},
                               {1, K(2), VersionKind::kDelete, ""}})
                  .ok());
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

// A synced commit tells its caller (on_written) once its rows are readable, before the log
// sync: by then its write window has closed, so a read of the segment made while the commit
// was being written is no longer current (a writer let go by an early lock release re-checks
// its key), and a read made from then on stays current through the sync.
TEST_F(SegmentStoreTest, ACommitsWriteWindowEndsBeforeItIsToldWrittenAndSynced) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  store_->set_sync_commits(true);
  ASSERT_TRUE(store_->Apply(10, {{1, K(1), VersionKind::kPut, R(1, "a")}}).ok());
  SegmentRef seg = *store_->Get(1);
  const uint64_t before = seg->write_seq();
  uint64_t at_written = 0, ticket = 0;
  std::optional<SeenLatest> seen;
  ASSERT_TRUE(store_
                  ->Apply(20, {{1, K(1), VersionKind::kPut, R(1, "b")}}, 0, 0, true,
                          [&](uint64_t t) {
                            ticket = t;
                            at_written = seg->write_seq();
                            auto sc = store_->Scan(1, K(1), K(2), 15);
                            std::vector<ScanRow> rows;
                            EXPECT_TRUE(sc.ok() && (*sc)->Next(10, &rows).ok());
                            seen = (*sc)->first_seen();
                          })
                  .ok());
  EXPECT_NE(ticket, 0u);
  EXPECT_NE(at_written, before);            // the window opened and closed
  EXPECT_EQ(seg->write_seq(), at_written);  // and nothing changed after it was told
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->latest.ts, 20u);
  EXPECT_TRUE(seen->Current(*seg));
  EXPECT_TRUE(store_->WaitDurable(ticket).ok());
}

// A hot row with many versions (a scan seeks past runs of them rather than stepping): every
// snapshot still sees exactly its version of each key, and the neighbours.
TEST_F(SegmentStoreTest, ManyVersionsOfOneKeyEachSnapshotSeesItsOwn) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_
                  ->Apply(5, {{1, K(1), VersionKind::kPut, R(1, "first")},
                              {1, K(3), VersionKind::kPut, R(3, "last")}})
                  .ok());
  for (int v = 1; v <= 100; v++) {
    ASSERT_TRUE(store_
                    ->Apply(10 * v, {{1, K(2), v == 50 ? VersionKind::kDelete : VersionKind::kPut,
                                      v == 50 ? "" : R(2, fmt::format("v{}", v))}})
                    .ok());
  }
  using V = std::vector<std::pair<int64_t, std::string>>;
  EXPECT_EQ(ScanAll(*store_, 1, 9), (V{{1, "first"}, {3, "last"}}));
  for (int ts : {10, 15, 90, 230, 495, 500, 505, 510, 999, 1000, 5000}) {
    int v = std::min(ts / 10, 100);
    V want{{1, "first"}};
    if (v != 50) want.emplace_back(2, fmt::format("v{}", v));
    want.emplace_back(3, "last");
    EXPECT_EQ(ScanAll(*store_, 1, ts), want) << "snapshot " << ts;
  }
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

// A segment armed to record keeps every commit's versions from then on, as readers at each
// timestamp see them, until a change that is not a commit (a split) or too many bytes end
// the recording.
TEST_F(SegmentStoreTest, ASegmentRecordsCommitsSinceItWasArmedUntilAnotherChange) {
  ASSERT_TRUE(store_->CreateSegment({1, 1, "", ""}).ok());
  auto put = [&](int64_t k, Timestamp ts, size_t pad = 1, bool del = false) {
    WriteOp op{1, K(k), del ? VersionKind::kDelete : VersionKind::kPut,
               del ? "" : R(k, std::string(pad, 'x'))};
    ASSERT_TRUE(store_->Apply(ts, {op}).ok());
  };
  SegmentRef seg = *store_->Get(1);
  put(1, 10);
  const uint64_t base = seg->ArmRecent();
  EXPECT_TRUE(seg->RecentCovers(base));
  put(2, 20);
  put(1, 21, 1, true);
  put(2, 22, 2);
  EXPECT_EQ(seg->data_version(), base + 3);
  EXPECT_TRUE(seg->RecentCovers(base));
  auto at = [&](Timestamp ts, std::string_view lo = "", std::string_view hi = "") {
    std::vector<RecentRow> rows;
    EXPECT_TRUE(seg->RecentAt(base, lo, hi, ts, &rows));
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r.key + (r.deleted ? "-" : "+" + r.row.ToString()));
    return out;
  };
  EXPECT_EQ(at(15), std::vector<std::string>{});
  EXPECT_EQ(at(20), std::vector<std::string>{K(2) + "+" + R(2, "x")});
  EXPECT_EQ(at(21), (std::vector<std::string>{K(1) + "-", K(2) + "+" + R(2, "x")}));
  EXPECT_EQ(at(30), (std::vector<std::string>{K(1) + "-", K(2) + "+" + R(2, "xx")}));
  EXPECT_EQ(at(30, K(2)), std::vector<std::string>{K(2) + "+" + R(2, "xx")});
  EXPECT_EQ(at(30, "", K(2)), std::vector<std::string>{K(1) + "-"});
  // One stored key, found by hash: what the walk of its range finds.
  auto key_at = [&](Timestamp ts, int64_t k) {
    std::vector<RecentRow> rows;
    EXPECT_TRUE(seg->RecentAt(base, K(k), PrefixSuccessor(K(k)), ts, &rows, /*lo_alone=*/true));
    std::vector<std::string> out;
    for (const auto& r : rows) out.push_back(r.key + (r.deleted ? "-" : "+" + r.row.ToString()));
    EXPECT_EQ(out, at(ts, K(k), PrefixSuccessor(K(k))));
    return out;
  };
  EXPECT_EQ(key_at(21, 2), std::vector<std::string>{K(2) + "+" + R(2, "x")});
  EXPECT_EQ(key_at(30, 2), std::vector<std::string>{K(2) + "+" + R(2, "xx")});
  EXPECT_EQ(key_at(30, 1), std::vector<std::string>{K(1) + "-"});
  EXPECT_EQ(key_at(20, 1), std::vector<std::string>{}) << "recorded, but not yet at 20";
  EXPECT_EQ(key_at(30, 7), std::vector<std::string>{}) << "never recorded";
  std::vector<RecentRow> rows;
  EXPECT_FALSE(seg->RecentAt(base + 1, "", "", 30, &rows)) << "a recording from another base";
  put(3, 30);
  EXPECT_GT(seg->recent_bytes(), 0u);
  // A split is not a commit: the recording ends.
  ASSERT_TRUE(store_->Split(1, 2).ok());
  EXPECT_FALSE(seg->RecentCovers(base));
  EXPECT_EQ(seg->recent_bytes(), 0u);
  // Past RecentVersions::kMaxBytes the recording ends too.
  const uint64_t again = seg->ArmRecent();
  rows.clear();
  EXPECT_TRUE(seg->RecentAt(again, K(1), PrefixSuccessor(K(1)), 50, &rows, /*lo_alone=*/true));
  EXPECT_TRUE(rows.empty()) << "recorded before the recording began again";
  size_t written = 0;
  for (int64_t k = 10; written <= RecentVersions::kMaxBytes; k++, written += 1 << 20)
    put(1, 40 + k, 1 << 20);
  EXPECT_FALSE(seg->RecentCovers(again));
  EXPECT_EQ(seg->recent_bytes(), 0u);
}

// All recordings of the process share one budget: the recording whose commit would pass it
// ends (its image goes), the others go on, and ended or destroyed recordings give their
// bytes back.
TEST_F(SegmentStoreTest, RecordingsShareOneBudget) {
  const size_t before = RecentVersions::total_bytes();
  RecentVersions::set_total_budget(before + (1u << 20));
  ASSERT_TRUE(store_->CreateSegment({1, 1, "", K(1000)}).ok());
  ASSERT_TRUE(store_->CreateSegment({2, 1, K(1000), ""}).ok());
  SegmentRef a = *store_->Get(1), b = *store_->Get(2);
  const uint64_t base_a = a->ArmRecent(), base_b = b->ArmRecent();
  auto put = [&](SegmentId seg, int64_t k, Timestamp ts) {
    WriteOp op{seg, K(k), VersionKind::kPut, R(k, std::string(300 << 10, 'x'))};
    ASSERT_TRUE(store_->Apply(ts, {op}).ok());
  };
  put(1, 1, 10);
  put(2, 1001, 11);
  put(1, 2, 12);
  EXPECT_TRUE(a->RecentCovers(base_a));
  EXPECT_TRUE(b->RecentCovers(base_b));
  EXPECT_EQ(RecentVersions::total_bytes(), before + a->recent_bytes() + b->recent_bytes());
  put(2, 1002, 13);  // passes 1 MiB
  EXPECT_TRUE(a->RecentCovers(base_a));
  EXPECT_FALSE(b->RecentCovers(base_b));
  EXPECT_EQ(RecentVersions::total_bytes(), before + a->recent_bytes());
  EXPECT_LE(RecentVersions::total_bytes(), before + (1u << 20));
  put(1, 3, 15);
  EXPECT_TRUE(a->RecentCovers(base_a));
  a->DisarmRecent(base_a);
  EXPECT_EQ(RecentVersions::total_bytes(), before);
  RecentVersions::set_total_budget(RecentVersions::kDefaultTotalBudget);
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

// A row scan's view is taken when it opens: a split (which drops the moved rows from the old
// segment) and writes after that do not change what it reads, and a scan opened after the
// split is refused as stale.
TEST_F(SegmentStoreTest, ARowScanReadsTheViewItOpenedAcrossASplit) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back({1, K(i), VersionKind::kPut, R(i, "v1")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  auto sc = store_->Scan(1, "", "", 20);
  ASSERT_TRUE(sc.ok()) << sc.status().ToString();
  ASSERT_TRUE(store_->Split(1, 2).ok());
  ASSERT_TRUE(store_->Apply(10, {{1, K(0), VersionKind::kPut, R(0, "later")}}).ok());
  std::vector<ScanRow> rows;
  while (true) {
    auto more = (*sc)->Next(7, &rows);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    if (!*more) break;
  }
  ASSERT_EQ(rows.size(), 100u);
  std::vector<Value> v;
  ASSERT_TRUE(DecodeRow(rows[0].row, &v).ok());
  EXPECT_EQ(v[1].as_text(), "v1");
  EXPECT_TRUE(store_->Scan(1, "", "", 20).status().IsStale());
}

// A segment dropped (its table dropped) while it splits: the split gives up, and the store
// opens again without either segment (before, the split wrote the dropped segment's metadata
// back, and the node could not start: "metadata but no column family").
TEST_F(SegmentStoreTest, ASegmentDroppedDuringItsSplitLeavesNothingBehind) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back({1, K(i), VersionKind::kPut, R(i, "v")});
  ASSERT_TRUE(store_->Apply(5, ops).ok());
  store_->set_before_split_write_for_test([&] { ASSERT_TRUE(store_->DropSegment(1).ok()); });
  auto split = store_->Split(1, 2);
  EXPECT_TRUE(split.status().IsNotFound()) << split.status().ToString();
  EXPECT_TRUE(store_->Get(2).status().IsNotFound());
  store_.reset();
  auto reopened = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_TRUE((*reopened)->List().empty());
}

// A segment whose rows were ingested, then dropped: the store opens again without it.
TEST_F(SegmentStoreTest, ASegmentDroppedAfterAnIngestedCommitStaysDropped) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < static_cast<int>(SegmentStore::kIngestAbove) + 10; i++) {
    ops.push_back({1, K(i), VersionKind::kPut, R(i, "v")});
  }
  ASSERT_TRUE(store_->Apply(10, ops, 0, /*txn=*/42).ok());
  ASSERT_EQ(store_->ingested_commits(), 1u);
  ASSERT_TRUE(store_->DropSegment(1).ok());
  store_.reset();
  auto reopened = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_TRUE((*reopened)->List().empty());
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

// A split removes the moved keys with a range deletion; exported before a compaction applied
// it, the segment's newest table file can hold nothing else (RocksDB cannot import such a
// file). The export compacts first; an import refuses such a file instead of failing hard.
TEST_F(SegmentStoreTest, ASegmentSplitJustBeforeItsExportImports) {
  ASSERT_TRUE(store_->CreateSegment({4, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back({4, K(i), VersionKind::kPut, R(i, "r")});
  ASSERT_TRUE(store_->Apply(10, ops).ok());
  ASSERT_TRUE(store_->FlushSegment(4).ok());  // the rows are in a table file; the memtable is empty
  std::function<void()> compact_later;
  auto key =
      store_->Split(4, 5, 0, &compact_later);  // the moved range's removal stays in the memtable
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto exp = store_->Export(4, (root_ / "export4").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Import(*exp).ok());
  EXPECT_EQ(ScanAll(**other, 4, 10), ScanAll(*store_, 4, 10));
  EXPECT_GT(ScanAll(**other, 4, 10).size(), 0u);
  EXPECT_LT(ScanAll(**other, 4, 10).size(), 100u);
  compact_later();
}

// RocksDB 7.8 imports a table file within the bounds of its point keys, so a range deletion
// reaching past them would be cut off and the rows it removed would come back. Here the
// split's removal shares its table file with a later write below the split key.
TEST_F(SegmentStoreTest, RowsASplitRemovedStayRemovedAcrossAnExport) {
  ASSERT_TRUE(store_->CreateSegment({4, 7, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back({4, K(i), VersionKind::kPut, R(i, "r")});
  ASSERT_TRUE(store_->Apply(10, ops).ok());
  ASSERT_TRUE(store_->FlushSegment(4).ok());
  std::function<void()> compact_later;
  auto key = store_->Split(4, 5, 0, &compact_later);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  ASSERT_TRUE(store_->Apply(20, {{4, K(3), VersionKind::kPut, R(3, "new")}}).ok());
  auto exp = store_->Export(4, (root_ / "export4").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  for (const auto& f : exp->files) {  // what an import would cut off: none
    rocksdb::SstFileReader reader{rocksdb::Options()};
    ASSERT_TRUE(reader.Open(exp->dir + "/" + f.name).ok()) << f.name;
    EXPECT_EQ(reader.GetTableProperties()->num_range_deletions, 0u) << f.name;
  }
  auto other = SegmentStore::Open((root_ / "b").string());
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Import(*exp).ok());
  auto rows = ScanAll(**other, 4, 20);
  EXPECT_EQ(rows, ScanAll(*store_, 4, 20));
  ASSERT_FALSE(rows.empty());
  // The split key the imported segment chooses (from every stored row) lies inside it.
  auto again = (*other)->Split(4, 6);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_LT(*again, *key);
  compact_later();
}

// A peer's table file without rows is refused with an error, not imported.
TEST_F(SegmentStoreTest, AnImportOfAFileWithoutRowsIsRefused) {
  fs::create_directories(root_ / "x");
  rocksdb::SstFileWriter w{rocksdb::EnvOptions(), rocksdb::Options()};
  ASSERT_TRUE(w.Open((root_ / "x" / "000001.sst").string()).ok());
  ASSERT_TRUE(w.DeleteRange(K(1), K(9)).ok());
  ASSERT_TRUE(w.Finish().ok());
  SegmentExport exp;
  exp.meta = {6, 7, "", ""};
  exp.dir = (root_ / "x").string();
  exp.comparator = "leveldb.BytewiseComparator";
  exp.files.push_back(ExportedFile{"000001.sst", 6, fs::file_size(root_ / "x" / "000001.sst"), 0, 0,
                                   K(1), K(9), 0, 0});
  Status st = store_->Import(exp);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.ToString();
  EXPECT_FALSE(store_->Get(6).ok());
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

// The write-ahead log is written over zeros laid down ahead of it (LogPrefillFs): a store
// that stops without closing (its files copied as they are) leaves a log ending in zeros,
// and opening the copy recovers every synced commit; a clean close cuts the zeros off.
TEST_F(SegmentStoreTest, ALogEndingInPrefilledZerosRecoversEverySyncedCommit) {
  store_->set_sync_commits(true);
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  for (int i = 0; i < 200; i++) {
    ASSERT_TRUE(
        store_->Apply(10 + i, {{1, K(i), VersionKind::kPut, R(i, fmt::format("v{}", i))}}).ok());
  }
  auto live_log = [](const fs::path& dir) {
    std::vector<fs::path> logs;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().extension() == ".log") logs.push_back(e.path());
    }
    std::sort(logs.begin(), logs.end());
    return logs.empty() ? fs::path() : logs.back();
  };
  fs::path log = live_log(root_ / "a");
  ASSERT_FALSE(log.empty());
  EXPECT_GE(fs::file_size(log), LogPrefillFs::kPrefillBytes)
      << "the log runs ahead of its contents";
  fs::copy(root_ / "a", root_ / "crashed", fs::copy_options::recursive);
  {
    auto copy = SegmentStore::Open((root_ / "crashed").string());
    ASSERT_TRUE(copy.ok()) << copy.status().ToString();
    auto rows = ScanAll(**copy, 1, 1000);
    ASSERT_EQ(rows.size(), 200u);
    EXPECT_EQ(rows[199], std::make_pair(int64_t{199}, std::string("v199")));
    // It goes on writing where the recovered log ended.
    ASSERT_TRUE((*copy)->Apply(500, {{1, K(1000), VersionKind::kPut, R(1000, "after")}}).ok());
  }
  auto reopened = SegmentStore::Open((root_ / "crashed").string());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  EXPECT_EQ(ScanAll(**reopened, 1, 1000).size(), 201u);
  reopened->reset();
  store_.reset();  // a clean close: the zeros are cut off
  EXPECT_LT(fs::file_size(log), LogPrefillFs::kPrefillBytes);
}

// Every open starts a new informational log; only the last few are kept.
TEST_F(SegmentStoreTest, ReopeningKeepsOnlyTheLastInformationalLogs) {
  store_.reset();
  auto logs = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(root_ / "a"))
      n += e.path().filename().string().rfind("LOG", 0) == 0;
    return n;
  };
  for (size_t i = 0; i < kKeptInfoLogs + 5; i++) {
    auto s = SegmentStore::Open((root_ / "a").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  EXPECT_GE(logs(), 2u);
  EXPECT_LE(logs(), kKeptInfoLogs);
}

// A segment's NewestRows: a point scan of a key with several versions offers the newest
// one, unless the segment was written meanwhile; keys of one version stay out; commits
// replace the versions it holds (and add none); a split clears it.
TEST_F(SegmentStoreTest, NewestRowsFollowCommitsPointScansAndSplits) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  SegmentRef seg = *store_->Get(1);
  ASSERT_TRUE(store_
                  ->Apply(10, {{1, K(1), VersionKind::kPut, R(1, "a")},
                               {1, K(2), VersionKind::kPut, R(2, "b")},
                               {1, K(5), VersionKind::kPut, R(5, "once")}})
                  .ok());
  ASSERT_TRUE(store_
                  ->Apply(12, {{1, K(1), VersionKind::kPut, R(1, "a2")},
                               {1, K(2), VersionKind::kPut, R(2, "b2")}})
                  .ok());
  EXPECT_EQ(seg->newest().size(), 0u) << "no point read asked for them";
  auto point = [&](int64_t k, Timestamp ts) {
    auto sc = store_->Scan(1, K(k), PrefixSuccessor(K(k)), ts);
    EXPECT_TRUE(sc.ok());
    std::vector<ScanRow> rows;
    EXPECT_TRUE((*sc)->Next(10, &rows).ok());
    return std::move(sc).value();
  };
  point(5, 15).reset();
  EXPECT_EQ(seg->newest().size(), 0u) << "a key of one version stays out";
  point(1, 15).reset();
  auto newest = seg->newest().Get(K(1));
  ASSERT_TRUE(newest.has_value());
  EXPECT_EQ(newest->ts, 12u);
  EXPECT_FALSE(newest->deleted);
  EXPECT_EQ(newest->row, R(1, "a2"));
  ASSERT_TRUE(store_->Apply(20, {{1, K(1), VersionKind::kDelete, ""}}).ok());
  EXPECT_TRUE(seg->newest().Get(K(1))->deleted);
  EXPECT_EQ(seg->newest().Get(K(1))->ts, 20u);
  EXPECT_FALSE(seg->newest().Get(K(2)).has_value()) << "commits add no key";

  seg->newest().Clear();
  point(2, 15).reset();
  ASSERT_TRUE(seg->newest().Get(K(2)).has_value());
  EXPECT_EQ(seg->newest().Get(K(2))->row, R(2, "b2"));
  point(1, 15).reset();  // sees version 12; the newest is the deletion at 20
  ASSERT_TRUE(seg->newest().Get(K(1)).has_value());
  EXPECT_TRUE(seg->newest().Get(K(1))->deleted);
  // A scan whose segment was written after its view was taken offers nothing.
  seg->newest().Clear();
  auto stale = point(2, 15);
  ASSERT_TRUE(store_->Apply(30, {{1, K(3), VersionKind::kPut, R(3, "c")}}).ok());
  stale.reset();
  EXPECT_FALSE(seg->newest().Get(K(2)).has_value());
  // Range scans offer nothing.
  {
    auto sc = store_->Scan(1, K(1), K(4), 40);
    std::vector<ScanRow> rows;
    ASSERT_TRUE((*sc)->Next(10, &rows).ok());
  }
  EXPECT_EQ(seg->newest().size(), 0u);
  // A split clears the segment it shrinks.
  point(2, 60).reset();
  EXPECT_GT(seg->newest().size(), 0u);
  ASSERT_TRUE(store_->Split(1, 2).ok());
  EXPECT_EQ(seg->newest().size(), 0u);
}

TEST_F(SegmentStoreTest, ReopenKeepsSegmentsAndData) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", K(50)}).ok());
  ASSERT_TRUE(store_->CreateSegment({2, 7, K(50), ""}).ok());
  ASSERT_TRUE(store_
                  ->Apply(5, {{1, K(1), VersionKind::kPut, R(1, "one")},
                              {2, K(60), VersionKind::kPut, R(60, "sixty")}})
                  .ok());
  ASSERT_TRUE(store_->DropSegment(2).ok());
  store_.reset();
  auto s = SegmentStore::Open((root_ / "a").string());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->List().size(), 1u);
  EXPECT_EQ(ScanAll(**s, 1, 5).size(), 1u);
  EXPECT_EQ((*(*s)->Get(1))->meta().hi, K(50));
}

// A store written before secondary indexes (segment metadata format 1, row keys without the
// key-space byte) opens upgraded, with its rows intact.
TEST_F(SegmentStoreTest, OpensAndUpgradesFormatOneStores) {
  ASSERT_TRUE(store_->CreateSegment({1, 7, "", ""}).ok());
  ASSERT_TRUE(store_
                  ->Apply(5, {{1, K(1), VersionKind::kPut, R(1, "one")},
                              {1, K(2), VersionKind::kPut, R(2, "two")}})
                  .ok());
  store_.reset();
  {  // Rewrite it as the old format.
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {{rocksdb::kDefaultColumnFamilyName, {}},
                                                        {"seg_1", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> hs;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::Options(), (root_ / "a").string(), cfs, &hs, &raw).ok());
    rocksdb::WriteBatch b;
    std::unique_ptr<rocksdb::Iterator> it(raw->NewIterator(rocksdb::ReadOptions(), hs[1]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      (void)b.Put(hs[1], it->key().ToStringView().substr(1), it->value());
      (void)b.Delete(hs[1], it->key());
    }
    std::string meta;
    ByteWriter w(&meta);
    w.U8(1);
    w.VarU64(1);
    w.VarU64(7);
    w.Str("");
    w.Str("");
    (void)b.Put(std::string("m/seg/") + std::string(7, '\0') + '\1', meta);
    ASSERT_TRUE(raw->Write(rocksdb::WriteOptions(), &b).ok());
    it.reset();
    for (auto* h : hs) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  for (int round = 0; round < 2; round++) {  // upgraded once, then opened as it is
    auto s = SegmentStore::Open((root_ / "a").string());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    auto rows = ScanAll(**s, 1, 5);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].second, "two");
  }
}

// An operation on a segment that a move or split dropped while the operation held it (VACUUM's
// compaction, a flush) reports Stale, so that callers skip or re-resolve it as they do a
// segment no longer found, instead of failing with an I/O error.
TEST(SegmentStoreStatus, AColumnFamilyDroppedMeanwhileIsStale) {
  fs::path dir = fs::temp_directory_path() / fmt::format("wattdb_storage_{}_dropped_cf", getpid());
  fs::remove_all(dir);
  rocksdb::Options o;
  o.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(o, dir.string(), &raw).ok());
  rocksdb::ColumnFamilyHandle* cf = nullptr;
  ASSERT_TRUE(raw->CreateColumnFamily(rocksdb::ColumnFamilyOptions(), "seg", &cf).ok());
  ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), cf, "k", "v").ok());
  ASSERT_TRUE(raw->DropColumnFamily(cf).ok());
  Status flush = internal::FromRocks(raw->Flush(rocksdb::FlushOptions(), cf), "flush segment");
  Status compact = internal::FromRocks(
      raw->CompactRange(rocksdb::CompactRangeOptions(), cf, nullptr, nullptr), "compact segment");
  EXPECT_TRUE(flush.IsStale()) << flush.ToString();
  EXPECT_TRUE(compact.IsStale()) << compact.ToString();
  EXPECT_NE(compact.message().find("compact segment"), std::string::npos) << compact.ToString();
  EXPECT_EQ(internal::FromRocks(rocksdb::Status::IOError("disk"), "write").code(),
            Status::Code::kIOError);
  raw->DestroyColumnFamilyHandle(cf);
  delete raw;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace wattdb::storage
