#include "node/column_cache.h"

#include <filesystem>
#include <random>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "node/segment_rows.h"

namespace wattdb::node {
namespace {

class ColumnCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_colcache_{}", getpid());
    std::filesystem::remove_all(dir_);
    store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
    ASSERT_TRUE(store_->CreateSegment({1, 1, "", ""}).ok());
    participant_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(50));
  }
  void TearDown() override {
    participant_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  static std::string Key(int k) {
    std::string key;
    EncodeKeyValue(Value::Int64(k), &key);
    return key;
  }
  // Rows k = first..last-1 as (k, 'name k', k * 1.5), committed at ts.
  void Put(int first, int last, Timestamp ts) {
    std::vector<storage::WriteOp> ops;
    for (int k = first; k < last; k++) {
      storage::WriteOp op;
      op.segment = scan_segment_;
      op.key = Key(k);
      EncodeRow({Value::Int64(k), Value::Text(fmt::format("name {}", k)), Value::Double(k * 1.5)},
                &op.row);
      ops.push_back(std::move(op));
    }
    ASSERT_TRUE(store_->Apply(ts, ops).ok());
  }
  void Delete(int k, Timestamp ts) {
    storage::WriteOp op;
    op.segment = 1;
    op.key = Key(k);
    op.kind = storage::VersionKind::kDelete;
    ASSERT_TRUE(store_->Apply(ts, {op}).ok());
  }
  // (first column, third column) of every row a fragment-style scan of [lo, hi) reads at
  // read_ts through `cache` (RocksDB if null), and whether it came from an image.
  std::vector<std::pair<int64_t, double>> ScanPairs(ColumnCache* cache, Timestamp read_ts,
                                                    bool* columnar, int lo = -1, int hi = -1) {
    ScanRequest req;
    req.segment = scan_segment_;
    req.read_ts = read_ts;
    if (lo >= 0) req.lo = Key(lo);
    if (hi >= 0) req.hi = Key(hi);
    auto rows = SegmentRows::Open(*store_, *participant_, req, cache);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<std::pair<int64_t, double>> out;
    *columnar = (*rows)->columnar();
    if (*columnar) {
      exec::Batch b;
      b.Reset(3);
      std::string last_key;
      std::vector<bool> used = {true, false, true};
      while ((*rows)->NextBatch(&used, &b, &last_key).value()) {
        EXPECT_EQ(b.cols[1].size(), b.rows);
        for (size_t r = 0; r < b.rows; r++) {
          EXPECT_TRUE(b.cols[1].IsNull(r));  // not used: NULL
          out.emplace_back(b.cols[0].ints()[r], b.cols[2].doubles()[r]);
        }
        EXPECT_EQ(last_key, Key(static_cast<int>(out.back().first)));
      }
    } else {
      std::vector<storage::ScanRow> batch;
      while ((*rows)->Next(1000, SIZE_MAX, &batch).value()) {
        for (const auto& r : batch) {
          std::vector<Value> vals;
          EXPECT_TRUE(DecodeRow(r.row, &vals).ok());
          out.emplace_back(vals[0].as_int(), vals[2].as_double());
        }
      }
    }
    return out;
  }
  // The keys ScanPairs reads, of rows as Put writes them.
  std::vector<int64_t> Scan(ColumnCache* cache, Timestamp read_ts, bool* columnar, int lo = -1,
                            int hi = -1) {
    std::vector<int64_t> keys;
    for (auto [k, v] : ScanPairs(cache, read_ts, columnar, lo, hi)) {
      EXPECT_DOUBLE_EQ(v, k * 1.5);
      keys.push_back(k);
    }
    return keys;
  }
  static std::vector<int64_t> Range(int first, int last) {
    std::vector<int64_t> v;
    for (int k = first; k < last; k++) v.push_back(k);
    return v;
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::SegmentStore> store_;
  std::unique_ptr<Participant> participant_;
  ManualClock clock_;
  SegmentId scan_segment_ = 1;  // the segment Put writes and Scan and ScanPairs read
};

TEST_F(ColumnCacheTest, AQuietSegmentIsReadFromItsImage) {
  Put(0, 3000, 10);
  ColumnCache cache(64 << 20, 1000000, clock_);
  bool columnar = true;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3000));
  EXPECT_FALSE(columnar);  // written just now, as far as the cache knows
  // Unchanged since that read (which started recording the segment's commits): a lookup of
  // a few rows does not pay for a build, a scan of the whole segment does.
  EXPECT_EQ(Scan(&cache, 20, &columnar, 10, 20), Range(10, 20));
  EXPECT_FALSE(columnar);
  EXPECT_EQ(cache.stats().builds, 0u);
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3000));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 1u);
  // Ranges inside the segment, across batch boundaries, read the image that is there.
  EXPECT_EQ(Scan(&cache, 20, &columnar, 1000, 2500), Range(1000, 2500));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(Scan(&cache, 20, &columnar, 2999, -1), Range(2999, 3000));
  EXPECT_EQ(Scan(&cache, 20, &columnar, 5000, -1), Range(0, 0));
  EXPECT_EQ(cache.stats().builds, 1u);
  EXPECT_EQ(cache.stats().images, 1u);
  EXPECT_GT(cache.stats().bytes, 3000u * 24);
}

// Warm gives a segment written since the start its image once it is quiet, so that the
// first scan reads it; it counts no hits or misses and leaves a segment alone while it changes.
TEST_F(ColumnCacheTest, WarmBuildsImagesOfQuietSegmentsWrittenSinceTheStart) {
  ColumnCache cache(64 << 20, 1000000, clock_);
  clock_.Advance(2000000);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);  // never written: left to the scans
  Put(0, 3000, 10);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);  // just written
  clock_.Advance(500000);
  Put(3000, 3100, 11);  // and again
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);
  clock_.Advance(999999);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);
  clock_.Advance(1);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 1);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);  // it has one
  EXPECT_EQ(cache.stats().hits + cache.stats().misses, 0u);
  bool columnar = false;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3100));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 1u);
  EXPECT_EQ(cache.stats().hits, 1u);
  // Split: both halves are new to the images (the upper half is a new segment), and both get
  // theirs once quiet.
  ASSERT_TRUE(store_->Split(1, 2).ok());
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);  // just changed
  clock_.Advance(1000000);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 2);
}

// A scan checks its segment's range, then takes the image. If the segment split in between,
// an image built since holds only the rows that stayed: the scan must fail as Stale (the
// master looks the range up again) rather than answer without the rows that left.
TEST_F(ColumnCacheTest, AScanWhoseSegmentSplitAfterItsRangeCheckIsStale) {
  Put(0, 3000, 10);
  ColumnCache cache(64 << 20, 0, clock_);  // every segment quiet: the scan builds
  bool split = false;
  cache.set_before_get_for_test([&] {
    if (!split) split = store_->Split(1, 2).ok();
  });
  ScanRequest req;
  req.segment = 1;
  req.read_ts = 20;
  auto rows = SegmentRows::Open(*store_, *participant_, req, &cache);
  ASSERT_TRUE(split);
  ASSERT_FALSE(rows.ok()) << "read " << ((*rows)->columnar() ? "an image" : "RocksDB")
                          << " of the part that stayed";
  EXPECT_TRUE(rows.status().IsStale()) << rows.status().ToString();
  // Looked up again, the two segments' ranges hold every row, read from images.
  cache.set_before_get_for_test(nullptr);
  auto lower = store_->Get(1).value()->meta(), upper = store_->Get(2).value()->meta();
  EXPECT_EQ(lower.hi, upper.lo);
  int cut = 0;
  while (cut < 3000 && Key(cut) != upper.lo) cut++;
  ASSERT_LT(cut, 3000);
  std::vector<int64_t> keys;
  for (SegmentId seg : {1, 2}) {
    scan_segment_ = seg;
    bool columnar = false;
    auto part = Scan(&cache, 20, &columnar, seg == 1 ? -1 : cut, seg == 1 ? cut : -1);
    EXPECT_TRUE(columnar) << "segment " << seg;
    keys.insert(keys.end(), part.begin(), part.end());
  }
  EXPECT_EQ(keys, Range(0, 3000));
}

// An image knows which of its batches' columns hold NULLs, and a scan sharing a column says
// so: HasNulls of a column without NULLs reads none of its flags; one with NULLs still finds them.
TEST_F(ColumnCacheTest, SharedImageColumnsTellWhetherTheyHoldNulls) {
  std::vector<storage::WriteOp> ops;
  const int rows = static_cast<int>(exec::kBatchRows) + 100;
  for (int k = 0; k < rows; k++) {
    storage::WriteOp op;
    op.segment = 1;
    op.key = Key(k);
    // The second column is NULL in a few rows of the first batch only.
    Value name =
        k % 1000 == 7 && k < static_cast<int>(exec::kBatchRows) ? Value() : Value::Text("n");
    EncodeRow({Value::Int64(k), name, Value::Double(k * 1.5)}, &op.row);
    ops.push_back(std::move(op));
  }
  ASSERT_TRUE(store_->Apply(10, ops).ok());
  ColumnCache cache(64 << 20, 0, clock_);
  for (int round = 0; round < 2; round++) {  // built by the first scan, read by the second
    ScanRequest req;
    req.segment = 1;
    req.read_ts = 20;
    auto scan = SegmentRows::Open(*store_, *participant_, req, &cache);
    ASSERT_TRUE(scan.ok()) << scan.status().ToString();
    ASSERT_TRUE((*scan)->columnar());
    exec::Batch b;
    b.Reset(3);
    std::string last_key;
    std::vector<std::pair<bool, size_t>> seen;  // per batch: HasNulls of column 1, its NULL rows
    while ((*scan)->NextBatch(nullptr, &b, &last_key).value()) {
      size_t null_rows = 0;
      for (size_t r = 0; r < b.rows; r++) null_rows += b.cols[1].IsNull(r);
      seen.emplace_back(b.cols[1].HasNulls(), null_rows);
      EXPECT_FALSE(b.cols[0].HasNulls());
      exec::Vector copy = b.cols[1];  // a copy tells the same
      EXPECT_EQ(copy.HasNulls(), seen.back().first);
    }
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0],
              std::make_pair(true, size_t{5}));  // keys 7, 1007, 2007, 3007, 4007... below 4096
    EXPECT_EQ(seen[1], std::make_pair(false, size_t{0}));
  }
  EXPECT_EQ(cache.stats().builds, 1u);
}

// A segment read only a range at a time (the parts of a partitioned join) gets its image
// after kPartialReadsBeforeImage such reads while it is quiet, or changed only by commits
// since the first of them (which started recording its commits); a change that is not a
// commit (a split) starts the count again.
TEST_F(ColumnCacheTest, ASegmentReadInRangesGetsAnImageAfterAFewReads) {
  Put(0, 3000, 10);
  ColumnCache cache(64 << 20, 1000000, clock_);
  bool columnar = true;
  EXPECT_EQ(Scan(&cache, 20, &columnar, 100, 200), Range(100, 200));
  EXPECT_FALSE(columnar);
  for (int i = 1; i < ColumnCache::kPartialReadsBeforeImage; i++) {
    Put(5000 + i, 5001 + i, 10 + i);  // a commit between reads
    EXPECT_EQ(Scan(&cache, 30, &columnar, i * 100, i * 100 + 50), Range(i * 100, i * 100 + 50));
    EXPECT_FALSE(columnar) << "read " << i;
  }
  EXPECT_EQ(cache.stats().builds, 0u);
  EXPECT_EQ(Scan(&cache, 30, &columnar, 2000, 2100), Range(2000, 2100));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 1u);
  // A commit keeps the image (its rows are merged in); a split ends that.
  Put(3000, 3001, 31);
  EXPECT_EQ(Scan(&cache, 40, &columnar, 2990, 3005), Range(2990, 3001));
  EXPECT_TRUE(columnar);
  ASSERT_TRUE(store_->Split(1, 2).ok());
  EXPECT_EQ(Scan(&cache, 40, &columnar, 0, 10), Range(0, 10));
  EXPECT_FALSE(columnar);
  for (int i = 1; i < ColumnCache::kPartialReadsBeforeImage; i++) {
    EXPECT_EQ(Scan(&cache, 40, &columnar, 0, 10), Range(0, 10));
    EXPECT_FALSE(columnar) << "read " << i;
  }
  EXPECT_EQ(Scan(&cache, 40, &columnar, 0, 10), Range(0, 10));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 2u);
}

// Warm builds the image of a segment that is never quiet if a read missed it lately and only
// commits changed it since; not after a split, nor for a segment nobody read.
TEST_F(ColumnCacheTest, WarmBuildsSegmentsChangedOnlyByCommitsSinceAReadMissed) {
  Put(0, 3000, 10);
  ColumnCache cache(64 << 20, 100'000'000, clock_);  // nothing turns quiet here
  bool columnar = true;
  EXPECT_EQ(Scan(&cache, 20, &columnar, 10, 20), Range(10, 20));
  EXPECT_FALSE(columnar);
  Put(30, 31, 12);
  auto split = store_->Split(1, 3);  // not a commit; segment 3 (the upper half) is never read
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);
  EXPECT_EQ(Scan(&cache, 20, &columnar, 10, 20), Range(10, 20));  // misses again
  Put(31, 32, 13);
  Put(32, 33, 14);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 1);
  EXPECT_EQ(Scan(&cache, 20, &columnar, 10, 20), Range(10, 20));
  EXPECT_TRUE(columnar);
  // A miss long ago does not count.
  scan_segment_ = 3;
  EXPECT_EQ(Scan(&cache, 20, &columnar, 2990, -1), Range(2990, 3000));
  EXPECT_FALSE(columnar);
  clock_.Advance(ColumnCache::kIdleMicros);
  Put(2995, 2996, 15);
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 0);
  EXPECT_EQ(Scan(&cache, 20, &columnar, 2990, -1), Range(2990, 3000));
  EXPECT_EQ(cache.Warm(*store_, 4).value(), 1);
}

TEST_F(ColumnCacheTest, OlderSnapshotsAndChangedSegmentsReadRocksDb) {
  Put(0, 100, 10);
  Put(100, 200, 30);
  ColumnCache cache(64 << 20, 0, clock_);
  bool columnar = false;
  // The image holds the newest rows (ts 30): a reader at 20 must not see rows 100..199.
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 100));
  EXPECT_FALSE(columnar);
  EXPECT_EQ(Scan(&cache, 30, &columnar), Range(0, 200));
  EXPECT_TRUE(columnar);
  // A deletion is merged into the image's reads: readers below it still see the row.
  Delete(5, 40);
  std::vector<int64_t> want = Range(0, 200);
  want.erase(want.begin() + 5);
  EXPECT_EQ(Scan(&cache, 35, &columnar), Range(0, 200));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(Scan(&cache, 40, &columnar), want);
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 1u);
  // A transaction's own pending writes are merged by the row path.
  TxnWrite w;
  w.op = storage::WriteOp{1, Key(5), storage::VersionKind::kPut, ""};
  EncodeRow({Value::Int64(5), Value::Text("x"), Value::Double(7.5)}, &w.op.row);
  w.check = WriteCheck::kInsert;
  ASSERT_TRUE(participant_->Prepare(7, 40, {w}).ok());
  ScanRequest req;
  req.segment = 1;
  req.read_ts = 40;
  req.txn = 7;
  auto rows = SegmentRows::Open(*store_, *participant_, req, &cache);
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE((*rows)->columnar());
}

// Commits after an image was built are recorded with the segment (storage::RecentVersions)
// and merged into the image's reads by key: updates replace rows, deletions hide them,
// inserts add them, each only for readers whose timestamp sees it; the answers are those of
// RocksDB at every timestamp, for the whole segment, ranges and single keys.
TEST_F(ColumnCacheTest, CommitsAfterTheBuildAreMergedIntoTheImagesReads) {
  Put(0, 3000, 10);
  ColumnCache cache(64 << 20, 0, clock_);
  auto write = [&](int k, double v, Timestamp ts, bool del = false) {
    storage::WriteOp op;
    op.segment = 1;
    op.key = Key(k);
    op.kind = del ? storage::VersionKind::kDelete : storage::VersionKind::kPut;
    if (!del) EncodeRow({Value::Int64(k), Value::Text("new"), Value::Double(v)}, &op.row);
    ASSERT_TRUE(store_->Apply(ts, {op}).ok());
  };
  auto read = [&](ColumnCache* c, Timestamp read_ts, int lo, int hi, bool* columnar) {
    return ScanPairs(c, read_ts, columnar, lo, hi);
  };
  bool columnar = false;
  ASSERT_EQ(read(&cache, 20, -1, -1, &columnar).size(), 3000u);
  ASSERT_TRUE(columnar);
  write(5, -5, 30);          // update
  write(7, 0, 31, true);     // delete
  write(5000, 50, 32);       // insert after the last row
  write(1024, 0, 33, true);  // delete, then insert again: a batch boundary
  write(1024, 1024, 34);
  write(1500, 1, 35);  // updated twice
  write(1500, 2, 36);
  write(-3, -3, 37);  // insert before the first row
  for (Timestamp ts : {20, 30, 31, 33, 34, 35, 36, 40}) {
    for (auto [lo, hi] : std::vector<std::pair<int, int>>{{-1, -1},
                                                          {0, 10},
                                                          {5, 6},
                                                          {7, 8},
                                                          {1000, 1100},
                                                          {1024, 1025},
                                                          {1500, 1501},
                                                          {2999, -1},
                                                          {-5, 1}}) {
      bool from_rocksdb = true;
      auto want = read(nullptr, ts, lo, hi, &from_rocksdb);
      EXPECT_FALSE(from_rocksdb);
      EXPECT_EQ(read(&cache, ts, lo, hi, &columnar), want)
          << "ts " << ts << " range " << lo << ".." << hi;
      // (a single key written twice may be answered from the segment's newest versions)
      if (hi != lo + 1) {
        EXPECT_TRUE(columnar) << "ts " << ts << " range " << lo << ".." << hi;
      }
    }
  }
  EXPECT_EQ(cache.stats().builds, 1u);
  EXPECT_EQ(read(&cache, 40, 5, 6, &columnar), (std::vector<std::pair<int64_t, double>>{{5, -5}}));
  EXPECT_EQ(read(&cache, 40, 1500, 1501, &columnar),
            (std::vector<std::pair<int64_t, double>>{{1500, 2}}));
  EXPECT_EQ(read(&cache, 35, 1500, 1501, &columnar),
            (std::vector<std::pair<int64_t, double>>{{1500, 1}}));
  EXPECT_TRUE(read(&cache, 40, 7, 8, &columnar).empty());
  EXPECT_EQ(read(&cache, 40, -1, -1, &columnar).size(), 3001u);  // -1 row, +2 new keys
  // Readers older than the image read RocksDB.
  EXPECT_EQ(read(&cache, 5, -1, -1, &columnar).size(), 0u);
  EXPECT_FALSE(columnar);
  // A split ends the recording: the image goes.
  ASSERT_TRUE(store_->Split(1, 2).ok());
  read(&cache, 40, 0, 10, &columnar);
  EXPECT_FALSE(columnar);
}

// An image of a segment without rows has no width; a row written and deleted since its build
// leaves the recording only a deletion, which the image's reads merge as nothing.
TEST_F(ColumnCacheTest, AnImageWithoutRowsMergesDeletionsSinceItsBuild) {
  Put(0, 1, 10);
  Delete(0, 11);  // written, yet empty
  ColumnCache cache(64 << 20, 0, clock_);
  bool columnar = false;
  EXPECT_TRUE(Scan(&cache, 20, &columnar).empty());
  ASSERT_EQ(cache.stats().builds, 1u);
  Put(5, 6, 30);
  Delete(5, 31);
  for (Timestamp ts : {20, 30, 40}) {
    ScanRequest req;
    req.segment = 1;
    req.read_ts = ts;
    auto rows = SegmentRows::Open(*store_, *participant_, req, &cache);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    if (ts == 40) {
      EXPECT_TRUE((*rows)->columnar());
    }
    if (!(*rows)->columnar()) continue;
    exec::Batch b;
    b.Reset(3);
    std::string last_key;
    std::vector<bool> used = {true, false, true};
    auto more = (*rows)->NextBatch(&used, &b, &last_key);
    ASSERT_TRUE(more.ok()) << "ts " << ts << ": " << more.status().ToString();
    EXPECT_FALSE(*more);
  }
  EXPECT_EQ(cache.stats().builds, 1u);
  Put(5, 6, 50);
  EXPECT_EQ(Scan(&cache, 60, &columnar), Range(5, 6));  // a row of a width: RocksDB answers
}

// A point lookup answered by an image tells a writer the key's newest version (from the
// recording if a commit wrote it since the build, else the image's), with its row, as a
// RocksDB read would: its prepare checks against that while the segment is unchanged, and
// reads the key again once a commit reached the segment.
// LowerBoundFrom gallops from its start and answers as the binary search over all rows does,
// for every start at or below the bound and every key between and around the image's.
TEST(SegmentImageTest, LowerBoundFromAnyStartBelowTheBoundIsTheLowerBound) {
  SegmentImage image;
  for (int i = 0; i < 37; i++) {
    image.key_bytes += fmt::format("k{:03}", 2 * i);  // k000, k002, ..., k072
    image.key_ends.push_back(static_cast<uint32_t>(image.key_bytes.size()));
  }
  image.rows = image.key_ends.size();
  image.IndexKeys();
  int checked = 0;
  for (int j = -1; j <= 76; j++) {
    std::string k = j < 0 ? std::string() : fmt::format("k{:03}", j);
    size_t want = 0;
    while (want < image.rows && image.key(want) < k) want++;
    ASSERT_EQ(image.LowerBound(k), want) << k;
    for (size_t from = 0; from <= want; from++, checked++)
      ASSERT_EQ(image.LowerBoundFrom(from, k), want) << k << " from " << from;
  }
  EXPECT_GT(checked, 700);
}

// The searches compare keys' 8-byte heads after the common prefix and whole keys only where
// heads are equal: they answer as a search of whole keys does for keys that share long
// prefixes, end in zero bytes, are prefixes of each other, lie within 8 bytes of each other
// or share one head over several blocks of heads, and for probes of every kind around them
// (shorter than the prefix, outside it).
TEST(SegmentImageTest, SearchesByKeyHeadsAnswerAsWholeKeysDo) {
  std::set<std::string> keys;
  const std::string common("wdb\x01\x00", 5);
  std::mt19937 rng(7);
  for (int i = 0; i < 600; i++) {
    std::string k = common;
    size_t len = rng() % 14;
    for (size_t j = 0; j < len; j++)
      k += static_cast<char>(rng() % 3 == 0 ? 0 : "abz\xff"[rng() % 4]);
    keys.insert(k);
    keys.insert(k + std::string(1, '\0'));
  }
  for (int i = 0; i < 100; i++)
    keys.insert(common + "samehead" + std::to_string(i));  // one head, blocks long
  SegmentImage image;
  for (const auto& k : keys) {
    image.key_bytes += k;
    image.key_ends.push_back(static_cast<uint32_t>(image.key_bytes.size()));
  }
  image.rows = keys.size();
  image.IndexKeys();
  EXPECT_EQ(image.prefix, common.size());
  std::vector<std::string> probes = {"",
                                     "w",
                                     "wdb",
                                     "wdc",
                                     "wda\xff",
                                     common.substr(0, 4),
                                     common,
                                     common + std::string(9, '\0'),
                                     common + "\xff\xff\xff\xff\xff\xff\xff\xff\xff"};
  for (const auto& k : keys) {
    probes.push_back(k);
    std::string less = k;
    if (!less.empty() && less.back() != 0) less.back()--;
    probes.push_back(less);
    probes.push_back(k + "a");
  }
  std::vector<std::string> sorted(keys.begin(), keys.end());
  for (const auto& p : probes) {
    size_t want = std::lower_bound(sorted.begin(), sorted.end(), p) - sorted.begin();
    ASSERT_EQ(image.LowerBound(p), want) << "probe of " << p.size() << " bytes";
    for (size_t from : {size_t{0}, want / 2, want > 0 ? want - 1 : 0, want}) {
      ASSERT_EQ(image.LowerBoundFrom(from, p), want) << "from " << from;
    }
  }
}

TEST_F(ColumnCacheTest, PointLookupsThroughAnImageTellWritersTheNewestVersion) {
  Put(0, 100, 10);
  ColumnCache cache(64 << 20, 0, clock_);
  bool columnar = false;
  ASSERT_EQ(Scan(&cache, 20, &columnar), Range(0, 100));
  ASSERT_TRUE(columnar);
  auto seen_at = [&](int k, Timestamp ts) {
    ScanRequest req;
    req.segment = 1;
    req.lo = Key(k);
    req.hi = PrefixSuccessor(req.lo);
    req.read_ts = ts;
    auto rows = SegmentRows::Open(*store_, *participant_, req, &cache);
    EXPECT_TRUE(rows.ok());
    EXPECT_TRUE((*rows)->columnar());
    return (*rows)->first_seen();
  };
  auto row_of = [](int k, std::string name, double v) {
    std::string row;
    EncodeRow({Value::Int64(k), Value::Text(name), Value::Double(v)}, &row);
    return row;
  };
  std::optional<storage::SeenLatest> seen = seen_at(5, 20);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->key, Key(5));
  EXPECT_TRUE(seen->latest.found);
  EXPECT_EQ(seen->latest.ts, 10u);
  EXPECT_FALSE(seen->latest.deleted);
  ASSERT_TRUE(seen->has_row);
  EXPECT_EQ(seen->row, row_of(5, "name 5", 7.5));
  EXPECT_FALSE(seen_at(500, 20).has_value()) << "a key the image lacks";
  // Written since the build: the recorded version, even above the reader's timestamp.
  storage::WriteOp op{1, Key(5), storage::VersionKind::kPut, row_of(5, "five", 5)};
  ASSERT_TRUE(store_->Apply(30, {op}).ok());
  seen = seen_at(5, 20);
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->latest.ts, 30u);
  EXPECT_EQ(seen->row, row_of(5, "five", 5));
  // A writer's prepare trusts a current read, and reads again after a commit to the segment.
  TxnWrite w;
  w.op = storage::WriteOp{1, Key(6), storage::VersionKind::kPut, row_of(6, "six", 6)};
  w.check = WriteCheck::kUpdate;
  w.seen = seen_at(6, 35);
  ASSERT_TRUE(w.seen.has_value());
  EXPECT_TRUE(w.seen->Current(**store_->Get(1)));
  storage::WriteOp rival{1, Key(6), storage::VersionKind::kPut, row_of(6, "rival", 0)};
  ASSERT_TRUE(store_->Apply(40, {rival}).ok());
  EXPECT_FALSE(w.seen->Current(**store_->Get(1)));
  EXPECT_EQ(participant_->Prepare(1, 35, {w}).sqlstate(), sqlstate::kSerializationFailure);
  w.seen = seen_at(6, 45);
  EXPECT_EQ(w.seen->latest.ts, 40u);
  ASSERT_TRUE(participant_->Prepare(2, 45, {w}).ok());
  ASSERT_TRUE(participant_->Commit(2, 46).ok());
  EXPECT_EQ(ScanPairs(&cache, 50, &columnar, 6, 7),
            (std::vector<std::pair<int64_t, double>>{{6, 6}}));
}

// Warm builds an image anew once its segment's recording of later commits passes
// kRefreshBytes, if the image is read; an image nobody read for kIdleMicros is dropped
// instead (and its recording ends).
TEST_F(ColumnCacheTest, WarmRefreshesAnImageWhoseRecordingGrew) {
  Put(0, 3000, 10);
  ColumnCache cache(256 << 20, 0, clock_);
  bool columnar = false;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3000));
  ASSERT_TRUE(columnar);
  storage::SegmentRef seg = *store_->Get(1);
  auto grow = [&](Timestamp from) {
    Timestamp ts = from;
    for (int k = 0; seg->recent_bytes() < ColumnCache::kRefreshBytes; k++) {
      storage::WriteOp op;
      op.segment = 1;
      op.key = Key(k);
      EncodeRow({Value::Int64(k), Value::Text(std::string(1 << 20, 'x')), Value::Double(k * 1.5)},
                &op.row);
      ASSERT_TRUE(store_->Apply(++ts, {op}).ok());
    }
  };
  grow(20);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  EXPECT_EQ(cache.stats().builds, 2u);
  EXPECT_EQ(cache.stats().images, 1u);
  EXPECT_EQ(seg->recent_bytes(), 0u);
  EXPECT_EQ(Scan(&cache, 100, &columnar), Range(0, 3000));
  EXPECT_TRUE(columnar);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  EXPECT_EQ(cache.stats().builds, 2u) << "nothing recorded since";
  // Not read for kIdleMicros: dropped rather than built again.
  clock_.Advance(ColumnCache::kIdleMicros);
  grow(100);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  EXPECT_EQ(cache.stats().images, 0u);
  EXPECT_EQ(seg->recent_bytes(), 0u);
}

// A read image whose segment went quiet with kQuietRefreshBytes recorded is built anew (the
// recording then starts empty); a smaller recording, or one still growing, is kept.
TEST_F(ColumnCacheTest, WarmRefreshesAnImageWhoseSegmentWentQuietAfterCommits) {
  constexpr int64_t kQuiet = 1000;
  Put(0, 3000, 10);
  ColumnCache cache(256 << 20, kQuiet, clock_);
  bool columnar = false;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3000));  // sees the segment's version
  clock_.Advance(kQuiet);
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 3000));
  ASSERT_TRUE(columnar);
  storage::SegmentRef seg = *store_->Get(1);
  Timestamp ts = 20;
  auto update =
      [&](size_t until_bytes) {  // rewrites rows 0, 1, ... until the recording holds until_bytes
        for (int k = 0; seg->recent_bytes() < until_bytes; k++) {
          storage::WriteOp op;
          op.segment = 1;
          op.key = Key(k % 3000);
          EncodeRow({Value::Int64(k % 3000), Value::Text(std::string(200, 'u')),
                     Value::Double(k % 3000 * 1.5)},
                    &op.row);
          ASSERT_TRUE(store_->Apply(++ts, {op}).ok());
        }
      };
  auto warm_quiet = [&] {  // two rounds, the segment unchanged for kQuiet between them
    ASSERT_TRUE(cache.Warm(*store_, 2).ok());
    clock_.Advance(kQuiet);
    ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  };
  update(ColumnCache::kQuietRefreshBytes / 2);
  warm_quiet();
  EXPECT_EQ(cache.stats().builds, 1u) << "a small recording is kept";
  update(ColumnCache::kQuietRefreshBytes);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  update(ColumnCache::kQuietRefreshBytes + 4096);  // commits between rounds: not quiet
  clock_.Advance(kQuiet);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  EXPECT_EQ(cache.stats().builds, 1u) << "still being written";
  clock_.Advance(kQuiet);
  ASSERT_TRUE(cache.Warm(*store_, 2).ok());
  EXPECT_EQ(cache.stats().builds, 2u) << "quiet with commits recorded";
  EXPECT_EQ(seg->recent_bytes(), 0u);
  EXPECT_EQ(cache.stats().images, 1u);
  EXPECT_EQ(Scan(&cache, ts, &columnar), Range(0, 3000));
  EXPECT_TRUE(columnar);
  warm_quiet();
  EXPECT_EQ(cache.stats().builds, 2u) << "nothing recorded since";
}

// Past the budget, images that were read recently stay and no new ones are built (a table
// larger than the budget must not rebuild all its images on every scan); idle ones give way.
TEST_F(ColumnCacheTest, PastTheBudgetOnlyIdleImagesGiveWay) {
  ASSERT_TRUE(store_->CreateSegment({2, 1, "", ""}).ok());
  Put(0, 2000, 10);
  ColumnCache cache(1, 0, clock_);  // one byte: every image is past it
  bool columnar = false;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 2000));
  EXPECT_TRUE(columnar);  // the first is kept: the budget may be exceeded by one image
  EXPECT_EQ(cache.stats().images, 1u);
  ScanRequest other;
  other.segment = 2;
  other.read_ts = 20;
  auto rows = SegmentRows::Open(*store_, *participant_, other, &cache);
  ASSERT_TRUE(rows.ok());
  EXPECT_FALSE((*rows)->columnar());  // no room: segment 1's image was read just now
  EXPECT_EQ(cache.stats().builds, 1u);
  clock_.Advance(ColumnCache::kIdleMicros);
  rows = SegmentRows::Open(*store_, *participant_, other, &cache);
  ASSERT_TRUE(rows.ok());
  EXPECT_TRUE((*rows)->columnar());  // segment 1's image was idle long enough to give way
  EXPECT_EQ(cache.stats().builds, 2u);
  EXPECT_EQ(cache.stats().images, 1u);
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 2000));
  EXPECT_FALSE(columnar);
}

TEST_F(ColumnCacheTest, AnImageIsNotSharedWithASegmentThatReplacedIt) {
  Put(0, 50, 10);
  ColumnCache cache(64 << 20, 0, clock_);
  bool columnar = false;
  EXPECT_EQ(Scan(&cache, 20, &columnar), Range(0, 50));
  EXPECT_TRUE(columnar);
  // Dropped and created again (a segment moved away and back): the old image must not answer.
  ASSERT_TRUE(store_->DropSegment(1).ok());
  ASSERT_TRUE(store_->CreateSegment({1, 1, "", ""}).ok());
  Put(7, 9, 30);
  EXPECT_EQ(Scan(&cache, 40, &columnar), Range(7, 9));
  EXPECT_TRUE(columnar);
  EXPECT_EQ(cache.stats().builds, 2u);
}

}  // namespace
}  // namespace wattdb::node
