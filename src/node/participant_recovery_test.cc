// The participant across restarts: durable prepares, exactly-once commits, readers and late
// commits against prepares a snapshot may include.
#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "node/participant.h"
#include "node/participant_test_fixture.h"
#include "node/segment_rows.h"

namespace wattdb::node {
namespace {

TEST_F(ParticipantTest, DurablePrepareSurvivesRestart) {
  ASSERT_TRUE(p_->Prepare(41, 10, {W(1, WriteCheck::kInsert)}, {.durable = true}).ok());
  ASSERT_TRUE(p_->Prepare(41, 10, {W(2, WriteCheck::kInsert)}, {.durable = true}).ok());
  ASSERT_TRUE(p_->Prepare(42, 10, {W(3, WriteCheck::kInsert)}, {.durable = true}).ok());
  ASSERT_TRUE(p_->Prepare(43, 10, {W(4, WriteCheck::kInsert)}).ok());  // in memory only
  // Crash: drop everything in memory, reopen the store.
  p_.reset();
  store_.reset();
  store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
  p_ = std::make_unique<Participant>(*store_);
  ASSERT_TRUE(p_->Recover().ok());
  EXPECT_EQ(p_->InDoubt(), (std::vector<uint64_t>{41, 42}));
  // Recovered locks still exclude other writers.
  EXPECT_EQ(p_->Prepare(50, 10, {W(2, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kSerializationFailure);
  // The master's decisions arrive: commit 41, abort 42; 43 was lost with the crash.
  ASSERT_TRUE(p_->Commit(41, 20).ok());
  p_->Abort(42);
  EXPECT_TRUE(p_->Commit(43, 21).IsNotFound());
  EXPECT_TRUE(p_->InDoubt().empty());
  {
    auto sc = store_->Scan(1, "", "", 100);
    std::vector<storage::ScanRow> rows;
    while (*(*sc)->Next(10, &rows)) {
    }
    EXPECT_EQ(rows.size(), 2u);  // keys 1 and 2
  }
  // Nothing stays behind after another restart.
  p_.reset();
  store_.reset();
  store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
  p_ = std::make_unique<Participant>(*store_);
  ASSERT_TRUE(p_->Recover().ok());
  EXPECT_TRUE(p_->InDoubt().empty());
}

// The bug behind a lost bank transfer: a node restarted between a transaction's statements
// and its final durable prepare, which then persisted an empty write set and voted yes.
// The master's count of writes sent must match what the node holds.
TEST_F(ParticipantTest, PrepareDetectsWritesLostInARestart) {
  ASSERT_TRUE(p_->Prepare(60, 10, {W(1, WriteCheck::kInsert), W(2, WriteCheck::kInsert)}).ok());
  p_.reset();  // restart: the in-memory prepare is gone
  store_.reset();
  store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
  p_ = std::make_unique<Participant>(*store_);
  ASSERT_TRUE(p_->Recover().ok());
  Status s = p_->Prepare(60, 10, {}, {.durable = true, .expect = 2});
  EXPECT_EQ(s.sqlstate(), sqlstate::kSerializationFailure) << s.ToString();
  EXPECT_TRUE(p_->InDoubt().empty());
  EXPECT_TRUE(store_->ListPrepared()->empty());
  // A later statement's writes alone do not pass for all of them either.
  ASSERT_TRUE(p_->Prepare(61, 10, {W(3, WriteCheck::kInsert)}).ok());
  EXPECT_EQ(p_->Commit(61, 11, nullptr, /*expect=*/2).sqlstate(), sqlstate::kSerializationFailure);
  // With the right count both paths go through.
  ASSERT_TRUE(p_->Prepare(62, 10, {W(4, WriteCheck::kInsert), W(5, WriteCheck::kLock)}).ok());
  ASSERT_TRUE(p_->Prepare(62, 10, {}, {.durable = true, .expect = 2}).ok());
  ASSERT_TRUE(p_->Commit(62, 12).ok());
}

// A commit repeated (a retry after a lost reply, or in-doubt resolution racing the first
// commit) applies nothing twice and reports success; an unknown txn is NotFound.
TEST_F(ParticipantTest, CommitIsExactlyOnce) {
  ASSERT_TRUE(p_->Prepare(70, 10, {W(1, WriteCheck::kInsert)}, {.durable = true}).ok());
  ASSERT_TRUE(p_->Commit(70, 20).ok());
  ASSERT_TRUE(p_->Commit(70, 20).ok());
  EXPECT_EQ(*store_->CommittedAt(70), std::optional<Timestamp>(20));
  EXPECT_TRUE(p_->Commit(71, 20).IsNotFound());
  // Survives a restart too.
  p_.reset();
  store_.reset();
  store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
  p_ = std::make_unique<Participant>(*store_);
  ASSERT_TRUE(p_->Recover().ok());
  ASSERT_TRUE(p_->Commit(70, 20).ok());
  auto sc = store_->Scan(1, "", "", 100);
  std::vector<storage::ScanRow> rows;
  while (*(*sc)->Next(10, &rows)) {
  }
  EXPECT_EQ(rows.size(), 1u);
  // An aborted transaction has no outcome record; forgetting old records works.
  ASSERT_TRUE(p_->Prepare(72, 20, {W(2, WriteCheck::kInsert)}).ok());
  EXPECT_TRUE(p_->Abort(72));
  EXPECT_FALSE(store_->CommittedAt(72)->has_value());
  ASSERT_TRUE(store_->ForgetOutcomesBefore(71).ok());
  EXPECT_FALSE(store_->CommittedAt(70)->has_value());
}

// Lock-only keys (SELECT ... FOR UPDATE) of a durably prepared transaction stay locked
// across a restart.
TEST_F(ParticipantTest, DurablePrepareKeepsLockOnlyKeys) {
  ASSERT_TRUE(p_->Prepare(80, 10, {W(1, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(80, 11).ok());
  ASSERT_TRUE(p_->Prepare(81, 11, {W(1, WriteCheck::kLock), W(2, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Prepare(81, 11, {}, {.durable = true, .expect = 2}).ok());
  p_.reset();
  store_.reset();
  store_ = std::move(storage::SegmentStore::Open(dir_.string()).value());
  p_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(50));
  ASSERT_TRUE(p_->Recover().ok());
  EXPECT_EQ(p_->Prepare(82, 11, {W(1, WriteCheck::kUpdate)}, {.wait = false}).sqlstate(),
            sqlstate::kLockNotAvailable);
  ASSERT_TRUE(p_->Commit(81, 12).ok());
  EXPECT_TRUE(p_->Prepare(83, 12, {W(1, WriteCheck::kUpdate)}).ok());
}

// A decided transaction whose commit has not arrived (durable prepare) holds back readers
// at snapshots it may belong to, until it is resolved; readers below its bound go ahead.
// A write's own read of its row (SegmentRows, as KeyWriteOf reads it) tells the commit the
// row it replaces: the segment's secondary index changes as a second read would have it
// change, without that read. A write that did not read its row has it read at commit.
TEST_F(ParticipantTest, CommitsKeepTheIndexFromTheRowTheWritersReadSaw) {
  const IndexKeySpec spec{3, {1}, {false}};
  ASSERT_TRUE(store_->AddIndex(1, spec, 1).ok());
  auto write = [&](int64_t k, int64_t v, WriteCheck c,
                   storage::VersionKind kind = storage::VersionKind::kPut) {
    TxnWrite w = W(k, c, kind);
    w.op.row.clear();
    if (kind == storage::VersionKind::kPut)
      EncodeRow({Value::Int64(k), Value::Int64(v)}, &w.op.row);
    return w;
  };
  auto read_then = [&](int64_t k, int64_t v, Timestamp snapshot,
                       storage::VersionKind kind = storage::VersionKind::kPut) {
    ScanRequest r;
    r.segment = 1;
    r.lo = W(k, WriteCheck::kNone).op.key;
    r.hi = PrefixSuccessor(r.lo);
    r.read_ts = snapshot;
    auto rows = SegmentRows::Open(*store_, *p_, r);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<storage::ScanRow> out;
    size_t n = 0;
    while (*(*rows)->Next(10, 1 << 20, &out)) n += out.size();
    EXPECT_EQ(n, 1u);
    TxnWrite w = write(k, v, WriteCheck::kUpdate, kind);
    w.seen = (*rows)->first_seen();
    return w;
  };
  auto indexed = [&](int64_t v, Timestamp ts) {
    std::string lo = EncodeIndexKey(spec, {Value::Int64(0), Value::Int64(v)});
    auto sc = store_->ScanIndex(1, "", "", spec.id, lo, PrefixSuccessor(lo), ts);
    EXPECT_TRUE(sc.ok()) << sc.status().ToString();
    std::vector<int64_t> ids;
    std::vector<storage::ScanRow> out;
    while (sc.ok() && *(*sc)->Next(10, &out)) {
      for (const auto& r : out) {
        std::vector<Value> vals;
        EXPECT_TRUE(DecodeRow(r.row, &vals).ok());
        ids.push_back(vals[0].as_int());
      }
    }
    return ids;
  };
  std::atomic<uint64_t>& reads = (*store_->Get(1))->counters().prior_reads;
  ASSERT_TRUE(
      p_->Prepare(1, 10, {write(5, 100, WriteCheck::kInsert), write(6, 200, WriteCheck::kInsert)})
          .ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  const uint64_t base = reads.load();
  EXPECT_EQ(base, 2u) << "inserts without a read have their rows read";
  // Updates through a read of storage, then of the newest-version cache; a delete.
  ASSERT_TRUE(p_->Prepare(2, 20, {read_then(5, 101, 20)}).ok());
  ASSERT_TRUE(p_->Commit(2, 21).ok());
  EXPECT_EQ(indexed(100, 25), std::vector<int64_t>{});
  EXPECT_EQ(indexed(101, 25), std::vector<int64_t>{5});
  read_then(5, 0, 25);  // leaves the key's newest version in the cache
  ASSERT_TRUE(p_->Prepare(3, 25, {read_then(5, 102, 25)}).ok());
  ASSERT_TRUE(p_->Commit(3, 26).ok());
  ASSERT_TRUE(p_->Prepare(4, 30, {read_then(6, 0, 30, storage::VersionKind::kDelete)}).ok());
  ASSERT_TRUE(p_->Commit(4, 31).ok());
  EXPECT_EQ(indexed(101, 35), std::vector<int64_t>{});
  EXPECT_EQ(indexed(102, 35), std::vector<int64_t>{5});
  EXPECT_EQ(indexed(200, 35), std::vector<int64_t>{});
  EXPECT_EQ(indexed(200, 30), std::vector<int64_t>{6}) << "older snapshots keep their entries";
  // Deleted and inserted again in one transaction: the first write knows the old row.
  ASSERT_TRUE(p_->Prepare(5, 40, {read_then(5, 0, 40, storage::VersionKind::kDelete)}).ok());
  ASSERT_TRUE(p_->Prepare(5, 40, {write(5, 103, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(5, 41).ok());
  EXPECT_EQ(indexed(102, 45), std::vector<int64_t>{});
  EXPECT_EQ(indexed(103, 45), std::vector<int64_t>{5});
  EXPECT_EQ(reads.load(), base) << "every row replaced above was known from its writer's read";
  // A write that read nothing: its row is read at commit, with the same result.
  ASSERT_TRUE(p_->Prepare(6, 45, {write(5, 104, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(6, 46).ok());
  EXPECT_EQ(reads.load(), base + 1);
  EXPECT_EQ(indexed(103, 50), std::vector<int64_t>{});
  EXPECT_EQ(indexed(104, 50), std::vector<int64_t>{5});
}

TEST_F(ParticipantTest, ReadersWaitForDurablePreparesTheirSnapshotMayInclude) {
  p_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(50),
                                     std::chrono::milliseconds(100));
  ASSERT_TRUE(p_->Prepare(90, 10, {W(1, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Prepare(90, 10, {}, {.durable = true, .expect = 1, .min_commit_ts = 20}).ok());
  std::string k1, k2;
  EncodeKeyValue(Value::Int64(1), &k1);
  EncodeKeyValue(Value::Int64(2), &k2);
  EXPECT_TRUE(p_->AwaitReadable(1, "", "", 20, 0).ok());   // commits above 20: not in this snapshot
  EXPECT_TRUE(p_->AwaitReadable(1, k2, "", 25, 0).ok());   // another key range
  EXPECT_TRUE(p_->AwaitReadable(1, "", "", 25, 90).ok());  // its own reads
  EXPECT_EQ(p_->AwaitReadable(1, "", "", 25, 0).sqlstate(),
            sqlstate::kSerializationFailure);  // unresolved: no guess
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(p_->Commit(90, 22).ok());
  });
  Status waited = p_->AwaitReadable(1, k1, k2, 25, 0);
  late.join();
  EXPECT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_TRUE(store_->Latest(1, k1).value().found);
}

// A commit decided by this node (in-memory prepare) that arrives after a read at a snapshot
// at or above its timestamp is refused: the read missed it, so it must not happen.
TEST_F(ParticipantTest, LateCommitBelowAReadIsRefused) {
  ASSERT_TRUE(p_->Prepare(91, 10, {W(1, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->AwaitReadable(1, "", "", 30, 0).ok());
  EXPECT_EQ(p_->Commit(91, 30).sqlstate(), sqlstate::kSerializationFailure);
  std::string k1;
  EncodeKeyValue(Value::Int64(1), &k1);
  EXPECT_FALSE(store_->Latest(1, k1).value().found);
  // Its locks are gone, and a commit above the reads goes through.
  ASSERT_TRUE(p_->Prepare(92, 30, {W(1, WriteCheck::kInsert)}).ok());
  EXPECT_TRUE(p_->Commit(92, 31).ok());
}

// A durable prepare syncs its record after the participant's lock is released: while that
// sync is held, other transactions prepare and commit, and the heartbeat's lists (in-doubt
// transactions, lock waits) are read, none waiting for the disk. The prepare answers once
// its record is durable.
TEST_F(ParticipantTest, ADurablePrepareSyncsItsRecordWithoutHoldingOtherCallsUp) {
  using namespace std::chrono_literals;
  SyncGate gate(*store_, /*hold=*/true);
  bool answered_after_sync = false;
  auto durable = std::async(std::launch::async, [&] {
    Status s = p_->Prepare(70, 10, {W(1, WriteCheck::kInsert)}, {.durable = true});
    answered_after_sync = gate.Released();
    return s;
  });
  ASSERT_TRUE(gate.Held(30s));
  auto others = std::async(std::launch::async, [&] {
    Status s = p_->Prepare(71, 10, {W(2, WriteCheck::kInsert)});
    if (s.ok()) s = p_->Commit(71, 11);  // commits unsynced here: sync_commits is off
    (void)p_->InDoubt();
    (void)p_->LockWaits();
    return s;
  });
  EXPECT_EQ(others.wait_for(30s), std::future_status::ready);
  EXPECT_NE(durable.wait_for(0s), std::future_status::ready);
  gate.Release();
  ASSERT_EQ(durable.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(durable.get().ok());
  EXPECT_TRUE(answered_after_sync);
  EXPECT_TRUE(others.get().ok());
  EXPECT_EQ(p_->InDoubt(), std::vector<uint64_t>{70});
}

}  // namespace
}  // namespace wattdb::node
