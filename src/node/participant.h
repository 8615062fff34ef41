// Participant: the node's side of a statement's atomic commit across nodes.
//
// Prepare validates a transaction's writes against committed data (duplicate keys -> 23505,
// write-write conflicts under snapshot isolation -> 40001), locks the written keys and keeps
// the writes in memory; Commit applies them at the master's commit timestamp in one RocksDB
// write batch; Abort forgets them. A key locked by one prepared transaction cannot be
// prepared by another (40001: the later writer aborts).
//
// A Prepare that would wait for a lock held by a transaction that (through other waits here)
// waits for the preparing one fails at once with 40P01 (deadlock detected). A write whose
// key has a committed version newer than the snapshot fails with a Conflict (40001); under
// READ COMMITTED the master then rolls the statement back (RollbackTo) and restarts it.
//
// A transaction spanning several nodes prepares durably: its writes are persisted (synced)
// before Prepare answers, and Recover() reloads them with their locks after a restart. Such a
// transaction stays "in doubt" until the master, which logs its decision before announcing
// it, sends Commit or Abort. A single-node transaction prepares in memory only: if the node
// restarts before the commit, the commit fails and nothing was applied anywhere.
//
// Early lock release: a commit lets its rows' locks go once its writes are in the log and
// readable, before the log sync that makes them durable; the transaction stays committing
// (readers at its timestamp wait for it) until the sync ends. A writer that meets one of its
// versions meanwhile (waited for its lock, or checks its key) goes on if the call leaves a
// write of its own on the node: that write's commit comes later in the same log, so it cannot
// be durable before the one it depended on (and the transaction cannot commit before it
// either: what it reads of its own write meanwhile is tentative, as before any commit). A call
// that would answer from such a version without leaving a write (an error, a key only locked,
// a re-check that writes nothing, a rollback to a savepoint that undoes every write here)
// first waits for the sync.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/reaper.h"
#include "common/small_containers.h"
#include "common/status.h"
#include "node/lock_table.h"
#include "node/replicator.h"
#include "storage/segment_store.h"

namespace wattdb::node {

// kLock: checked like kUpdate and locked, but nothing is written (SELECT ... FOR UPDATE).
enum class WriteCheck { kNone, kInsert, kUpdate, kLock };

struct TxnWrite {
  storage::WriteOp op;
  WriteCheck check = WriteCheck::kNone;
  // The key's newest committed version as the write's own read of the row met it: the
  // check uses it instead of reading the key again if the segment is unchanged since.
  std::optional<storage::SeenLatest> seen;
};

// A key a Prepare found changed since its snapshot, locked for the transaction so that it can
// be re-read and prepared again with no rival taking the row meanwhile (READ COMMITTED's
// re-check of the newest version, PostgreSQL's EvalPlanQual).
struct KeptConflict {
  SegmentId segment = 0;
  std::string key;
  Timestamp ts = 0;     // the key's newest committed version; 0: no conflict was kept
  bool locked = false;  // the Prepare locked the key (false: the transaction held it already)
  // Nonzero: the commit at `ts` still had its log sync due (early lock release); an answer
  // that leaves no write of the transaction on the node waits for that sync (AwaitDurable).
  uint64_t durable_ticket = 0;
};

struct PrepareOptions {
  bool durable = false;  // persist the writes before answering (a transaction over several nodes)
  bool wait = true;      // false: a held lock fails at once with 55P03 instead of waiting
  // Nonzero: after this call the transaction must have received exactly `expect` writes here
  // in all (the master's count); otherwise some were lost (this process restarted since) and
  // the transaction is aborted here (40001).
  uint64_t expect = 0;
  Timestamp min_commit_ts = 0;  // durable prepares: the transaction will commit above it, if at all
  // Non-null: a write whose key has a committed version above the snapshot locks that key for
  // the transaction (lock-only, kept until Unlock or the transaction's end) and reports it
  // here before the Conflict returns.
  KeptConflict* keep_conflict = nullptr;
  // Durable prepares with a replicator: receives the followers that did not make the
  // prepare's record durable (the master drops them from their sets before it decides).
  std::vector<ReplicaFailure>* lagging = nullptr;
};

class Participant {
 public:
  // A Prepare that finds a key locked by another transaction waits up to `lock_wait` for
  // it to end, looking for a cycle of waits when it starts and every `deadlock_check`.
  explicit Participant(storage::SegmentStore& store,
                       std::chrono::milliseconds lock_wait = std::chrono::milliseconds(1000),
                       std::chrono::milliseconds read_wait = std::chrono::milliseconds(6000),
                       std::chrono::milliseconds deadlock_check = std::chrono::milliseconds(20))
      : store_(store),
        lock_wait_(lock_wait),
        read_wait_(read_wait),
        deadlock_check_(deadlock_check) {}

  // Reloads durably prepared transactions and their locks (call once, before serving).
  Status Recover();
  // Commits, durable prepares and their aborts ship the records of the segments led here
  // through `r` (borrowed; set before serving, or never: nothing is replicated).
  void set_replicator(Replicator* r) { replicator_ = r; }
  // Validates and locks `writes`; a later Prepare of the same txn adds more writes. A key
  // locked by another transaction is waited for (40001 if the wait times out, 40P01 if the
  // holder waits for this one); then a key whose newest version is above `snapshot` is a
  // Conflict, as under snapshot isolation the first updater wins.
  Status Prepare(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite> writes,
                 const PrepareOptions& opts = {});
  // Releases `key` of `segment` if `txn` holds it lock-only (a KeptConflict it no longer
  // writes); a key it wrote stays locked.
  void Unlock(uint64_t txn, SegmentId segment, const std::string& key);
  // Returns once the commit of a KeptConflict's `durable_ticket` is durable.
  Status AwaitDurable(uint64_t ticket) {
    return ticket ? store_.WaitDurable(ticket) : Status::OK();
  }
  // Applies the prepared writes and records the outcome; `touched` (optional) receives the
  // segments written. Exactly once: a commit of a transaction already committed here is OK
  // (nothing is applied twice); a concurrent second commit waits for the first. NotFound if
  // the transaction is neither prepared nor committed here; with `expect` nonzero, a
  // transaction that received a different number of writes is aborted (40001), and so is
  // one prepared in memory whose timestamp a read here has passed (see above). If applying
  // fails the transaction stays prepared, locks held, so the commit can be retried.
  // `unsynced`: a durably prepared transaction's commit is not synced (its synced prepared
  // record keeps it in doubt across a power cut until a later sync covers the commit:
  // SegmentStore::SyncWal); ignored for a transaction prepared in memory.
  // With a replicator, the writes of each replicated segment go to its followers once applied
  // here; `lagging` (optional) receives the followers that did not make them durable (the
  // commit is applied here all the same: the master drops those from their sets before it
  // acknowledges).
  Status Commit(uint64_t txn, Timestamp commit_ts, SmallFlatSet<SegmentId>* touched = nullptr,
                uint64_t expect = 0, bool unsynced = false,
                std::vector<ReplicaFailure>* lagging = nullptr);
  // Discards the transaction's writes and releases its locks. A transaction that is
  // committing (or committed) is not aborted: returns false then.
  bool Abort(uint64_t txn);
  // The commit timestamp of `txn` if it committed here (and its record was not forgotten).
  Result<std::optional<Timestamp>> CommittedAt(uint64_t txn) const {
    return store_.CommittedAt(txn);
  }
  // Undoes the writes (and releases the locks they took) of the prepares that came after the
  // first `keep` writes of `txn` here: a failed statement's, so the transaction goes on without
  // them. `keep` 0 forgets the transaction. `keep` must end a prepare call (Internal, and
  // nothing changes, if not); not allowed once the transaction prepared durably or is
  // committing.
  Status RollbackTo(uint64_t txn, uint64_t keep);
  // Settles a transaction prepared in memory whose commit the master may have sent but saw
  // no answer to: waits for a commit in progress, then discards it if it is not committed
  // and refuses its later prepares, so that CommittedAt's answer is final. Durable
  // prepares are left to the master's decision.
  Result<std::optional<Timestamp>> FenceAndGetOutcome(uint64_t txn);
  // True if any prepared transaction holds writes on `segment` (a move must wait).
  bool HasPrepared(SegmentId segment) const;
  // Keeps writers out of `segment` while it is split or exported. False (nothing held) if a
  // prepared transaction holds writes there. Until EndExclusive, a Prepare that reaches the
  // segment waits (within its lock wait), then re-checks the segment's range. The master
  // keeps its own writers out with latches; this covers requests that reach the node after
  // the master gave up on them (a frozen node), which must not land in a half that moved.
  bool BeginExclusive(SegmentId segment);
  void EndExclusive(SegmentId segment);
  // The segment left this node (dropped): its lock table goes if no lock is held there.
  void SegmentGone(SegmentId segment);
  size_t prepared_count() const;
  size_t lock_table_count() const;  // segments with a lock table (tests)
  // The latest pending write of `txn` per key of `segment` within [lo, hi) ("" = unbounded),
  // in key order: what the transaction itself must see on top of its snapshot.
  std::map<std::string, storage::WriteOp> PendingWrites(uint64_t txn, SegmentId segment,
                                                        std::string_view lo,
                                                        std::string_view hi) const;
  // Prepared transactions (durable or not) not being committed: the master, which knows
  // which transactions are still running, tells the others' outcome (no decision = abort),
  // so a transaction whose master-side end was lost holds no locks for long.
  std::vector<uint64_t> InDoubt() const;
  // Row-lock waits now, as (waiting txn, holder): a cycle through several nodes is a deadlock
  // no node sees alone.
  std::vector<std::pair<uint64_t, uint64_t>> LockWaits() const;
  // Ends `txn`'s wait with 40P01 if it still waits for `holder` (a deadlock across nodes);
  // false if it does not.
  bool BreakWait(uint64_t txn, uint64_t holder);
  // Times a row-lock wait woke up (notified, timed out or spurious) since the start.
  uint64_t lock_wait_wakeups() const { return lock_wait_wakeups_.load(std::memory_order_relaxed); }
  // Before a read of [lo, hi) of `segment` at `read_ts` ("" = unbounded; `own_txn` is the
  // reader's transaction, 0 if none): records the read and waits, up to `read_wait`, for
  // the transactions whose writes there may be committed at or below `read_ts` and are not
  // applied yet. 40001 if they are still unresolved then. With `pending`, then also
  // PendingWrites(own_txn, segment, lo, hi) into it, under the same hold of the lock.
  Status AwaitReadable(SegmentId segment, std::string_view lo, std::string_view hi,
                       Timestamp read_ts, uint64_t own_txn,
                       std::map<std::string, storage::WriteOp>* pending = nullptr);
  // This node leads `segment` now, after following it: the prepare records its old leader
  // shipped for it (SegmentStore::ListReplicaPrepared) become durable prepares here, their
  // keys locked, in doubt until the master resolves them from its decision log. Idempotent.
  // Unavailable if one of their keys is locked by another transaction here, or if one of them
  // is still committing here after the read wait (the master tries again).
  Status AdoptReplicaPrepares(SegmentId segment) EXCLUDES(mu_);

 private:
  using LockKey = std::pair<SegmentId, std::string>;
  static constexpr size_t kLockOnly = LockTable::kLockOnly;
  storage::SegmentStore& store_;  // borrowed; outlives the participant
  Replicator* replicator_ = nullptr;
  std::chrono::milliseconds lock_wait_;
  std::chrono::milliseconds read_wait_;
  mutable Mutex mu_;
  CondVar released_;  // notified when locks are released (row-lock waits: lock_waiters_)
  bool HasPreparedLocked(SegmentId segment) const REQUIRES(mu_);
  // PendingWrites into `*out` (emptied first).
  void PendingWritesLocked(uint64_t txn, SegmentId segment, std::string_view lo,
                           std::string_view hi, std::map<std::string, storage::WriteOp>* out) const
      REQUIRES(mu_);
  // Drops `txn`'s writes and locks (and its durable record; its followers' copies are told
  // through unsent_).
  void ForgetLocked(uint64_t txn) REQUIRES(mu_);
  // Abort records numbered under mu_, sent by SendUnsent after it is let go. Best effort: a
  // follower that misses one keeps a copy of a prepare that the master, which never logged a
  // commit for it, aborts when the follower leads and reports it in doubt.
  Replicator::Outgoing unsent_ GUARDED_BY(mu_);
  std::atomic<bool> has_unsent_{false};  // unsent_ is not empty (checked without mu_)
  void SendUnsent() EXCLUDES(mu_);
  // True if `from` is `to` or waits (directly or not) for `to`.
  bool WaitsForLocked(uint64_t from, uint64_t to) const REQUIRES(mu_);
  // The lock on `key` of `segment`, or nullptr.
  const LockEntry* FindLock(SegmentId segment, const std::string& key) const REQUIRES(mu_);
  // Releases the locks `txn` holds on the keys of `ops` and on `keys`.
  void ReleaseLocks(uint64_t txn, const std::vector<storage::WriteOp>& ops,
                    const std::set<LockKey>& keys) REQUIRES(mu_);
  // Releases every lock of `txn`, whose writes are `ops`; the tables of
  // which it held every key are moved to `*dropped`.
  void ReleaseAllLocks(uint64_t txn, const std::vector<storage::WriteOp>& ops,
                       const std::set<LockKey>& keys, std::vector<LockTable>* dropped)
      REQUIRES(mu_);
  // Locks for `txn` the keys of its ops from `from` on (each entry
  // pointing at the key's latest op); the keys must be free or held by `txn`.
  void LockOps(uint64_t txn, const std::vector<storage::WriteOp>& ops, size_t from) REQUIRES(mu_);
  struct Prepared {
    bool durable = false;
    bool committing = false;  // Commit is applying the writes (mu_ released meanwhile)
    Timestamp commit_ts = 0;  // while committing
    uint64_t durable_dep =
        0;  // the latest not yet durable commit a call's answer came from (a ticket)
    Timestamp min_commit_ts = 0;        // durable: the commit timestamp will be above this
    uint64_t received = 0;              // writes received, lock-only ones included
    std::vector<storage::WriteOp> ops;  // each Prepare call's in (segment, key) order
    std::set<LockKey> locked;           // keys locked without a write (kLock)
    SmallFlatSet<SegmentId>
        segments;  // segments of ops (a superset after a failed durable prepare)
    struct Call {  // one successful Prepare call, for RollbackTo
      uint64_t received_before;
      size_t ops_before;
      std::vector<LockKey> locked;  // keys this call locked first without writing them
    };
    SmallVector<Call> calls;  // a statement's call each: a short transaction's fit inline
  };
  std::map<uint64_t, Prepared> prepared_ GUARDED_BY(mu_);
  // Commits whose locks are released and whose log sync is due: commit timestamp -> the
  // sync's ticket (SegmentStore::WaitDurable).
  std::unordered_map<Timestamp, uint64_t> syncing_ GUARDED_BY(mu_);
  // Whether such a commit writes `segment`.
  bool SyncingOnLocked(SegmentId segment) const REQUIRES(mu_);
  // RollbackTo under mu_; *dep: a ticket to wait for before answering (no write is left here
  // after a call that met a commit still syncing).
  Status RollbackToLocked(uint64_t txn, uint64_t keep, uint64_t* dep) EXCLUDES(mu_);
  // Prepare's checks and locking (under mu_). *dep: the latest ticket of a commit still
  // syncing whose version a check met (0: none); *wrote: on success, the transaction has a
  // write here; *record: the log ticket of a durable prepare's record, which the caller
  // waits for after mu_ is released (0: none).
  Status PrepareLocked(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite>& writes,
                       const PrepareOptions& opts, uint64_t* dep, bool* wrote, uint64_t* record,
                       Replicator::Outgoing* shipped) EXCLUDES(mu_);
  // PrepareLocked's steps (participant_checks.cc). `order`: the writes' indexes in (segment,
  // key) order.
  using WriteOrder = SmallVector<uint32_t>;
  using Deadline = std::chrono::steady_clock::time_point;
  // Keys ahead whose lock-table memory a prepare starts loading (LockTable::Prefetch).
  static constexpr size_t kPrefetchAhead = 8;
  // One segment's keys whose committed version decides a write (kept for the next segment's
  // use: their memory stays).
  struct PrepareChecks {
    SmallVector<std::string_view> keys;
    SmallVector<uint8_t> insert;                              // ... whether an insert checks it
    SmallVector<std::optional<storage::LatestVersion>> seen;  // ... its version as seen
    SmallVector<std::string_view> read_keys;  // the keys not seen: read from the segment
    // ... and for a key whose version came from the writer's read (with its row), the order
    // index of the call's first write of it: that write learns the row (WriteOp::prior).
    SmallVector<std::pair<const storage::SeenLatest*, size_t>> prior;
    std::vector<storage::LatestVersion> latest;  // of read_keys
    void Clear() {
      keys.clear();
      insert.clear();
      seen.clear();
      read_keys.clear();
      prior.clear();
    }
  };
  // Checks every write against the locks and the committed versions, segment by segment;
  // true: it waited (for a lock, or a split or move) and must check again.
  Result<bool> CheckWritesLocked(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite>& writes,
                                 const WriteOrder& order, const PrepareOptions& opts,
                                 Deadline deadline, uint64_t* dep, PrepareChecks* checks)
      REQUIRES(mu_);
  // The writes order[g, g_end) of segment `seg`: checks their keys' locks (waiting for
  // another holder: true) and lists in `checks` the keys whose committed version decides.
  // `own_writes`: what the transaction prepared here before, if anything.
  Result<bool> GatherChecksLocked(uint64_t txn, storage::Segment& seg,
                                  const std::vector<TxnWrite>& writes, const WriteOrder& order,
                                  size_t g, size_t g_end, const Prepared* own_writes,
                                  const PrepareOptions& opts, Deadline deadline,
                                  PrepareChecks* checks) REQUIRES(mu_);
  // Waits for `holder` to release `key` of `seg`: OK once it did; 40P01 if the wait closes a
  // cycle of waiting transactions, an abort once `deadline` passed.
  Status AwaitLockLocked(uint64_t txn, uint64_t holder, SegmentId seg, const std::string& key,
                         Deadline deadline) REQUIRES(mu_);
  // Reads the versions `checks` lists and fails on a duplicate insert (23505) or a version
  // newer than `snapshot` (a conflict; kept locked with opts.keep_conflict); gives writes the
  // prior rows their reads saw.
  Status VerifyChecksLocked(uint64_t txn, Timestamp snapshot, SegmentId seg,
                            std::vector<TxnWrite>& writes, const WriteOrder& order,
                            const PrepareOptions& opts, uint64_t* dep, PrepareChecks* checks)
      REQUIRES(mu_);
  // Keeps the checked writes (in key order), with opts.durable in a prepare record (*record:
  // its log ticket, not yet synced: no fsync runs under mu_; *shipped: its copies for the
  // followers, numbered, sent by the caller once it is durable), and locks their keys.
  Status KeepWritesLocked(uint64_t txn, std::vector<TxnWrite>& writes, const WriteOrder& order,
                          const PrepareOptions& opts, uint64_t dep, bool* wrote, uint64_t* record,
                          Replicator::Outgoing* shipped) REQUIRES(mu_);
  // Erases `it` from prepared_, with `dropped` (its lock tables): those of
  // a bulk load are freed by reaper_, not on the caller's time.
  void ErasePreparedLocked(std::map<uint64_t, Prepared>::iterator it,
                           std::vector<LockTable> dropped) REQUIRES(mu_);
  // Row locks by segment; each entry points at the holder's latest write of the key, so a
  // transaction's own writes are found with its locks. Emptied small tables stay for the
  // segment's next writers (LockTable::small); a segment's table goes when it is split, moved or
  // dropped.
  std::unordered_map<SegmentId, LockTable> locks_ GUARDED_BY(mu_);
  std::chrono::milliseconds deadlock_check_;
  std::atomic<uint64_t> lock_wait_wakeups_{0};
  // A Prepare of txn waits for a lock of the other.
  std::map<uint64_t, uint64_t> waits_for_ GUARDED_BY(mu_);
  // Row-lock waits by the transaction whose lock they wait for: its releases (and BreakWait)
  // wake them alone, not every waiter on the node. An entry lives while it has waiters.
  struct LockWaiters {
    std::shared_ptr<CondVar> cv;  // shared: it is notified after mu_ is let go
    int count = 0;
  };
  std::unordered_map<uint64_t, LockWaiters> lock_waiters_ GUARDED_BY(mu_);
  // Wakes the waits for locks `holder` held, and every other waiter.
  void NotifyReleasedLocked(uint64_t holder) REQUIRES(mu_);
  // The same in two steps, for a caller that lets mu_ go in between (a waiter woken while
  // mu_ is held would block on it at once): the first under mu_, the second after.
  std::shared_ptr<CondVar> ReleasedWaitersLocked(uint64_t holder) REQUIRES(mu_);
  void NotifyReleased(const std::shared_ptr<CondVar>& holder_waiters);
  // Waits of these txns end with 40P01 (BreakWait).
  std::set<uint64_t> broken_waits_ GUARDED_BY(mu_);
  std::set<SegmentId> exclusive_ GUARDED_BY(mu_);  // segments being split or exported
  Timestamp max_read_ts_ GUARDED_BY(mu_) = 0;      // highest snapshot read here (this process)
  // Transactions settled by FenceAndGetOutcome (bounded).
  std::set<uint64_t> fenced_ GUARDED_BY(mu_);
  std::deque<uint64_t> fenced_order_ GUARDED_BY(mu_);
  static constexpr size_t kReapAbove = 10000;  // writes of a transaction freed by reaper_
  Reaper reaper_;
};

}  // namespace wattdb::node
