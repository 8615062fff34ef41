#include "node/participant.h"

#include "common/bytes.h"
#include "common/failpoint.h"

#include <optional>

namespace wattdb::node {

namespace {

std::string EncodeOps(const std::vector<storage::WriteOp>& ops) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(ops.size());
  for (const auto& op : ops) {
    w.VarU64(op.segment);
    w.Str(op.key);
    w.U8(static_cast<uint8_t>(op.kind));
    w.Str(op.row);
  }
  return out;
}

Result<std::vector<storage::WriteOp>> DecodeOps(std::string_view in) {
  ByteReader r(in);
  uint64_t n;
  auto bad = [] { return Status::Corruption("prepare record does not decode"); };
  if (!r.VarU64(&n) || n > in.size()) return bad();
  std::vector<storage::WriteOp> ops(n);
  for (auto& op : ops) {
    uint8_t kind;
    if (!r.VarU64(&op.segment) || !r.Str(&op.key) || !r.U8(&kind) || !r.Str(&op.row)) return bad();
    if (kind != 1 && kind != 2) return bad();
    op.kind = static_cast<storage::VersionKind>(kind);
  }
  return ops;
}

}  // namespace

Status Participant::Recover() {
  ASSIGN_OR_RETURN(auto records, store_.ListPrepared());
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [txn, blob] : records) {
    ASSIGN_OR_RETURN(auto ops, DecodeOps(blob));
    Prepared p;
    p.durable = true;
    for (size_t i = 0; i < ops.size(); i++) {
      locks_[{ops[i].segment, ops[i].key}] = txn;
      p.last[{ops[i].segment, ops[i].key}] = i;
    }
    p.ops = std::move(ops);
    prepared_[txn] = std::move(p);
  }
  return Status::OK();
}

std::map<std::string, storage::WriteOp> Participant::PendingWrites(uint64_t txn, SegmentId segment,
                                                                   std::string_view lo, std::string_view hi) const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, storage::WriteOp> out;
  auto it = prepared_.find(txn);
  if (it == prepared_.end()) return out;
  for (const auto& op : it->second.ops) {  // later ops of a key replace earlier ones
    if (op.segment != segment || op.key < lo || (!hi.empty() && op.key >= hi)) continue;
    out[op.key] = op;
  }
  return out;
}

std::vector<uint64_t> Participant::InDoubt() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [txn, p] : prepared_) {
    if (p.durable) out.push_back(txn);
  }
  return out;
}

Status Participant::Prepare(uint64_t txn, Timestamp snapshot, std::vector<TxnWrite> writes, bool durable,
                            bool wait) {
  std::unique_lock<std::mutex> l(mu_);
  auto deadline = std::chrono::steady_clock::now() + lock_wait_;
restart:
  auto existing = prepared_.find(txn);
  std::map<LockKey, bool> mine;  // key -> "live after the writes so far" (pending put)
  std::set<LockKey> locks_only;  // keys this call only locks
  for (const auto& w : writes) {
    ASSIGN_OR_RETURN(storage::SegmentRef seg, store_.Get(w.op.segment));
    if (!seg->meta().Contains(w.op.key)) {
      return Status::Stale(fmt::format("key outside segment {} (it split or moved)", w.op.segment));
    }
    LockKey lk{w.op.segment, w.op.key};
    auto held = locks_.find(lk);
    if (held != locks_.end() && held->second != txn) {
      // Another transaction holds the key: wait for it to end. If it committed, the check
      // below fails (first updater wins); if it aborted, this write goes ahead. A wait that
      // outlasts lock_wait_ (a deadlock, or a stuck holder) aborts this writer.
      uint64_t holder = held->second;
      if (!wait) return Status::Sql("55P03", "could not obtain lock on row");
      bool freed = released_.wait_until(l, deadline, [&] {
        auto h = locks_.find(lk);
        return h == locks_.end() || h->second != holder;
      });
      if (!freed) return Status::Aborted("could not serialize access due to concurrent update");
      goto restart;
    }
    // What this transaction wrote to the key before, in this call or an earlier statement.
    std::optional<bool> own;
    if (auto m = mine.find(lk); m != mine.end()) {
      own = m->second;
    } else if (existing != prepared_.end()) {
      auto o = existing->second.last.find(lk);
      if (o != existing->second.last.end()) own = existing->second.ops[o->second].kind == storage::VersionKind::kPut;
    }
    if (own) {
      if (w.check == WriteCheck::kInsert && *own) {
        return Status::Sql("23505", "duplicate key value violates unique constraint");
      }
    } else if (w.check != WriteCheck::kNone) {
      ASSIGN_OR_RETURN(storage::LatestVersion lv, store_.Latest(w.op.segment, w.op.key));
      if (w.check == WriteCheck::kInsert && lv.found && !lv.deleted) {
        return Status::Sql("23505", "duplicate key value violates unique constraint");
      }
      if (lv.found && lv.ts > snapshot) {
        return Status::Aborted("could not serialize access due to concurrent update");
      }
    }
    if (w.check == WriteCheck::kLock) {
      if (!mine.count(lk)) locks_only.insert(lk);
      continue;
    }
    mine[lk] = w.op.kind == storage::VersionKind::kPut;
    locks_only.erase(lk);
  }
  Prepared& p = prepared_[txn];
  size_t before = p.ops.size();
  for (auto& w : writes) {
    if (w.check == WriteCheck::kLock) continue;
    p.last[{w.op.segment, w.op.key}] = p.ops.size();
    p.ops.push_back(std::move(w.op));
  }
  if (durable) {
    p.durable = true;
    Status s = store_.PutPrepared(txn, EncodeOps(p.ops));
    if (!s.ok()) {
      p.ops.resize(before);
      for (auto it = p.last.begin(); it != p.last.end();) {
        it = it->second >= before ? p.last.erase(it) : std::next(it);
      }
      if (p.ops.empty()) prepared_.erase(txn);
      return s;
    }
  }
  for (const auto& [lk, live] : mine) locks_[lk] = txn;
  for (const auto& lk : locks_only) {
    locks_[lk] = txn;
    p.locked.insert(lk);
  }
  if (p.ops.empty() && p.locked.empty()) prepared_.erase(txn);
  return Status::OK();
}

Status Participant::Commit(uint64_t txn, Timestamp commit_ts, std::set<SegmentId>* touched) {
  std::vector<storage::WriteOp> ops;
  std::set<LockKey> locked;
  bool durable;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = prepared_.find(txn);
    if (it == prepared_.end()) return Status::NotFound(fmt::format("txn {} is not prepared here", txn));
    ops = std::move(it->second.ops);
    locked = std::move(it->second.locked);
    durable = it->second.durable;
    prepared_.erase(it);
    // Locks are released after the writes are durable, below.
  }
  if (durable) MaybeFail("node.before_distributed_commit");
  Status s = ops.empty() && !durable ? Status::OK() : store_.Apply(commit_ts, ops, durable ? txn : 0);
  if (touched) {
    for (const auto& op : ops) touched->insert(op.segment);
  }
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& op : ops) {
    auto it = locks_.find({op.segment, op.key});
    if (it != locks_.end() && it->second == txn) locks_.erase(it);
  }
  for (const auto& lk : locked) {
    auto it = locks_.find(lk);
    if (it != locks_.end() && it->second == txn) locks_.erase(it);
  }
  released_.notify_all();
  return s;
}

void Participant::Abort(uint64_t txn) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = prepared_.find(txn);
  if (it == prepared_.end()) return;
  if (it->second.durable) (void)store_.ErasePrepared(txn);
  for (const auto& op : it->second.ops) {
    auto lk = locks_.find({op.segment, op.key});
    if (lk != locks_.end() && lk->second == txn) locks_.erase(lk);
  }
  for (const auto& key : it->second.locked) {
    auto lk = locks_.find(key);
    if (lk != locks_.end() && lk->second == txn) locks_.erase(lk);
  }
  prepared_.erase(it);
  released_.notify_all();
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
