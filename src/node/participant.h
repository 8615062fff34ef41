// Participant: the node's side of a statement's atomic commit across nodes.
//
// Prepare validates a transaction's writes against committed data (duplicate keys -> 23505,
// write-write conflicts under snapshot isolation -> 40001), locks the written keys and keeps
// the writes in memory; Commit applies them at the master's commit timestamp in one RocksDB
// write batch; Abort forgets them. A key locked by one prepared transaction cannot be
// prepared by another (40001: the later writer aborts).
//
// A transaction spanning several nodes prepares durably: its writes are persisted (synced)
// before Prepare answers, and Recover() reloads them with their locks after a restart. Such a
// transaction stays "in doubt" until the master, which logs its decision before announcing
// it, sends Commit or Abort. A single-node transaction prepares in memory only: if the node
// restarts before the commit, the commit fails and nothing was applied anywhere.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/segment_store.h"

namespace wattdb::node {

// kLock: checked like kUpdate and locked, but nothing is written (SELECT ... FOR UPDATE).
enum class WriteCheck { kNone, kInsert, kUpdate, kLock };

struct TxnWrite {
  storage::WriteOp op;
  WriteCheck check = WriteCheck::kNone;
};

class Participant {
 public:
  // A Prepare that finds a key locked by another transaction waits up to `lock_wait` for
  // it to end.
  explicit Participant(storage::SegmentStore& store,
                       std::chrono::milliseconds lock_wait = std::chrono::milliseconds(1000))
      : store_(store), lock_wait_(lock_wait) {}

  // Reloads durably prepared transactions and their locks (call once, before serving).
  Status Recover();
  // Validates and locks `writes`; a later Prepare of the same txn adds more writes. A key
  // locked by another transaction is waited for; 40001 if that one commits (or the wait
  // times out), as under snapshot isolation the first updater wins.
  // `wait` false: a held lock fails at once with 55P03 instead of waiting.
  Status Prepare(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite> writes, bool durable = false,
                 bool wait = true);
  // Applies the prepared writes; `touched` (optional) receives the segments written.
  Status Commit(uint64_t txn, Timestamp commit_ts, std::set<SegmentId>* touched = nullptr);
  void Abort(uint64_t txn);
  // True if any prepared transaction holds writes on `segment` (a move must wait).
  bool HasPrepared(SegmentId segment) const;
  size_t prepared_count() const;
  // The latest pending write of `txn` per key of `segment` within [lo, hi) ("" = unbounded),
  // in key order: what the transaction itself must see on top of its snapshot.
  std::map<std::string, storage::WriteOp> PendingWrites(uint64_t txn, SegmentId segment, std::string_view lo,
                                                        std::string_view hi) const;
  // Durably prepared transactions waiting for the master's decision.
  std::vector<uint64_t> InDoubt() const;

 private:
  using LockKey = std::pair<SegmentId, std::string>;
  storage::SegmentStore& store_;  // borrowed; outlives the participant
  std::chrono::milliseconds lock_wait_;
  mutable std::mutex mu_;         // guards prepared_ and locks_
  std::condition_variable released_;  // notified when locks are released
  struct Prepared {
    bool durable = false;
    std::vector<storage::WriteOp> ops;
    std::map<LockKey, size_t> last;  // index in ops of the latest write of each key
    std::set<LockKey> locked;        // keys locked without a write (kLock)
  };
  std::map<uint64_t, Prepared> prepared_;
  std::map<LockKey, uint64_t> locks_;
};

}  // namespace wattdb::node
