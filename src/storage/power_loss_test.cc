// Power loss: the stores run on PowerLossFs, which at a simulated power cut keeps only what
// was synced. What a node or the master acknowledges (commits, prepares, outcomes, segment
// creation, split, drop and import, catalog writes) must survive; what was written without
// a sync is lost (which shows the cut is real).
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include "common/codec.h"
#include "storage/kv_store.h"
#include "storage/power_loss_fs.h"
#include "storage/segment_store.h"

namespace wattdb::storage {
namespace {

namespace fs = std::filesystem;

class PowerLossTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("wattdb_power_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs_ = std::make_shared<PowerLossFs>();
    env_ = rocksdb::NewCompositeEnv(fs_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<SegmentStore> OpenStore(const std::string& name) {
    auto s = SegmentStore::Open((root_ / name).string(), env_.get());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  // The machine stops: nothing more reaches the disk, the processes' state is gone, and of
  // the files only their synced parts remain.
  template <typename... Stores>
  void PowerCut(Stores&... stores) {
    fs_->PowerOff();
    (stores.reset(), ...);
    fs_->DropUnsyncedData();
    fs_->PowerOn();
  }
  static std::string K(int64_t i) {
    std::string k;
    EncodeKeyValue(Value::Int64(i), &k);
    return k;
  }
  static WriteOp Put(SegmentId seg, int64_t i) {
    WriteOp op;
    op.segment = seg;
    op.key = K(i);
    op.kind = VersionKind::kPut;
    EncodeRow({Value::Int64(i)}, &op.row);
    return op;
  }
  static bool Has(SegmentStore& st, SegmentId seg, int64_t i) {
    auto lv = st.Latest(seg, K(i));
    return lv.ok() && lv->found && !lv->deleted;
  }

  fs::path root_;
  std::shared_ptr<PowerLossFs> fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

TEST_F(PowerLossTest, SyncedCommitsSurviveUnsyncedOnesDoNot) {
  auto st = OpenStore("node");
  ASSERT_TRUE(st->CreateSegment({1, 1, "", ""}).ok());
  st->set_sync_commits(true);
  ASSERT_TRUE(st->Apply(10, {Put(1, 1)}, 0, /*txn=*/501).ok());
  st->set_sync_commits(false);  // what sync_commit = false risks
  ASSERT_TRUE(st->Apply(11, {Put(1, 2)}, 0, /*txn=*/502).ok());
  ASSERT_TRUE(Has(*st, 1, 2));
  PowerCut(st);
  st = OpenStore("node");
  ASSERT_NE(st, nullptr);
  EXPECT_TRUE(Has(*st, 1, 1));
  EXPECT_EQ(st->CommittedAt(501).value(), std::optional<Timestamp>(10));
  EXPECT_FALSE(Has(*st, 1, 2))
      << "the power cut kept an unsynced write: the test file system does not cut";
  EXPECT_EQ(st->CommittedAt(502).value(), std::nullopt);
}

// A disk that takes a commit's bytes but fails to sync them: the batch is already in the
// memtables, so the store must not answer another read; the process ends (SyncWal), with
// its reason, instead of reporting a failed commit whose rows could still be read or come
// back from the log. Prepares are synced the same way.
TEST_F(PowerLossTest, AFailedLogSyncEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the store runs threads: no bare fork
  auto st = OpenStore("node");
  ASSERT_TRUE(st->CreateSegment({1, 1, "", ""}).ok());
  st->set_sync_commits(true);
  ASSERT_TRUE(st->Apply(10, {Put(1, 1)}, 0, /*txn=*/501).ok());
  EXPECT_EXIT(
      {
        fs_->FailSyncs(true);
        Status s = st->Apply(11, {Put(1, 2)}, 0, /*txn=*/502);
        std::fprintf(stderr, "commit returned: %s\n", s.ToString().c_str());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(SegmentStore::kLogSyncFailedExit), "log sync failed");
  EXPECT_EXIT(
      {
        fs_->FailSyncs(true);
        Status s = st->PutPrepared(77, "blob");
        std::fprintf(stderr, "prepare returned: %s\n", s.ToString().c_str());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(SegmentStore::kLogSyncFailedExit), "log sync failed");
  EXPECT_EXIT(
      {
        fs_->FailSyncs(true);
        Status s = st->SyncWal();  // the master's sync of distributed commits applied unsynced
        std::fprintf(stderr, "sync returned: %s\n", s.ToString().c_str());
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(SegmentStore::kLogSyncFailedExit), "log sync failed");
  // Unsynced commits (sync_commit = false) never sync, so a failing disk does not end them.
  fs_->FailSyncs(true);
  st->set_sync_commits(false);
  EXPECT_TRUE(st->Apply(12, {Put(1, 3)}, 0, /*txn=*/503).ok());
  fs_->FailSyncs(false);
  EXPECT_TRUE(Has(*st, 1, 1));
}

// Each change is followed directly by the cut (a later synced write would sync it too).
TEST_F(PowerLossTest, EachAcknowledgedSegmentChangeSurvivesACutRightAfterIt) {
  auto st = OpenStore("node");
  st->set_sync_commits(true);
  auto cut = [&] {
    PowerCut(st);
    st = OpenStore("node");
    ASSERT_NE(st, nullptr);
    st->set_sync_commits(true);
  };
  ASSERT_TRUE(st->CreateSegment({1, 1, "", K(1000)}).ok());
  ASSERT_TRUE(st->CreateSegment({2, 1, K(1000), ""}).ok());
  ASSERT_NO_FATAL_FAILURE(cut());
  ASSERT_TRUE(st->Get(1).ok()) << "segment creation lost";
  ASSERT_TRUE(st->Get(2).ok()) << "segment creation lost";

  std::vector<WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back(Put(1, i));
  ASSERT_TRUE(st->Apply(10, ops).ok());
  auto split = st->Split(1, 3);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  ASSERT_NO_FATAL_FAILURE(cut());
  ASSERT_TRUE(st->Get(3).ok()) << "split lost";
  EXPECT_EQ((*st->Get(1))->meta().hi, *split);
  EXPECT_EQ((*st->Get(3))->meta().lo, *split);
  int rows = 0;
  for (int i = 0; i < 100; i++) rows += Has(*st, K(i) < *split ? 1 : 3, i) ? 1 : 0;
  EXPECT_EQ(rows, 100);

  ASSERT_TRUE(st->DropSegment(2).ok());
  ASSERT_NO_FATAL_FAILURE(cut());
  EXPECT_FALSE(st->Get(2).ok()) << "drop lost";

  ASSERT_TRUE(st->PutPrepared(77, "prepared writes").ok());
  ASSERT_NO_FATAL_FAILURE(cut());
  auto prepared = st->ListPrepared();
  ASSERT_TRUE(prepared.ok());
  ASSERT_EQ(prepared->size(), 1u) << "durable prepare lost";
  EXPECT_EQ((*prepared)[0].first, 77u);
  EXPECT_EQ((*prepared)[0].second, "prepared writes");

  // A commit of the prepared transaction removes the record with it, in one synced batch.
  ASSERT_TRUE(st->Apply(11, {Put(3, 500)}, /*prepared_txn=*/77, /*txn=*/77).ok());
  ASSERT_NO_FATAL_FAILURE(cut());
  EXPECT_TRUE(Has(*st, 3, 500));
  EXPECT_TRUE(st->ListPrepared()->empty());
  EXPECT_EQ(st->CommittedAt(77).value(), std::optional<Timestamp>(11));
}

// A segment exported by one node and imported by another: once Import returned, the copy
// survives a power cut of the importing node.
TEST_F(PowerLossTest, ImportedSegmentSurvives) {
  auto src = OpenStore("source");
  auto dst = OpenStore("target");
  src->set_sync_commits(true);
  ASSERT_TRUE(src->CreateSegment({5, 1, "", ""}).ok());
  std::vector<WriteOp> ops;
  for (int i = 0; i < 50; i++) ops.push_back(Put(5, i));
  ASSERT_TRUE(src->Apply(10, ops).ok());
  auto exp = src->Export(5, (root_ / "export").string());
  ASSERT_TRUE(exp.ok()) << exp.status().ToString();
  ASSERT_TRUE(dst->Import(*exp).ok());
  PowerCut(src, dst);
  dst = OpenStore("target");
  ASSERT_NE(dst, nullptr);
  ASSERT_TRUE(dst->Get(5).ok());
  int rows = 0;
  for (int i = 0; i < 50; i++) rows += Has(*dst, 5, i) ? 1 : 0;
  EXPECT_EQ(rows, 50);
}

// A commit of a durably prepared transaction (one over several nodes) is applied without a
// sync, the master's logged decision covering it: a cut before a later sync leaves the
// transaction in doubt (its synced prepared record back, nothing of the commit), never half
// applied; once the log is synced it is committed for good. Other commits sync regardless.
TEST_F(PowerLossTest, UnsyncedCommitOfADurablePrepareIsInDoubtUntilTheLogIsSynced) {
  auto st = OpenStore("node");
  auto reopen = [&] {
    PowerCut(st);
    st = OpenStore("node");
    ASSERT_NE(st, nullptr);
    st->set_sync_commits(true);
  };
  st->set_sync_commits(true);
  ASSERT_TRUE(st->CreateSegment({1, 1, "", ""}).ok());
  ASSERT_TRUE(st->PutPrepared(77, "prepared writes").ok());
  ASSERT_TRUE(st->Apply(11, {Put(1, 1)}, /*prepared_txn=*/77, /*txn=*/77, /*sync=*/false).ok());
  EXPECT_TRUE(Has(*st, 1, 1));
  ASSERT_NO_FATAL_FAILURE(reopen());
  auto prepared = st->ListPrepared();
  ASSERT_TRUE(prepared.ok());
  ASSERT_EQ(prepared->size(), 1u) << "the unsynced commit survived: the cut is not real";
  EXPECT_EQ((*prepared)[0].first, 77u);
  EXPECT_FALSE(Has(*st, 1, 1));
  EXPECT_EQ(st->CommittedAt(77).value(), std::nullopt);

  // The commit again (as the in-doubt resolution sends it), then a sync of the log.
  ASSERT_TRUE(st->Apply(11, {Put(1, 1)}, 77, 77, /*sync=*/false).ok());
  ASSERT_TRUE(st->SyncWal().ok());
  // A commit without a prepared record syncs even when asked not to.
  ASSERT_TRUE(st->Apply(12, {Put(1, 2)}, 0, /*txn=*/502, /*sync=*/false).ok());
  ASSERT_NO_FATAL_FAILURE(reopen());
  EXPECT_TRUE(Has(*st, 1, 1));
  EXPECT_TRUE(Has(*st, 1, 2));
  EXPECT_TRUE(st->ListPrepared()->empty());
  EXPECT_EQ(st->CommittedAt(77).value(), std::optional<Timestamp>(11));
}

// A recycled log file (written again from its start under a new name) keeps, after a cut,
// only what was synced since its reuse.
TEST_F(PowerLossTest, RecycledLogFileKeepsWhatWasSyncedSinceItsReuse) {
  fs::create_directories(root_);
  std::string old_name = (root_ / "000001.log").string(), name = (root_ / "000002.log").string();
  rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSDirectory> dir;
  ASSERT_TRUE(fs_->NewDirectory(root_.string(), io, &dir, nullptr).ok());
  std::unique_ptr<rocksdb::FSWritableFile> f;
  ASSERT_TRUE(fs_->NewWritableFile(old_name, rocksdb::FileOptions(), &f, nullptr).ok());
  ASSERT_TRUE(f->Append(std::string(100, 'o'), io, nullptr).ok());
  ASSERT_TRUE(f->Sync(io, nullptr).ok());
  ASSERT_TRUE(f->Close(io, nullptr).ok());
  ASSERT_TRUE(fs_->ReuseWritableFile(name, old_name, rocksdb::FileOptions(), &f, nullptr).ok());
  ASSERT_TRUE(f->Append(std::string(10, 'n'), io, nullptr).ok());
  ASSERT_TRUE(f->Sync(io, nullptr).ok());
  ASSERT_TRUE(dir->Fsync(io, nullptr).ok());
  ASSERT_TRUE(f->Append(std::string(5, 'u'), io, nullptr).ok());
  f.reset();
  PowerCut();
  EXPECT_FALSE(fs::exists(old_name));
  ASSERT_TRUE(fs::exists(name));
  EXPECT_EQ(fs::file_size(name), 10u);
}

// The master's catalog: synced writes (every catalog change) survive, unsynced ones do not.
TEST_F(PowerLossTest, SyncedCatalogWritesSurvive) {
  auto kv = KvStore::Open((root_ / "master").string(), env_.get());
  ASSERT_TRUE(kv.ok());
  ASSERT_TRUE((*kv)->Write({{"owner/7", "n2"}, {"decision/9", "123"}}).ok());
  ASSERT_TRUE((*kv)->Write({{"scratch", "x"}}, /*sync=*/false).ok());
  std::unique_ptr<KvStore> store = std::move(kv).value();
  PowerCut(store);
  auto again = KvStore::Open((root_ / "master").string(), env_.get());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->Get("owner/7").value(), "n2");
  EXPECT_EQ((*again)->Get("decision/9").value(), "123");
  EXPECT_TRUE((*again)->Get("scratch").status().IsNotFound());
}

}  // namespace
}  // namespace wattdb::storage
