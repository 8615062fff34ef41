#include "node/participant.h"

namespace wattdb::node {

Status Participant::Prepare(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite> writes) {
  std::lock_guard<std::mutex> l(mu_);
  std::set<LockKey> mine;
  for (const auto& w : writes) {
    ASSIGN_OR_RETURN(storage::SegmentRef seg, store_.Get(w.op.segment));
    if (!seg->meta().Contains(w.op.key)) {
      return Status::Stale(fmt::format("key outside segment {} (it split or moved)", w.op.segment));
    }
    LockKey lk{w.op.segment, w.op.key};
    auto held = locks_.find(lk);
    if (held != locks_.end() && held->second != txn) {
      return Status::Aborted("could not serialize access due to concurrent update");
    }
    if (w.check != WriteCheck::kNone && !mine.count(lk)) {
      ASSIGN_OR_RETURN(storage::LatestVersion lv, store_.Latest(w.op.segment, w.op.key));
      if (w.check == WriteCheck::kInsert && lv.found && !lv.deleted) {
        return Status::Sql("23505", "duplicate key value violates unique constraint");
      }
      if (lv.found && lv.ts > snapshot) {
        return Status::Aborted("could not serialize access due to concurrent update");
      }
    }
    mine.insert(lk);
  }
  auto& ops = prepared_[txn];
  for (auto& w : writes) ops.push_back(std::move(w.op));
  for (const auto& lk : mine) locks_[lk] = txn;
  return Status::OK();
}

Status Participant::Commit(uint64_t txn, Timestamp commit_ts, std::set<SegmentId>* touched) {
  std::vector<storage::WriteOp> ops;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = prepared_.find(txn);
    if (it == prepared_.end()) return Status::NotFound(fmt::format("txn {} is not prepared here", txn));
    ops = std::move(it->second);
    prepared_.erase(it);
    // Locks are released after the writes are durable, below.
  }
  Status s = store_.Apply(commit_ts, ops);
  if (touched) {
    for (const auto& op : ops) touched->insert(op.segment);
  }
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& op : ops) {
    auto it = locks_.find({op.segment, op.key});
    if (it != locks_.end() && it->second == txn) locks_.erase(it);
  }
  return s;
}

void Participant::Abort(uint64_t txn) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = prepared_.find(txn);
  if (it == prepared_.end()) return;
  for (const auto& op : it->second) {
    auto lk = locks_.find({op.segment, op.key});
    if (lk != locks_.end() && lk->second == txn) locks_.erase(lk);
  }
  prepared_.erase(it);
}

bool Participant::HasPrepared(SegmentId segment) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [lk, txn] : locks_) {
    if (lk.first == segment) return true;
  }
  return false;
}

size_t Participant::prepared_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return prepared_.size();
}

}  // namespace wattdb::node
