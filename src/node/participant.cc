#include "node/participant.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <span>

#include "common/bytes.h"
#include "common/failpoint.h"
#include "common/small_containers.h"
#include "common/sqlstate.h"

namespace wattdb::node {

namespace {

// A durable prepare record: the writes, then (added later; absent in older records) the
// number of writes received and the keys locked without a write, then the timestamp the
// commit will exceed.
struct PrepareRecord {
  std::vector<storage::WriteOp> ops;
  uint64_t received = 0;
  std::vector<std::pair<SegmentId, std::string>> locked;
  Timestamp min_commit_ts = 0;
};

std::string EncodeRecord(const std::vector<storage::WriteOp>& ops, uint64_t received,
                         const std::set<std::pair<SegmentId, std::string>>& locked,
                         Timestamp min_commit_ts) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(ops.size());
  for (const auto& op : ops) {
    w.VarU64(op.segment);
    w.Str(op.key);
    w.U8(static_cast<uint8_t>(op.kind));
    w.Str(op.row);
  }
  w.VarU64(received);
  w.VarU64(locked.size());
  for (const auto& [seg, key] : locked) {
    w.VarU64(seg);
    w.Str(key);
  }
  w.VarU64(min_commit_ts);
  return out;
}

Result<PrepareRecord> DecodeRecord(std::string_view in) {
  ByteReader r(in);
  uint64_t n;
  auto bad = [] { return Status::Corruption("prepare record does not decode"); };
  if (!r.VarU64(&n) || n > in.size()) return bad();
  PrepareRecord rec;
  rec.ops.resize(n);
  for (auto& op : rec.ops) {
    uint8_t kind;
    if (!r.VarU64(&op.segment) || !r.Str(&op.key) || !r.U8(&kind) || !r.Str(&op.row)) return bad();
    if (kind != 1 && kind != 2) return bad();
    op.kind = static_cast<storage::VersionKind>(kind);
  }
  rec.received = n;
  if (r.empty()) return rec;  // older format
  uint64_t nlocked;
  if (!r.VarU64(&rec.received) || !r.VarU64(&nlocked) || nlocked > in.size()) return bad();
  rec.locked.resize(nlocked);
  for (auto& [seg, key] : rec.locked) {
    if (!r.VarU64(&seg) || !r.Str(&key)) return bad();
  }
  if (!r.empty() && !r.VarU64(&rec.min_commit_ts)) return bad();
  return rec;
}

}  // namespace

Status Participant::Recover() {
  ASSIGN_OR_RETURN(auto records, store_.ListPrepared());
  MutexLock l(mu_);
  for (auto& [txn, blob] : records) {
    ASSIGN_OR_RETURN(PrepareRecord rec, DecodeRecord(blob));
    Prepared p;
    p.durable = true;
    p.received = rec.received;
    p.min_commit_ts = rec.min_commit_ts;
    LockOps(txn, rec.ops, 0);
    for (auto& lk : rec.locked) {
      locks_[lk.first].Emplace(lk.second, LockEntry{txn, kLockOnly});
      p.locked.insert(lk);
    }
    p.ops = std::move(rec.ops);
    for (const auto& op : p.ops) p.segments.insert(op.segment);
    prepared_[txn] = std::move(p);
  }
  return Status::OK();
}

std::map<std::string, storage::WriteOp> Participant::PendingWrites(uint64_t txn, SegmentId segment,
                                                                   std::string_view lo,
                                                                   std::string_view hi) const {
  MutexLock l(mu_);
  std::map<std::string, storage::WriteOp> out;
  PendingWritesLocked(txn, segment, lo, hi, &out);
  return out;
}

void Participant::PendingWritesLocked(uint64_t txn, SegmentId segment, std::string_view lo,
                                      std::string_view hi,
                                      std::map<std::string, storage::WriteOp>* out) const {
  out->clear();
  auto it = prepared_.find(txn);
  if (it == prepared_.end()) return;
  for (const auto& op : it->second.ops) {  // later ops of a key replace earlier ones
    if (op.segment != segment || op.key < lo || (!hi.empty() && op.key >= hi)) continue;
    (*out)[op.key] = op;
  }
}

std::vector<uint64_t> Participant::InDoubt() const {
  MutexLock l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [txn, p] : prepared_) {
    if (!p.committing) out.push_back(txn);
  }
  return out;
}

Status Participant::Prepare(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite> writes,
                            const PrepareOptions& opts) {
  SendUnsent();  // aborts numbered by other calls
  uint64_t dep = 0, record = 0;
  bool wrote = false;
  Replicator::Outgoing shipped;
  Status s = PrepareLocked(txn, snapshot, writes, opts, &dep, &wrote, &record, &shipped);
  if (s.ok() && record) {
    // The prepare record's sync, shared with the commits and prepares around it; a later
    // ticket than `dep`, so it covers that too. (A failed sync ends the process.) The copies
    // go to the followers meanwhile: one a crash leaves on a follower alone was never
    // answered, so the master decided no commit, and it is aborted where it is adopted.
    Replicator::InFlight in_flight;
    if (!shipped.empty()) in_flight = replicator_->Begin(shipped);
    RETURN_NOT_OK(store_.WaitDurable(record));
    if (!shipped.empty()) {
      std::vector<ReplicaFailure> failed = Replicator::Finish(in_flight);
      if (opts.lagging) opts.lagging->insert(opts.lagging->end(), failed.begin(), failed.end());
    }
  } else if (opts.keep_conflict && opts.keep_conflict->ts && s.IsConflict()) {
    opts.keep_conflict->durable_ticket = dep;  // the caller reads the key again, or waits
  } else if (dep && !(s.ok() && wrote)) {
    RETURN_NOT_OK(store_.WaitDurable(dep));  // an answer from a version not yet durable
  }
  return s;
}

Status Participant::PrepareLocked(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite>& writes,
                                  const PrepareOptions& opts, uint64_t* dep, bool* wrote,
                                  uint64_t* record, Replicator::Outgoing* shipped) {
  // The writes are checked and kept in (segment, key) order, a key's writes in the order
  // given: one segment and lock-table lookup per segment, one storage iterator per segment
  // for the committed versions, and a key's writes side by side.
  // Calls carry a write or a few (a statement's key-routed update): their working lists live
  // inline, without allocations.
  WriteOrder order(writes.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  auto before_in_order = [&](uint32_t a, uint32_t b) {
    const storage::WriteOp& x = writes[a].op;
    const storage::WriteOp& y = writes[b].op;
    return x.segment != y.segment ? x.segment < y.segment : x.key < y.key;
  };
  if (!std::is_sorted(order.begin(), order.end(), before_in_order)) {
    std::stable_sort(order.begin(), order.end(), before_in_order);
  }
  MutexLock l(mu_);
  auto deadline = std::chrono::steady_clock::now() + lock_wait_;
  if (fenced_.count(txn)) {
    return Status::Aborted(fmt::format("transaction {} aborted: its commit was given up on", txn));
  }
  PrepareChecks checks;
  while (true) {  // again after each wait: what was checked before it may have changed
    ASSIGN_OR_RETURN(bool waited,
                     CheckWritesLocked(txn, snapshot, writes, order, opts, deadline, dep, &checks));
    if (!waited) break;
  }
  return KeepWritesLocked(txn, writes, order, opts, *dep, wrote, record, shipped);
}

Status Participant::KeepWritesLocked(uint64_t txn, std::vector<TxnWrite>& writes,
                                     const WriteOrder& order, const PrepareOptions& opts,
                                     uint64_t dep, bool* wrote, uint64_t* record,
                                     Replicator::Outgoing* shipped) {
  const uint64_t expect = opts.expect;
  auto key_of = [&](size_t i) -> const storage::WriteOp& { return writes[order[i]].op; };
  // Checked: keep the writes (in key order) and lock their keys.
  Prepared& p = prepared_[txn];
  if (p.ops.capacity() == 0)
    p.ops.reserve(std::max<size_t>(writes.size(), 8));  // one allocation for a short one
  size_t before = p.ops.size();
  Prepared::Call call{p.received, before, {}};
  p.received += writes.size();
  std::vector<LockKey> locks_only;  // keys this call locks without writing them
  for (size_t r = 0, r_end; r < order.size(); r = r_end) {
    const storage::WriteOp& first = key_of(r);
    bool writes_key = false;
    for (r_end = r; r_end < order.size() && key_of(r_end).segment == first.segment &&
                    key_of(r_end).key == first.key;
         r_end++) {
      writes_key |= writes[order[r_end]].check != WriteCheck::kLock;
    }
    if (!writes_key) locks_only.emplace_back(first.segment, first.key);
    for (size_t i = r; i < r_end; i++) {
      TxnWrite& w = writes[order[i]];
      if (w.check == WriteCheck::kLock) continue;
      if (p.ops.empty() || p.ops.back().segment != w.op.segment) p.segments.insert(w.op.segment);
      p.ops.push_back(std::move(w.op));
    }
  }
  if (opts.durable) {
    bool was_durable = p.durable;
    Timestamp old_min = p.min_commit_ts;
    p.durable = true;
    p.min_commit_ts = std::max(p.min_commit_ts, opts.min_commit_ts);
    std::set<LockKey> locked = p.locked;
    locked.insert(locks_only.begin(), locks_only.end());
    Result<uint64_t> ticket =
        store_.WritePrepared(txn, EncodeRecord(p.ops, p.received, locked, p.min_commit_ts));
    if (ticket.ok()) {
      *record = *ticket;
      // The whole of the transaction's writes on each replicated segment: a follower's copy
      // is replaced, not added to.
      if (replicator_)
        *shipped = replicator_->Number(p.min_commit_ts, p.ops, ReplicaRecord::Kind::kPrepare, txn);
    }
    if (Status s = ticket.status(); !s.ok()) {
      p.durable = was_durable;
      p.min_commit_ts = old_min;
      p.ops.resize(before);
      p.received -= writes.size();
      if (p.ops.empty() && p.locked.empty() && !p.received) prepared_.erase(txn);
      return s;
    }
  }
  LockOps(txn, p.ops, before);
  for (auto& lk : locks_only) {
    if (locks_[lk.first].Emplace(lk.second, LockEntry{txn, kLockOnly}).second)
      call.locked.push_back(lk);
    p.locked.insert(std::move(lk));
  }
  if (!writes.empty()) p.calls.push_back(std::move(call));
  p.durable_dep = std::max(p.durable_dep, dep);
  *wrote = !p.ops.empty();
  if (p.ops.empty() && p.locked.empty() && !p.durable && !expect) prepared_.erase(txn);
  return Status::OK();
}

void Participant::Unlock(uint64_t txn, SegmentId segment, const std::string& key) {
  MutexLock l(mu_);
  auto it = prepared_.find(txn);
  if (it == prepared_.end() || it->second.committing) return;
  const LockEntry* held = FindLock(segment, key);
  if (!held || held->txn != txn || held->op != kLockOnly) return;
  Prepared& p = it->second;
  p.locked.erase(LockKey(segment, key));
  for (auto& call : p.calls) std::erase(call.locked, LockKey(segment, key));
  ReleaseLocks(txn, {}, {LockKey(segment, key)});
  if (p.ops.empty() && p.locked.empty() && !p.durable && !p.received) prepared_.erase(it);
  NotifyReleasedLocked(txn);
}

void Participant::NotifyReleasedLocked(uint64_t holder) {
  NotifyReleased(ReleasedWaitersLocked(holder));
}

std::shared_ptr<CondVar> Participant::ReleasedWaitersLocked(uint64_t holder) {
  auto w = lock_waiters_.find(holder);
  return w == lock_waiters_.end() ? nullptr : w->second.cv;
}

void Participant::NotifyReleased(const std::shared_ptr<CondVar>& holder_waiters) {
  if (holder_waiters) holder_waiters->SignalAll();
  released_.SignalAll();
}

const LockEntry* Participant::FindLock(SegmentId segment, const std::string& key) const {
  auto t = locks_.find(segment);
  return t == locks_.end() ? nullptr : t->second.Find(key);
}

void Participant::LockOps(uint64_t txn, const std::vector<storage::WriteOp>& ops, size_t from) {
  LockTable* table = nullptr;
  for (size_t i = from; i < ops.size(); i++) {
    if (i == from || ops[i].segment != ops[i - 1].segment) table = &locks_[ops[i].segment];
    if (i + kPrefetchAhead < ops.size() && ops[i + kPrefetchAhead].segment == ops[i].segment) {
      table->Prefetch(ops[i + kPrefetchAhead].key);
    }
    auto [e, fresh] = table->Emplace(ops[i].key, LockEntry{txn, i});
    if (!fresh) e->op = i;  // held by txn already (checked)
  }
}

void Participant::ReleaseLocks(uint64_t txn, const std::vector<storage::WriteOp>& ops,
                               const std::set<LockKey>& keys) {
  std::optional<SegmentId> current;  // the segment of `table` (nullptr: it has no locks)
  LockTable* table = nullptr;
  auto release = [&](SegmentId segment, const std::string& key) {
    mu_.AssertHeld();  // the caller's
    if (current != segment) {
      auto t = locks_.find(segment);
      table = t == locks_.end() ? nullptr : &t->second;
      current = segment;
    }
    if (!table) return;
    table->Release(key, txn);
    if (table->empty() && !table->small()) {
      locks_.erase(segment);
      table = nullptr;
    }
  };
  for (const auto& op : ops) release(op.segment, op.key);
  for (const auto& [segment, key] : keys) release(segment, key);
}

void Participant::ReleaseAllLocks(uint64_t txn, const std::vector<storage::WriteOp>& ops,
                                  const std::set<LockKey>& keys, std::vector<LockTable>* dropped) {
  // Large tables whose every key txn holds (a bulk load's) go whole; the rest key by key.
  for (size_t i = 0; i < ops.size(); i++) {
    if (i > 0 && ops[i].segment == ops[i - 1].segment) continue;
    auto t = locks_.find(ops[i].segment);
    if (t != locks_.end() && !t->second.small() && t->second.HeldBy(txn) == t->second.size()) {
      dropped->push_back(std::move(t->second));
      locks_.erase(t);
    }
  }
  ReleaseLocks(txn, ops, keys);  // finds no table of the dropped segments
}

void Participant::ErasePreparedLocked(std::map<uint64_t, Prepared>::iterator it,
                                      std::vector<LockTable> dropped) {
  if (it->second.ops.size() >= kReapAbove) {
    reaper_.Drop(std::move(it->second.ops));
    reaper_.Drop(std::move(dropped));
  }
  prepared_.erase(it);
}

Status Participant::Commit(uint64_t txn, Timestamp commit_ts, SmallFlatSet<SegmentId>* touched,
                           uint64_t expect, bool unsynced, std::vector<ReplicaFailure>* lagging) {
  // The writes stay in prepared_ while they are applied (a failed apply leaves the txn
  // prepared); `committing` keeps every other call away from them, and std::map entries do
  // not move, so they are read in place without mu_.
  SendUnsent();
  const std::vector<storage::WriteOp>* ops = nullptr;
  bool durable;
  {
    MutexLock l(mu_);
    auto it = prepared_.find(txn);
    // A second commit of the same transaction (a retry, or in-doubt resolution racing the
    // original) waits for the first to finish, then finds its outcome record.
    while (it != prepared_.end() && it->second.committing) {
      released_.Wait(mu_);
      it = prepared_.find(txn);
    }
    if (it == prepared_.end()) {
      l.Unlock();
      ASSIGN_OR_RETURN(auto done, store_.CommittedAt(txn));
      if (done) {
        if (*done != commit_ts) {
          return Status::Internal(
              fmt::format("txn {} committed at {}, asked again at {}", txn, *done, commit_ts));
        }
        return Status::OK();
      }
      return Status::NotFound(fmt::format("txn {} is not prepared here", txn));
    }
    if (expect && it->second.received != expect) {
      uint64_t lost = expect - std::min(expect, it->second.received);
      ForgetLocked(txn);
      return Status::Aborted(fmt::format(
          "transaction aborted: node lost {} of its writes (it restarted during the transaction)",
          lost));
    }
    if (!it->second.durable && commit_ts <= max_read_ts_) {
      // Its commit point is here, and a read at a snapshot >= commit_ts has missed it: the
      // master gave up waiting for this commit (the node was frozen or slow) and went on.
      ForgetLocked(txn);
      return Status::Aborted(fmt::format(
          "transaction aborted: its commit reached node late, after a read at a later snapshot"));
    }
    it->second.committing = true;
    it->second.commit_ts = commit_ts;
    ops = &it->second.ops;
    durable = it->second.durable;
  }
  if (durable) MaybeFail("node.before_distributed_commit");
  bool sync = !(durable && unsynced);
  // Early lock release (see the file comment): once the writes are in the log and readable,
  // the rows' locks go while the log sync is still due; until the sync ends the transaction
  // stays committing, and its timestamp is in syncing_.
  std::vector<LockTable> dropped;
  bool released = false;
  // Numbered while the rows are still locked: a later commit of one of them ships after.
  Replicator::Outgoing shipped;
  if (replicator_ && !ops->empty())
    shipped = replicator_->Number(commit_ts, *ops, ReplicaRecord::Kind::kCommit, durable ? txn : 0);
  // Sent once written here, so that the followers' work overlaps the local log sync.
  Replicator::InFlight in_flight;
  bool begun = false;
  auto release_early = [&](uint64_t ticket) {
    if (!shipped.empty()) {
      in_flight = replicator_->Begin(shipped);
      begun = true;
    }
    std::shared_ptr<CondVar> lock_waiters;
    {
      MutexLock l(mu_);
      auto it = prepared_.find(txn);
      ReleaseAllLocks(txn, it->second.ops, it->second.locked, &dropped);
      syncing_[commit_ts] = ticket;
      lock_waiters = ReleasedWaitersLocked(txn);
    }
    released = true;
    if (lock_waiters) lock_waiters->SignalAll();
    MaybeFail("node.commit.locks_released");
  };
  Status s = ops->empty() && !durable
                 ? Status::OK()
                 : store_.Apply(commit_ts, *ops, durable ? txn : 0, txn, sync, release_early);
  if (s.ok()) MaybeFail("node.after_commit_applied");
  if (s.ok() && !shipped.empty()) {
    if (!begun) in_flight = replicator_->Begin(shipped);  // ingested, or not synced
    std::vector<ReplicaFailure> failed = Replicator::Finish(in_flight);
    if (lagging) lagging->insert(lagging->end(), failed.begin(), failed.end());
  } else if (begun) {
    (void)Replicator::Finish(in_flight);  // (a failed log sync ends the process)
  } else if (!shipped.empty()) {
    // Nothing applied: the numbers go out empty, so that no follower waits for them (and
    // the followers keep their copies of the prepare).
    replicator_->Blank(shipped);
    for (auto& record : shipped.records) {
      record.first.ops.clear();
      record.first.txn = 0;
    }
    (void)replicator_->Send(shipped);
  }
  if (touched && s.ok()) {
    for (size_t i = 0; i < ops->size(); i++) {
      if (i == 0 || (*ops)[i].segment != (*ops)[i - 1].segment) touched->insert((*ops)[i].segment);
    }
  }
  std::shared_ptr<CondVar> waiters;
  {
    MutexLock l(mu_);
    auto it = prepared_.find(txn);
    if (released) syncing_.erase(commit_ts);
    if (s.ok()) {
      if (!released) ReleaseAllLocks(txn, it->second.ops, it->second.locked, &dropped);
      ErasePreparedLocked(it, std::move(dropped));
    } else {
      // (Not after an early release: a failed log sync ends the process, SegmentStore::SyncWal.)
      it->second.committing = false;
    }
    waiters = ReleasedWaitersLocked(txn);
  }
  NotifyReleased(waiters);
  return s;
}

void Participant::ForgetLocked(uint64_t txn) {
  auto it = prepared_.find(txn);
  if (it == prepared_.end()) return;
  if (it->second.durable) {
    (void)store_.ErasePrepared(txn);
    if (replicator_) {
      Replicator::Outgoing out =
          replicator_->Number(0, it->second.ops, ReplicaRecord::Kind::kAbort, txn);
      std::move(out.records.begin(), out.records.end(), std::back_inserter(unsent_.records));
      if (!unsent_.empty()) has_unsent_ = true;
    }
  }
  std::vector<LockTable> dropped;
  ReleaseAllLocks(txn, it->second.ops, it->second.locked, &dropped);
  ErasePreparedLocked(it, std::move(dropped));
  NotifyReleasedLocked(txn);
}

bool Participant::Abort(uint64_t txn) {
  {
    MutexLock l(mu_);
    auto it = prepared_.find(txn);
    if (it != prepared_.end() && it->second.committing) return false;
    ForgetLocked(txn);
  }
  SendUnsent();
  return true;
}

Status Participant::AdoptReplicaPrepares(SegmentId segment) {
  ASSIGN_OR_RETURN(auto records, store_.ListReplicaPrepared(segment));
  for (const auto& [txn, blob] : records) {
    Timestamp min_commit_ts = 0;
    std::vector<storage::WriteOp> ops;
    RETURN_NOT_OK(DecodeReplicaPrepare(blob, segment, &min_commit_ts, &ops));
    uint64_t ticket = 0;
    {
      MutexLock l(mu_);
      auto it = prepared_.find(txn);
      auto until = CondVar::DeadlineIn(read_wait_);
      while (it != prepared_.end() && it->second.committing) {
        if (!released_.WaitUntil(mu_, until)) {
          return Status::Unavailable(
              fmt::format("txn {} is still committing here; segment {} waits", txn, segment));
        }
        it = prepared_.find(txn);
      }
      if (it == prepared_.end() || !it->second.segments.count(segment)) {
        for (const auto& op : ops) {
          const LockEntry* held = FindLock(segment, op.key);
          if (held && held->txn != txn) {
            return Status::Unavailable(
                fmt::format("segment {}: txn {} holds a key that prepared txn {} wrote", segment,
                            held->txn, txn));
          }
        }
        Prepared& p = prepared_[txn];
        size_t before = p.ops.size();
        p.ops.insert(p.ops.end(), std::make_move_iterator(ops.begin()),
                     std::make_move_iterator(ops.end()));
        p.segments.insert(segment);
        p.durable = true;
        p.min_commit_ts = std::max(p.min_commit_ts, min_commit_ts);
        ASSIGN_OR_RETURN(ticket, store_.WritePrepared(txn, EncodeRecord(p.ops, p.received, p.locked,
                                                                        p.min_commit_ts)));
        LockOps(txn, p.ops, before);
      }
    }
    if (ticket) RETURN_NOT_OK(store_.WaitDurable(ticket));
    RETURN_NOT_OK(store_.EraseReplicaPrepared(segment, txn));
  }
  return Status::OK();
}

void Participant::SendUnsent() {
  if (!has_unsent_) return;
  Replicator::Outgoing out;
  {
    MutexLock l(mu_);
    out.records.swap(unsent_.records);
    has_unsent_ = false;
  }
  (void)replicator_->Send(out);
}

Status Participant::RollbackTo(uint64_t txn, uint64_t keep) {
  uint64_t dep = 0;
  Status s = RollbackToLocked(txn, keep, &dep);
  if (dep) RETURN_NOT_OK(store_.WaitDurable(dep));  // no write of its own is left to wait for it
  return s;
}

Status Participant::RollbackToLocked(uint64_t txn, uint64_t keep, uint64_t* dep) {
  MutexLock l(mu_);
  auto it = prepared_.find(txn);
  if (keep == 0) {
    if (it != prepared_.end() && it->second.committing) {
      return Status::InvalidArgument(fmt::format("txn {} is committing", txn));
    }
    if (it != prepared_.end()) *dep = it->second.durable_dep;
    ForgetLocked(txn);
    return Status::OK();
  }
  if (it == prepared_.end() || it->second.received < keep) {
    return Status::Aborted(
        fmt::format("transaction {} lost writes here (the node restarted)", txn));
  }
  Prepared& p = it->second;
  if (p.committing || p.durable) {
    return Status::InvalidArgument(fmt::format("txn {} is committing; its writes stay", txn));
  }
  // The undone calls' keys are unlocked, then the kept writes and lock-only keys locked
  // again (mu_ is held throughout: no other transaction sees the keys free).
  size_t first_undone = p.calls.size();
  while (first_undone > 0 && p.calls[first_undone - 1].received_before >= keep) first_undone--;
  uint64_t received_kept =
      first_undone < p.calls.size() ? p.calls[first_undone].received_before : p.received;
  if (received_kept != keep) {
    return Status::Internal(fmt::format("txn {}: no prepare ended after write {}", txn, keep));
  }
  std::set<LockKey> unlocked;
  size_t ops_kept = p.ops.size();
  while (p.calls.size() > first_undone) {
    Prepared::Call& c = p.calls.back();
    ops_kept = c.ops_before;
    for (auto& lk : c.locked) {
      p.locked.erase(lk);
      unlocked.insert(std::move(lk));
    }
    p.calls.pop_back();
  }
  p.received = keep;
  std::vector<storage::WriteOp> undone(std::make_move_iterator(p.ops.begin() + ops_kept),
                                       std::make_move_iterator(p.ops.end()));
  p.ops.resize(ops_kept);
  ReleaseLocks(txn, undone, unlocked);
  ReleaseLocks(txn, p.ops, {});
  LockOps(txn, p.ops, 0);
  for (const auto& lk : p.locked) locks_[lk.first].Emplace(lk.second, LockEntry{txn, kLockOnly});
  p.segments.clear();
  for (const auto& op : p.ops) p.segments.insert(op.segment);
  if (p.ops.empty()) *dep = p.durable_dep;
  NotifyReleasedLocked(txn);
  return Status::OK();
}

std::vector<std::pair<uint64_t, uint64_t>> Participant::LockWaits() const {
  MutexLock l(mu_);
  return {waits_for_.begin(), waits_for_.end()};
}

bool Participant::BreakWait(uint64_t txn, uint64_t holder) {
  MutexLock l(mu_);
  auto w = waits_for_.find(txn);
  if (w == waits_for_.end() || w->second != holder) return false;
  broken_waits_.insert(txn);
  NotifyReleasedLocked(holder);
  return true;
}

bool Participant::WaitsForLocked(uint64_t from, uint64_t to) const {
  for (size_t hops = 0; hops <= waits_for_.size(); hops++) {  // the chain has no other cycle
    if (from == to) return true;
    auto next = waits_for_.find(from);
    if (next == waits_for_.end()) return false;
    from = next->second;
  }
  return false;
}

Result<std::optional<Timestamp>> Participant::FenceAndGetOutcome(uint64_t txn) {
  {
    MutexLock l(mu_);
    auto settled = [&] {
      mu_.AssertHeld();
      auto it = prepared_.find(txn);
      return it == prepared_.end() || !it->second.committing;
    };
    auto until = CondVar::DeadlineIn(read_wait_);
    while (!settled() && released_.WaitUntil(mu_, until)) {
    }
    if (!settled()) return Status::Unavailable(fmt::format("txn {} is still being applied", txn));
    auto it = prepared_.find(txn);
    if (it == prepared_.end() || !it->second.durable) {
      ForgetLocked(txn);
      if (fenced_.insert(txn).second) fenced_order_.push_back(txn);
      while (fenced_order_.size() > 100000) {
        fenced_.erase(fenced_order_.front());
        fenced_order_.pop_front();
      }
    }
  }
  return store_.CommittedAt(txn);
}

Status Participant::AwaitReadable(SegmentId segment, std::string_view lo, std::string_view hi,
                                  Timestamp read_ts, uint64_t own_txn,
                                  std::map<std::string, storage::WriteOp>* pending) {
  MutexLock l(mu_);
  max_read_ts_ = std::max(max_read_ts_, read_ts);
  // Does `txn` have a write in the range that may be committed at or below read_ts?
  auto blocks = [&](uint64_t txn, const Prepared& p) {
    if (txn == own_txn) return false;
    bool may_be_below =
        p.committing ? p.commit_ts <= read_ts : p.durable && p.min_commit_ts < read_ts;
    if (!may_be_below || !p.segments.count(segment)) return false;
    if (lo.empty() && hi.empty()) return true;
    for (const auto& op : p.ops) {
      if (op.segment == segment && op.key >= lo && (hi.empty() || op.key < hi)) return true;
    }
    return false;
  };
  auto blocker = [&]() -> std::optional<uint64_t> {
    mu_.AssertHeld();
    for (const auto& [txn, p] : prepared_) {
      if (blocks(txn, p)) return txn;
    }
    return std::nullopt;
  };
  auto deadline = std::chrono::steady_clock::now() + read_wait_;
  for (auto txn = blocker(); txn; txn = blocker()) {
    if (!released_.WaitUntil(mu_, deadline) && blocker()) {
      return Status::Aborted(
          fmt::format("could not serialize access: rows of segment {} belong to transaction {}, "
                      "whose outcome is not known "
                      "here yet",
                      segment, *txn));
    }
  }
  if (pending) PendingWritesLocked(own_txn, segment, lo, hi, pending);
  return Status::OK();
}

bool Participant::HasPrepared(SegmentId segment) const {
  MutexLock l(mu_);
  return HasPreparedLocked(segment);
}

bool Participant::HasPreparedLocked(SegmentId segment) const {
  auto t = locks_.find(segment);
  return t != locks_.end() && !t->second.empty();
}

bool Participant::SyncingOnLocked(SegmentId segment) const {
  if (syncing_.empty()) return false;
  for (const auto& [txn, p] : prepared_) {
    if (p.committing && p.segments.count(segment) && syncing_.count(p.commit_ts)) return true;
  }
  return false;
}

bool Participant::BeginExclusive(SegmentId segment) {
  MutexLock l(mu_);
  if (HasPreparedLocked(segment) || SyncingOnLocked(segment) || exclusive_.count(segment))
    return false;
  exclusive_.insert(segment);
  locks_.erase(segment);  // an emptied table kept for its writers; the segment may leave
  return true;
}

void Participant::SegmentGone(SegmentId segment) {
  MutexLock l(mu_);
  if (!HasPreparedLocked(segment)) locks_.erase(segment);
}

void Participant::EndExclusive(SegmentId segment) {
  {
    MutexLock l(mu_);
    exclusive_.erase(segment);
  }
  released_.SignalAll();
}

size_t Participant::lock_table_count() const {
  MutexLock l(mu_);
  return locks_.size();
}

size_t Participant::prepared_count() const {
  MutexLock l(mu_);
  return prepared_.size();
}

}  // namespace wattdb::node
