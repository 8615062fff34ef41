#include "node/participant.h"

#include <condition_variable>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "node/participant_test_fixture.h"
#include "node/segment_rows.h"

namespace wattdb::node {
namespace {

TEST_F(ParticipantTest, DuplicateInsertIsRejected) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  Status s = p_->Prepare(2, 11, {W(5, WriteCheck::kInsert)});
  EXPECT_EQ(s.sqlstate(), sqlstate::kUniqueViolation);
  // After a delete commits, the key can be inserted again.
  ASSERT_TRUE(p_->Prepare(3, 11, {W(5, WriteCheck::kUpdate, storage::VersionKind::kDelete)}).ok());
  ASSERT_TRUE(p_->Commit(3, 12).ok());
  EXPECT_TRUE(p_->Prepare(4, 12, {W(5, WriteCheck::kInsert)}).ok());
}

// SELECT ... FOR UPDATE locks rows without writing them: others cannot prepare them until the
// holder ends, the holder's own later update goes through, and a lock-only commit writes nothing.
TEST_F(ParticipantTest, LockOnlyWritesLockButWriteNothing) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  ASSERT_TRUE(p_->Prepare(2, 11, {W(5, WriteCheck::kLock)}).ok());
  EXPECT_TRUE(p_->PendingWrites(2, 1, "", "").empty());
  Status other = p_->Prepare(3, 11, {W(5, WriteCheck::kUpdate)}, {.wait = false});
  EXPECT_EQ(other.sqlstate(), sqlstate::kLockNotAvailable);
  ASSERT_TRUE(p_->Commit(2, 12).ok());
  auto lv = store_->Latest(1, W(5, WriteCheck::kNone).op.key);
  ASSERT_TRUE(lv.ok());
  EXPECT_EQ(lv->ts, 11u);  // nothing written at 12
  // Released: another transaction now locks it, then updates it in a second statement.
  ASSERT_TRUE(p_->Prepare(4, 12, {W(5, WriteCheck::kLock)}).ok());
  ASSERT_TRUE(p_->Prepare(4, 12, {W(5, WriteCheck::kUpdate)}).ok());
  EXPECT_EQ(p_->PendingWrites(4, 1, "", "").size(), 1u);
  ASSERT_TRUE(p_->Commit(4, 13).ok());
  EXPECT_EQ(store_->Latest(1, W(5, WriteCheck::kNone).op.key)->ts, 13u);
  // A lock taken after our snapshot's view changed fails like an update would.
  EXPECT_TRUE(p_->Prepare(5, 12, {W(5, WriteCheck::kLock)}).IsConflict());
}

// READ COMMITTED's re-check: a conflict asked to be kept locks the changed key for the
// transaction, so a rival cannot take it before the transaction prepares again over the
// newest version (or lets it go with Unlock).
TEST_F(ParticipantTest, AKeptConflictLocksTheKeyUntilPreparedAgainOrUnlocked) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  KeptConflict kept;
  EXPECT_TRUE(
      p_->Prepare(2, 10, {W(5, WriteCheck::kUpdate)}, {.keep_conflict = &kept}).IsConflict());
  EXPECT_EQ(kept.ts, 11u);
  EXPECT_TRUE(kept.locked);
  EXPECT_EQ(kept.key, W(5, WriteCheck::kNone).op.key);
  EXPECT_EQ(p_->Prepare(3, 11, {W(5, WriteCheck::kUpdate)}, {.wait = false}).sqlstate(),
            sqlstate::kLockNotAvailable);
  ASSERT_TRUE(p_->Prepare(2, kept.ts, {W(5, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(2, 12).ok());
  EXPECT_EQ(store_->Latest(1, kept.key)->ts, 12u);
  EXPECT_EQ(p_->prepared_count(), 0u);

  // Kept, then not written: Unlock frees it (and the transaction's entry).
  KeptConflict again;
  EXPECT_TRUE(
      p_->Prepare(4, 11, {W(5, WriteCheck::kUpdate)}, {.keep_conflict = &again}).IsConflict());
  EXPECT_EQ(again.ts, 12u);
  EXPECT_EQ(p_->Prepare(5, 12, {W(5, WriteCheck::kUpdate)}, {.wait = false}).sqlstate(),
            sqlstate::kLockNotAvailable);
  p_->Unlock(4, again.segment, again.key);
  EXPECT_EQ(p_->prepared_count(), 0u);
  ASSERT_TRUE(p_->Prepare(5, 12, {W(5, WriteCheck::kUpdate)}, {.wait = false}).ok());
  // Unlock leaves a key the transaction wrote locked.
  p_->Unlock(5, again.segment, again.key);
  EXPECT_EQ(p_->Prepare(6, 12, {W(5, WriteCheck::kUpdate)}, {.wait = false}).sqlstate(),
            sqlstate::kLockNotAvailable);
  // Without keep_conflict nothing is locked by a conflict.
  EXPECT_TRUE(p_->Prepare(7, 10, {W(6, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(7, 13).ok());
  EXPECT_TRUE(p_->Prepare(8, 12, {W(6, WriteCheck::kUpdate)}).IsConflict());
  EXPECT_TRUE(p_->Prepare(9, 13, {W(6, WriteCheck::kUpdate)}, {.wait = false}).ok());
}

// A failed statement's writes are undone: its locks go (others may take them), the earlier
// statements' writes and locks stay and commit.
TEST_F(ParticipantTest, RollbackToUndoesTheLaterStatementsOnly) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(1, WriteCheck::kInsert), W(2, WriteCheck::kInsert)})
                  .ok());                                             // statement 1
  ASSERT_TRUE(p_->Prepare(1, 10, {W(3, WriteCheck::kInsert)}).ok());  // statement 2
  ASSERT_TRUE(p_->Prepare(1, 10,
                          {W(1, WriteCheck::kUpdate, storage::VersionKind::kDelete),  // statement 2
                           W(4, WriteCheck::kLock)})
                  .ok());
  EXPECT_EQ(p_->RollbackTo(1, 1).code(), Status::Code::kInternal);  // not the end of a prepare
  ASSERT_TRUE(p_->RollbackTo(1, 2).ok());
  auto pending = p_->PendingWrites(1, 1, "", "");
  ASSERT_EQ(pending.size(), 2u);
  for (const auto& [key, op] : pending)
    EXPECT_EQ(op.kind, storage::VersionKind::kPut);  // key 1's delete is gone
  // A read's wait hands the same writes out (within its range).
  std::map<std::string, storage::WriteOp> with_wait;
  ASSERT_TRUE(p_->AwaitReadable(1, "", "", 10, 1, &with_wait).ok());
  EXPECT_EQ(with_wait.size(), 2u);
  std::string key2 = W(2, WriteCheck::kNone).op.key;
  ASSERT_TRUE(p_->AwaitReadable(1, key2, "", 10, 1, &with_wait).ok());
  ASSERT_EQ(with_wait.size(), 1u);
  EXPECT_EQ(with_wait.begin()->first, key2);
  // Keys 3 and 4 are free again; key 1 is still ours.
  EXPECT_TRUE(
      p_->Prepare(2, 10, {W(3, WriteCheck::kInsert), W(4, WriteCheck::kLock)}, {.wait = false})
          .ok());
  EXPECT_EQ(p_->Prepare(3, 10, {W(1, WriteCheck::kUpdate)}, {.wait = false}).sqlstate(),
            sqlstate::kLockNotAvailable);
  // The transaction goes on: more writes, then a commit with the count of writes kept.
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}, {.expect = 3}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  EXPECT_TRUE(store_->Latest(1, W(1, WriteCheck::kNone).op.key)->found);
  EXPECT_TRUE(store_->Latest(1, W(5, WriteCheck::kNone).op.key)->found);
  EXPECT_FALSE(
      store_->Latest(1, W(3, WriteCheck::kNone).op.key)->found);  // txn 2 has it, uncommitted
  EXPECT_EQ(p_->RollbackTo(1, 1).sqlstate(),
            sqlstate::kSerializationFailure);  // nothing of txn 1 is left here
  ASSERT_TRUE(p_->RollbackTo(2, 0).ok());      // 0: forget it all
  EXPECT_EQ(p_->prepared_count(), 0u);
}

// Two transactions each wait for the other's row: the one whose wait would close the cycle is
// told at once (40P01) instead of both waiting out the lock wait.
TEST_F(ParticipantTest, ALocalDeadlockIsDetected) {
  Participant p(*store_, std::chrono::milliseconds(20000));
  ASSERT_TRUE(p.Prepare(1, 10, {W(1, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p.Prepare(2, 10, {W(2, WriteCheck::kInsert)}).ok());
  auto started = std::chrono::steady_clock::now();
  Status s1, s2;
  std::thread t1([&] {
    s1 = p.Prepare(1, 10, {W(2, WriteCheck::kUpdate)});  // waits for txn 2
    if (!s1.ok()) p.Abort(1);
  });
  std::thread t2([&] {
    s2 = p.Prepare(2, 10, {W(1, WriteCheck::kUpdate)});  // waits for txn 1
    if (!s2.ok()) p.Abort(2);
  });
  t1.join();
  t2.join();
  // One is the victim; the other gets the row once the victim's locks are gone.
  EXPECT_NE(s1.ok(), s2.ok()) << s1.ToString() << " / " << s2.ToString();
  EXPECT_EQ((s1.ok() ? s2 : s1).sqlstate(), sqlstate::kDeadlockDetected);
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(10));  // not the lock wait
}

// The master sees cycles through several nodes in their reported waits and breaks one wait;
// only a wait that is still there (same holder) is broken.
TEST_F(ParticipantTest, AWaitReportedToTheMasterCanBeBroken) {
  // Its own look for deadlocks comes after the lock wait: only BreakWait ends it sooner.
  Participant p(*store_, std::chrono::milliseconds(20000), std::chrono::milliseconds(6000),
                std::chrono::milliseconds(60000));
  ASSERT_TRUE(p.Prepare(1, 10, {W(1, WriteCheck::kInsert)}).ok());
  EXPECT_TRUE(p.LockWaits().empty());
  EXPECT_FALSE(p.BreakWait(2, 1));  // not waiting
  Status s;
  std::thread waiter([&] { s = p.Prepare(2, 10, {W(1, WriteCheck::kUpdate)}); });
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       p.LockWaits().empty() && std::chrono::steady_clock::now() < until;) {
    std::this_thread::yield();
  }
  EXPECT_EQ(p.LockWaits(), (std::vector<std::pair<uint64_t, uint64_t>>{{2, 1}}));
  EXPECT_FALSE(p.BreakWait(2, 3));  // it waits for another transaction than that
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(p.BreakWait(2, 1));
  waiter.join();
  EXPECT_EQ(s.sqlstate(), sqlstate::kDeadlockDetected) << s.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(10));  // not the lock wait
  EXPECT_TRUE(p.LockWaits().empty());
  // The broken wait leaves nothing behind: txn 2's next wait is a normal one.
  p.Abort(1);
  EXPECT_TRUE(p.Prepare(2, 10, {W(1, WriteCheck::kUpdate)}).ok());
}

// A split can reach the node after the master gave up on it (the node was frozen) and let
// writes go on: a write into the half that moves waits for the split, then is refused as
// stale instead of landing in the lower half's column family, where no reader looks.
TEST_F(ParticipantTest, WritesWaitOutASplitThenSeeTheNewRange) {
  Participant p(*store_, std::chrono::milliseconds(10000));
  for (int k = 0; k < 10; k++) {
    ASSERT_TRUE(p.Prepare(k + 1, 10, {W(k, WriteCheck::kInsert)}).ok());
    ASSERT_TRUE(p.Commit(k + 1, 11 + k).ok());
  }
  ASSERT_TRUE(p.BeginExclusive(1));
  EXPECT_FALSE(p.BeginExclusive(1));  // one split or export at a time
  Status upper;
  std::thread writer([&] { upper = p.Prepare(100, 30, {W(15, WriteCheck::kInsert)}); });
  auto split_key = store_->Split(1, 2);
  p.EndExclusive(1);
  writer.join();
  ASSERT_TRUE(split_key.ok()) << split_key.status().ToString();
  EXPECT_TRUE(upper.IsStale()) << upper.ToString();
  EXPECT_TRUE(p.Prepare(101, 30, {W(1, WriteCheck::kUpdate)}).ok());  // the lower half takes writes
  // A prepared transaction keeps splits and exports out; a wait that outlasts the lock wait
  // fails with 55006.
  EXPECT_FALSE(p.BeginExclusive(1));
  EXPECT_TRUE(p.Abort(101));
  ASSERT_TRUE(p.BeginExclusive(1));
  Participant impatient(*store_, std::chrono::milliseconds(1));
  ASSERT_TRUE(impatient.BeginExclusive(1));
  EXPECT_EQ(impatient.Prepare(102, 30, {W(2, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kObjectInUse);
  impatient.EndExclusive(1);
  p.EndExclusive(1);
}

// A segment's lock table, emptied by a commit, stays for the segment's next writers (their
// locks allocate nothing then) without counting as held; it goes when the segment is split or
// moved (BeginExclusive) or leaves the node, unless a lock is held there.
TEST_F(ParticipantTest, AnEmptiedLockTableStaysUntilItsSegmentChangesOrGoes) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(1, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  EXPECT_EQ(p_->lock_table_count(), 1u);
  EXPECT_FALSE(p_->HasPrepared(1));
  ASSERT_TRUE(p_->BeginExclusive(1));
  EXPECT_EQ(p_->lock_table_count(), 0u);
  p_->EndExclusive(1);
  ASSERT_TRUE(p_->Prepare(2, 12, {W(2, WriteCheck::kInsert)}).ok());
  p_->SegmentGone(1);  // a lock is held there: the table stays
  EXPECT_EQ(p_->lock_table_count(), 1u);
  EXPECT_TRUE(p_->HasPrepared(1));
  ASSERT_TRUE(p_->Commit(2, 13).ok());
  EXPECT_EQ(p_->lock_table_count(), 1u);
  p_->SegmentGone(1);
  EXPECT_EQ(p_->lock_table_count(), 0u);
}

TEST_F(ParticipantTest, WriterWaitsForLockHolder) {
  Participant p(*store_, std::chrono::milliseconds(10000));
  ASSERT_TRUE(p.Prepare(1, 10, {W(9, WriteCheck::kInsert)}).ok());
  // The holder aborts while the second writer waits: the second goes ahead.
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    p.Abort(1);
  });
  EXPECT_TRUE(p.Prepare(2, 10, {W(9, WriteCheck::kInsert)}).ok());
  aborter.join();
  // The holder commits while a third writer waits: the third loses (first updater wins).
  std::thread committer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(p.Commit(2, 20).ok());
  });
  EXPECT_EQ(p.Prepare(3, 10, {W(9, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kSerializationFailure);
  committer.join();
  EXPECT_TRUE(p.Prepare(4, 20, {W(9, WriteCheck::kUpdate)}).ok());
}

// Early lock release: a synced commit lets its locks go once its writes are in the log, and
// stays committing until its sync ends. Held at its sync: the segment cannot be split; a
// writer of one of its keys goes on at once, its write being later in the log; a kept
// conflict on its version answers at once with the sync to wait for; an insert refused
// because of its version (an answer that leaves no write) waits until the sync ends.
TEST_F(ParticipantTest, ACommitLetsItsLocksGoBeforeItsSyncAndAnswersWithoutAWriteWaitForIt) {
  using namespace std::chrono_literals;
  store_->set_sync_commits(true);
  SyncGate gate(*store_);
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert), W(6, WriteCheck::kInsert)}).ok());
  gate.Hold();
  auto commit = std::async(std::launch::async, [&] { return p_->Commit(1, 12); });
  ASSERT_TRUE(gate.Held(30s));
  EXPECT_FALSE(p_->BeginExclusive(1));  // no lock is held, but the commit is not durable yet
  // A writer of key 5 whose snapshot has the commit: no lock to wait for, no conflict.
  auto writer = std::async(std::launch::async,
                           [&] { return p_->Prepare(2, 12, {W(5, WriteCheck::kUpdate)}); });
  ASSERT_EQ(writer.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(writer.get().ok());
  // A READ COMMITTED writer of key 6 from before the commit: kept, told what to wait for.
  KeptConflict kept;
  auto rechecker = std::async(std::launch::async, [&] {
    return p_->Prepare(3, 11, {W(6, WriteCheck::kUpdate)}, {.keep_conflict = &kept});
  });
  ASSERT_EQ(rechecker.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(rechecker.get().IsConflict());
  EXPECT_EQ(kept.ts, 12u);
  EXPECT_NE(kept.durable_ticket, 0u);
  p_->Unlock(3, 1, kept.key);
  // An insert of key 6 fails on the commit's version: the answer waits for the sync.
  bool answered_after_sync = false;
  auto inserter = std::async(std::launch::async, [&] {
    Status s = p_->Prepare(4, 12, {W(6, WriteCheck::kInsert)});
    answered_after_sync = gate.Released();
    return s;
  });
  for (auto until = std::chrono::steady_clock::now() + 30s;
       store_->log_sync_sleepers() == 0 && inserter.wait_for(0s) != std::future_status::ready &&
       std::chrono::steady_clock::now() < until;) {
    std::this_thread::yield();
  }
  gate.Release();
  ASSERT_EQ(commit.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(commit.get().ok());
  ASSERT_EQ(inserter.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(inserter.get().sqlstate(), sqlstate::kUniqueViolation);
  EXPECT_TRUE(answered_after_sync);
  ASSERT_TRUE(p_->Abort(2));
  EXPECT_TRUE(p_->BeginExclusive(1));  // durable now, and no lock held
  p_->EndExclusive(1);
}

// A row-lock wait sleeps through the commits of other transactions and wakes when its
// holder ends. The waits here look for deadlocks only once a minute, so a wait that ends
// sooner was woken by the holder's end.
TEST_F(ParticipantTest, ALockWaitWakesWhenItsHolderEndsAndOnlyThen) {
  const auto minute = std::chrono::milliseconds(60000);
  Participant p(*store_, 2 * minute, std::chrono::milliseconds(6000), minute);
  ASSERT_TRUE(p.Prepare(1, 10, {W(1, WriteCheck::kInsert)}).ok());
  auto waiter =
      std::async(std::launch::async, [&] { return p.Prepare(2, 10, {W(1, WriteCheck::kInsert)}); });
  // The wait is listed while its transaction holds the participant's lock or sleeps.
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       p.LockWaits().empty() && std::chrono::steady_clock::now() < until;) {
    std::this_thread::yield();
  }
  ASSERT_EQ(p.LockWaits(), (std::vector<std::pair<uint64_t, uint64_t>>{{2, 1}}));
  uint64_t woken = p.lock_wait_wakeups();
  for (uint64_t t = 100; t < 140; t++) {  // other keys: locked, committed, released
    ASSERT_TRUE(p.Prepare(t, 10, {W(static_cast<int>(t), WriteCheck::kInsert)}).ok());
    ASSERT_TRUE(p.Commit(t, 20 + t).ok());
  }
  EXPECT_EQ(p.lock_wait_wakeups(), woken);
  EXPECT_EQ(waiter.wait_for(std::chrono::seconds(0)), std::future_status::timeout);
  ASSERT_TRUE(p.Abort(1));
  ASSERT_EQ(waiter.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_TRUE(waiter.get().ok());
  EXPECT_GE(p.lock_wait_wakeups(), woken + 1);
  EXPECT_TRUE(p.LockWaits().empty());
}

// An update's own read of the row (a point scan) tells the prepare the key's newest version;
// the prepare trusts it only while nothing was written to the segment since. A commit between
// the read and the prepare is still a conflict; a write elsewhere is not.
TEST_F(ParticipantTest, AnUpdatesOwnReadDecidesItsCheckUnlessTheSegmentChangedSince) {
  ASSERT_TRUE(store_->CreateSegment({2, 1, "", ""}).ok());
  ASSERT_TRUE(p_->Prepare(1, 10, {W(7, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 20).ok());
  // What KeyWriteOf does: read the key at the snapshot, then prepare with what the read met.
  auto read = [&](Timestamp snapshot) {
    std::string key = W(7, WriteCheck::kNone).op.key;
    auto scan = store_->Scan(1, key, PrefixSuccessor(key), snapshot);
    EXPECT_TRUE(scan.ok());
    std::vector<storage::ScanRow> rows;
    EXPECT_TRUE((*scan)->Next(10, &rows).ok());
    EXPECT_EQ(rows.size(), 1u);
    EXPECT_TRUE((*scan)->first_seen().has_value());
    return *(*scan)->first_seen();
  };
  auto update = [&](const storage::SeenLatest& seen) {
    TxnWrite w = W(7, WriteCheck::kUpdate);
    w.seen = seen;
    return w;
  };
  storage::SeenLatest seen = read(25);
  EXPECT_EQ(seen.latest.ts, 20u);
  EXPECT_FALSE(seen.latest.deleted);
  // A rival commits the row after the read: the check reads the key again and fails.
  ASSERT_TRUE(p_->Prepare(2, 25, {W(7, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(2, 30).ok());
  EXPECT_EQ(p_->Prepare(3, 25, {update(seen)}).sqlstate(), sqlstate::kSerializationFailure);
  // A read after that commit sees it (even above its snapshot), and decides alone: a write
  // to another segment does not stale it, and a made-up newer version is believed.
  seen = read(25);
  EXPECT_EQ(seen.latest.ts, 30u);
  ASSERT_TRUE(
      p_->Prepare(4, 35, {TxnWrite{{2, "x", storage::VersionKind::kPut, "r"}, WriteCheck::kNone}})
          .ok());
  ASSERT_TRUE(p_->Commit(4, 36).ok());
  storage::SeenLatest fake = read(40);
  fake.latest.ts = 50;
  EXPECT_EQ(p_->Prepare(5, 40, {update(fake)}).sqlstate(), sqlstate::kSerializationFailure)
      << "a current read decides the check";
  EXPECT_TRUE(p_->Prepare(6, 40, {update(read(40))}).ok());
}

// A read through a column image (SegmentRows::SeeImageRow) also names the segment's recording
// of commits that covered it: once other keys of the segment were written, the prepare asks
// the recording about its key instead of reading it from storage -- a version recorded since
// decides, and with none the read's own version does; an ended recording decides nothing.
TEST_F(ParticipantTest, AReadThroughAnImageIsCheckedAgainstTheRecordingOfCommits) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(7, WriteCheck::kInsert), W(8, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 20).ok());
  storage::SegmentRef seg = *store_->Get(1);
  const uint64_t base = seg->ArmRecent();
  auto seen_at = [&](Timestamp latest) {
    storage::SeenLatest s{seg.get(), seg->write_seq(), W(7, WriteCheck::kNone).op.key};
    s.latest = {true, latest, false};
    s.recent_base = base;
    return s;
  };
  auto update = [&](const storage::SeenLatest& seen) {
    TxnWrite w = W(7, WriteCheck::kUpdate);
    w.seen = seen;
    return w;
  };
  // Read, then another key of the segment is written: the read is no longer current.
  storage::SeenLatest fake = seen_at(50);  // a made-up newer version
  storage::SeenLatest seen = seen_at(20);
  ASSERT_TRUE(p_->Prepare(2, 25, {W(8, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(2, 30).ok());
  ASSERT_FALSE(seen.Current(*seg));
  EXPECT_EQ(p_->Prepare(3, 35, {update(fake)}).sqlstate(), sqlstate::kSerializationFailure)
      << "key 7 unrecorded: the read decides";
  ASSERT_TRUE(p_->Prepare(4, 35, {update(seen)}).ok());
  ASSERT_TRUE(p_->Commit(4, 40).ok());
  // Key 7 committed at 40 after this read: the recording says so.
  EXPECT_EQ(p_->Prepare(5, 35, {update(seen)}).sqlstate(), sqlstate::kSerializationFailure);
  EXPECT_TRUE(p_->Prepare(6, 45, {update(seen)}).ok());
  p_->Abort(6);
  // The recording ended: storage decides (the made-up version is not believed).
  seg->DisarmRecent(base);
  EXPECT_TRUE(p_->Prepare(7, 45, {update(fake)}).ok());
}

// Point lookups through SegmentRows take a written key's newest version from the segment's
// NewestRows when it is visible at their read timestamp; older snapshots and a transaction's
// own pending write read as before.
TEST_F(ParticipantTest, PointLookupsReadTheNewestVersionFromTheSegmentsCache) {
  auto read = [&](uint64_t txn, Timestamp ts) -> std::string {
    ScanRequest r;
    r.segment = 1;
    r.lo = W(5, WriteCheck::kNone).op.key;
    r.hi = PrefixSuccessor(r.lo);
    r.read_ts = ts;
    r.txn = txn;
    auto rows = SegmentRows::Open(*store_, *p_, r);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<storage::ScanRow> out;
    std::string got = "none";
    while (*(*rows)->Next(10, 1 << 20, &out)) {
      for (auto& row : out)
        got = row.row == W(5, WriteCheck::kNone).op.row ? "v5"
                                                        : "other:" + std::to_string(row.row.size());
    }
    return got;
  };
  storage::SegmentCounters& c = (*store_->Get(1))->counters();
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  EXPECT_EQ(read(0, 20), "v5");
  EXPECT_EQ(c.newest_hits.load(), 0u) << "a key of one version is not kept";
  ASSERT_TRUE(p_->Prepare(9, 21, {W(5, WriteCheck::kUpdate)}).ok());  // the same row again
  ASSERT_TRUE(p_->Commit(9, 22).ok());
  EXPECT_EQ(read(0, 25), "v5");
  EXPECT_EQ(c.newest_hits.load(), 0u) << "the first read goes to storage";
  EXPECT_EQ(read(0, 25), "v5");
  EXPECT_EQ(c.newest_hits.load(), 1u) << "the first read left the version";
  EXPECT_EQ(read(0, 5), "none") << "a snapshot before the commits";
  EXPECT_EQ(c.newest_hits.load(), 1u);
  // The transaction's own pending write wins over the cache.
  TxnWrite mine = W(5, WriteCheck::kUpdate);
  EncodeRow({Value::Int64(5), Value::Int64(6)}, &mine.op.row);
  ASSERT_TRUE(p_->Prepare(2, 25, {mine}).ok());
  EXPECT_EQ(read(2, 25), "other:" + std::to_string(mine.op.row.size()));
  EXPECT_EQ(read(0, 25), "v5");
  ASSERT_TRUE(p_->Prepare(2, 25, {W(5, WriteCheck::kNone, storage::VersionKind::kDelete)}).ok());
  EXPECT_EQ(read(2, 25), "none") << "its own deletion";
  EXPECT_EQ(read(0, 25), "v5");
  p_->Abort(2);
  // A deletion replaces the cached version: nothing to read above it, the row below it.
  ASSERT_TRUE(p_->Prepare(3, 25, {W(5, WriteCheck::kUpdate, storage::VersionKind::kDelete)}).ok());
  ASSERT_TRUE(p_->Commit(3, 30).ok());
  uint64_t hits = c.newest_hits.load();
  EXPECT_EQ(read(0, 40), "none");
  EXPECT_EQ(c.newest_hits.load(), hits + 1);
  EXPECT_EQ(read(0, 28), "v5");
}

// A writer's conflict and uniqueness checks of a key the newest-version cache holds take its
// version from there, and decide as a read of storage would.
TEST_F(ParticipantTest, WritersCheckCachedKeysAgainstTheCachedNewestVersion) {
  auto point_read = [&](Timestamp ts) {
    ScanRequest r;
    r.segment = 1;
    r.lo = W(5, WriteCheck::kNone).op.key;
    r.hi = PrefixSuccessor(r.lo);
    r.read_ts = ts;
    auto rows = SegmentRows::Open(*store_, *p_, r);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    std::vector<storage::ScanRow> out;
    while (*(*rows)->Next(10, 1 << 20, &out)) {
    }
  };
  ASSERT_TRUE(p_->Prepare(1, 10, {W(5, WriteCheck::kInsert)}).ok());
  ASSERT_TRUE(p_->Commit(1, 11).ok());
  ASSERT_TRUE(p_->Prepare(2, 12, {W(5, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(2, 13).ok());
  point_read(20);  // a key of several versions: the read leaves its newest in the cache
  ASSERT_EQ((*store_->Get(1))->newest().size(), 1u);
  ASSERT_TRUE(p_->Prepare(3, 20, {W(5, WriteCheck::kUpdate)}).ok());
  ASSERT_TRUE(p_->Commit(3, 21).ok());  // replaces the cached version
  EXPECT_EQ(p_->Prepare(4, 20, {W(5, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kSerializationFailure);
  EXPECT_EQ(p_->Prepare(5, 21, {W(5, WriteCheck::kInsert)}).sqlstate(), sqlstate::kUniqueViolation);
  ASSERT_TRUE(p_->Prepare(6, 21, {W(5, WriteCheck::kUpdate, storage::VersionKind::kDelete)}).ok());
  ASSERT_TRUE(p_->Commit(6, 22).ok());
  ASSERT_EQ((*store_->Get(1))->newest().size(), 1u);
  EXPECT_EQ(p_->Prepare(7, 21, {W(5, WriteCheck::kInsert)}).sqlstate(),
            sqlstate::kSerializationFailure);                         // deleted after 21
  EXPECT_TRUE(p_->Prepare(8, 22, {W(5, WriteCheck::kInsert)}).ok());  // deleted: free to insert
}

TEST_F(ParticipantTest, LaterWriterLosesConflicts) {
  ASSERT_TRUE(p_->Prepare(1, 10, {W(7, WriteCheck::kInsert)}).ok());
  // A concurrent prepared writer on the same key waits, and aborts when the wait runs out.
  EXPECT_EQ(p_->Prepare(2, 10, {W(7, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kSerializationFailure);
  EXPECT_TRUE(p_->HasPrepared(1));
  ASSERT_TRUE(p_->Commit(1, 20).ok());
  EXPECT_FALSE(p_->HasPrepared(1));
  // A writer whose snapshot predates the committed version aborts (first committer wins).
  EXPECT_EQ(p_->Prepare(3, 15, {W(7, WriteCheck::kUpdate)}).sqlstate(),
            sqlstate::kSerializationFailure);
  EXPECT_TRUE(p_->Prepare(4, 20, {W(7, WriteCheck::kUpdate)}).ok());
  p_->Abort(4);
  EXPECT_EQ(p_->prepared_count(), 0u);
  EXPECT_TRUE(p_->Prepare(5, 20, {W(7, WriteCheck::kUpdate)}).ok());
}

TEST_F(ParticipantTest, KeyOutsideSegmentIsStale) {
  ASSERT_TRUE(store_->CreateSegment({2, 1, "", "\x01"}).ok());
  TxnWrite w = W(9, WriteCheck::kInsert);
  w.op.segment = 2;
  EXPECT_TRUE(p_->Prepare(1, 1, {w}).IsStale());
}

}  // namespace
}  // namespace wattdb::node
