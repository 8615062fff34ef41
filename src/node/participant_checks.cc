// Participant: Prepare's checks -- every write against the row locks (waiting for a holder,
// detecting deadlocks) and against the committed versions of its key (first updater wins,
// unique inserts), before any of the call's writes is kept (participant.h).
#include <algorithm>
#include <optional>
#include <span>

#include "common/failpoint.h"
#include "common/sqlstate.h"
#include "node/participant.h"

namespace wattdb::node {

namespace {

Status InUse(SegmentId segment, const char* why) {
  return Status(Status::Code::kUnavailable, fmt::format("segment {} {}; try again", segment, why),
                sqlstate::kObjectInUse);
}

Status Duplicate() {
  return Status::Sql(sqlstate::kUniqueViolation, "duplicate key value violates unique constraint");
}

}  // namespace

Result<bool> Participant::CheckWritesLocked(uint64_t txn, Timestamp snapshot,
                                            std::vector<TxnWrite>& writes, const WriteOrder& order,
                                            const PrepareOptions& opts, Deadline deadline,
                                            uint64_t* dep, PrepareChecks* checks) {
  auto existing = prepared_.find(txn);
  if (existing != prepared_.end() && !existing->second.ops.empty())
    MaybeFail("node.prepare.more_writes");
  if (existing != prepared_.end() && existing->second.committing) {
    return Status::InvalidArgument(
        fmt::format("txn {} is committing; it takes no more writes", txn));
  }
  if (opts.expect) {
    uint64_t have = (existing == prepared_.end() ? 0 : existing->second.received) + writes.size();
    if (have != opts.expect) {
      ForgetLocked(txn);
      return Status::Aborted(fmt::format(
          "transaction aborted: node lost {} of its writes (it restarted during the transaction)",
          opts.expect - have));
    }
  }
  const Prepared* own = existing == prepared_.end() ? nullptr : &existing->second;
  for (size_t g = 0, g_end; g < order.size(); g = g_end) {
    SegmentId seg_id = writes[order[g]].op.segment;
    for (g_end = g + 1; g_end < order.size() && writes[order[g_end]].op.segment == seg_id;) g_end++;
    if (exclusive_.count(seg_id)) {
      while (exclusive_.count(seg_id) && released_.WaitUntil(mu_, deadline)) {
      }
      if (exclusive_.count(seg_id)) return InUse(seg_id, "is being split or moved");
      return true;
    }
    ASSIGN_OR_RETURN(storage::SegmentRef seg, store_.Get(seg_id));
    ASSIGN_OR_RETURN(bool waited, GatherChecksLocked(txn, *seg, writes, order, g, g_end, own, opts,
                                                     deadline, checks));
    if (waited) return true;
    RETURN_NOT_OK(VerifyChecksLocked(txn, snapshot, seg_id, writes, order, opts, dep, checks));
  }
  return false;
}

Result<bool> Participant::GatherChecksLocked(uint64_t txn, storage::Segment& seg,
                                             const std::vector<TxnWrite>& writes,
                                             const WriteOrder& order, size_t g, size_t g_end,
                                             const Prepared* own_writes, const PrepareOptions& opts,
                                             Deadline deadline, PrepareChecks* checks) {
  auto key_of = [&](size_t i) -> const storage::WriteOp& { return writes[order[i]].op; };
  const SegmentId seg_id = key_of(g).segment;
  auto table = locks_.find(seg_id);
  checks->Clear();
  for (size_t r = g, r_end; r < g_end; r = r_end) {  // the writes of one key
    const std::string& key = key_of(r).key;
    for (r_end = r + 1; r_end < g_end && key_of(r_end).key == key;) r_end++;
    if (table != locks_.end() && r + kPrefetchAhead < g_end)
      table->second.Prefetch(key_of(r + kPrefetchAhead).key);
    if (!seg.Contains(key)) {
      return Status::Stale(fmt::format("key outside segment {} (it split or moved)", seg_id));
    }
    const LockEntry* held = table == locks_.end() ? nullptr : table->second.Find(key);
    if (held && held->txn != txn) {
      // Another transaction holds the key: wait for it to end. If it committed, the check
      // below fails (first updater wins); if it aborted, this write goes ahead.
      if (!opts.wait)
        return Status::Sql(sqlstate::kLockNotAvailable, "could not obtain lock on row");
      RETURN_NOT_OK(AwaitLockLocked(txn, held->txn, seg_id, key, deadline));
      return true;
    }
    // Whether the key is live after what this transaction wrote to it so far (in an
    // earlier statement, then in this call), if it wrote it.
    std::optional<bool> own;
    if (held && held->op != kLockOnly && own_writes) {
      own = own_writes->ops[held->op].kind == storage::VersionKind::kPut;
    }
    bool needs_committed = false, insert_checks = false;
    const storage::SeenLatest* seen = nullptr;
    const storage::SeenLatest* recorded = nullptr;  // seen, with the segment written since
    size_t first_write = SIZE_MAX;                  // while the transaction had not written the key
    for (size_t i = r; i < r_end; i++) {
      const TxnWrite& w = writes[order[i]];
      if (w.seen && w.seen->key == key && w.seen->Current(seg)) seen = &*w.seen;
      if (w.seen && w.seen->key == key && w.seen->recent_base && w.seen->segment == &seg)
        recorded = &*w.seen;
      if (!own && first_write == SIZE_MAX && w.check != WriteCheck::kLock) first_write = i;
      if (own) {
        if (w.check == WriteCheck::kInsert && *own) return Duplicate();
      } else if (w.check != WriteCheck::kNone) {
        needs_committed = true;
        insert_checks |= w.check == WriteCheck::kInsert;
      }
      if (w.check != WriteCheck::kLock) own = w.op.kind == storage::VersionKind::kPut;
    }
    if (!needs_committed) continue;
    std::optional<storage::LatestVersion> known;
    if (seen) {
      known = seen->latest;
    } else if (storage::LatestVersion cached{true};
               seg.newest().GetVersion(key, &cached.ts, &cached.deleted)) {
      known = cached;
    } else if (storage::LatestVersion rec;
               recorded && seg.RecentLatest(*recorded->recent_base, key, &rec, /*row=*/nullptr)) {
      known = rec.found ? rec : recorded->latest;  // a key not recorded since is as the read saw it
    }
    checks->keys.push_back(key);
    checks->insert.push_back(insert_checks);
    checks->seen.push_back(known);
    checks->prior.emplace_back(seen && (seen->has_row || seen->latest.deleted) ? seen : nullptr,
                               first_write);
    if (!known) checks->read_keys.push_back(key);
  }
  return false;
}

Status Participant::AwaitLockLocked(uint64_t txn, uint64_t holder, SegmentId seg_id,
                                    const std::string& key, Deadline deadline) {
  // A wait that outlasts lock_wait_ (a deadlock, or a stuck holder) aborts this writer. The
  // wait is checked for a cycle of waiting transactions when it begins and every
  // deadlock_check_ after (the last of the cycle to wait may not be the one to see it).
  waits_for_[txn] = holder;
  broken_waits_.erase(txn);
  bool freed = false;
  while (!freed && std::chrono::steady_clock::now() < deadline) {
    bool broken = broken_waits_.erase(txn) > 0;
    if (broken || WaitsForLocked(holder, txn)) {
      waits_for_.erase(txn);
      return Status::Aborted(fmt::format("deadlock detected: transaction {} waits for "
                                         "transaction {}, which waits for it{}",
                                         txn, holder, broken ? " (through other nodes)" : ""),
                             sqlstate::kDeadlockDetected);
    }
    LockWaiters& waiters = lock_waiters_[holder];  // a map node: it stays put while waited on
    if (!waiters.cv) waiters.cv = std::make_shared<CondVar>();
    waiters.count++;
    auto until = std::min(deadline, std::chrono::steady_clock::now() + deadlock_check_);
    for (bool first = true, timed_out = false;; first = false) {
      if (!first) lock_wait_wakeups_.fetch_add(1, std::memory_order_relaxed);
      const LockEntry* h = FindLock(seg_id, key);
      freed = !h || h->txn != holder || broken_waits_.count(txn);
      if (freed || timed_out) break;
      timed_out = !waiters.cv->WaitUntil(mu_, until);
    }
    if (--waiters.count == 0) lock_waiters_.erase(holder);
    if (freed && broken_waits_.count(txn)) freed = false;  // the loop reports it
  }
  waits_for_.erase(txn);
  broken_waits_.erase(txn);
  if (!freed) {
    return Status::Aborted(
        fmt::format("could not obtain lock on row: transaction {} held it for longer than {} ms",
                    holder, lock_wait_.count()));
  }
  return Status::OK();
}

Status Participant::VerifyChecksLocked(uint64_t txn, Timestamp snapshot, SegmentId seg_id,
                                       std::vector<TxnWrite>& writes, const WriteOrder& order,
                                       const PrepareOptions& opts, uint64_t* dep,
                                       PrepareChecks* checks) {
  // Keys whose newest version the writer's read saw, with no write to the segment since,
  // need no second look; nor do keys the segment's newest-version cache holds, or whose
  // read the segment's recording of commits still covers (a commit replaces a cached
  // version and is recorded before it releases its keys' locks, and this writer has waited
  // for every holder of this key).
  RETURN_NOT_OK(store_.LatestOf(
      seg_id, std::span(checks->read_keys.data(), checks->read_keys.size()), &checks->latest));
  for (size_t i = 0, next_read = 0; i < checks->keys.size(); i++) {
    const storage::LatestVersion& lv =
        checks->seen[i] ? *checks->seen[i] : checks->latest[next_read++];
    if (lv.found && !syncing_.empty()) {
      if (auto d = syncing_.find(lv.ts); d != syncing_.end()) *dep = std::max(*dep, d->second);
    }
    if (checks->insert[i] && lv.found && !lv.deleted) return Duplicate();
    if (lv.found && lv.ts > snapshot) {
      if (opts.keep_conflict && !opts.durable) {
        KeptConflict& kept = *opts.keep_conflict;
        kept.segment = seg_id;
        kept.key = std::string(checks->keys[i]);
        kept.ts = lv.ts;
        kept.locked = locks_[seg_id].Emplace(kept.key, LockEntry{txn, kLockOnly}).second;
        if (kept.locked) prepared_[txn].locked.emplace(seg_id, kept.key);
      }
      return Status::Conflict("could not serialize access due to concurrent update");
    }
    // Checked, and the key stays locked until the transaction ends: what its read saw is
    // the row a commit replaces.
    if (auto [seen, first] = checks->prior[i]; seen && first != SIZE_MAX) {
      storage::WriteOp& op = writes[order[first]].op;
      op.prior = seen->has_row ? storage::Prior::kRow : storage::Prior::kAbsent;
      if (seen->has_row) op.prior_row = seen->row;
    }
  }
  return Status::OK();
}

}  // namespace wattdb::node
