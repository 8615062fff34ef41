#include "node/replicator.h"

#include <fmt/format.h>

#include "common/bytes.h"

namespace wattdb::node {

Status Replicator::Lead(SegmentId segment, uint64_t epoch, std::vector<NodeId> followers,
                        uint64_t next_seq) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it != segments_.end() && epoch < it->second.epoch) {
    return Status::Stale(
        fmt::format("segment {}: epoch {} is older than {}", segment, epoch, it->second.epoch));
  }
  if (next_seq == 0) {
    if (it == segments_.end() || it->second.epoch != epoch) {
      return Status::InvalidArgument(
          fmt::format("segment {}: numbering can go on only in the epoch it is led in", segment));
    }
    it->second.followers = std::move(followers);
    return Status::OK();
  }
  segments_[segment] = Led{epoch, std::move(followers), next_seq};
  return Status::OK();
}

void Replicator::Drop(SegmentId segment) {
  MutexLock l(mu_);
  segments_.erase(segment);
}

uint64_t Replicator::NextSeq(SegmentId segment) const {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  return it == segments_.end() ? 1 : it->second.next_seq;
}

std::shared_ptr<ReplicaPeer> Replicator::PeerOf(NodeId n) {
  {
    MutexLock l(mu_);
    auto it = peers_.find(n);
    if (it != peers_.end()) return it->second;
  }
  std::shared_ptr<ReplicaPeer> p = peer_(n);  // may connect: not under mu_
  MutexLock l(mu_);
  return peers_.emplace(n, std::move(p)).first->second;
}

std::string EncodeReplicaPrepare(Timestamp min_commit_ts,
                                 const std::vector<storage::WriteOp>& ops) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(min_commit_ts);
  w.VarU64(ops.size());
  for (const auto& op : ops) {
    w.Str(op.key);
    w.U8(static_cast<uint8_t>(op.kind));
    w.Str(op.row);
  }
  return out;
}

Status DecodeReplicaPrepare(std::string_view blob, SegmentId segment, Timestamp* min_commit_ts,
                            std::vector<storage::WriteOp>* ops) {
  ByteReader r(blob);
  uint64_t n;
  auto bad = [] { return Status::Corruption("replica prepare record does not decode"); };
  if (!r.VarU64(min_commit_ts) || !r.VarU64(&n) || n > blob.size()) return bad();
  ops->resize(n);
  for (auto& op : *ops) {
    uint8_t kind;
    op.segment = segment;
    if (!r.Str(&op.key) || !r.U8(&kind) || !r.Str(&op.row)) return bad();
    if (kind != 1 && kind != 2) return bad();
    op.kind = static_cast<storage::VersionKind>(kind);
  }
  if (!r.empty()) return bad();
  return Status::OK();
}

Replicator::Outgoing Replicator::Number(Timestamp ts, const std::vector<storage::WriteOp>& ops,
                                        ReplicaRecord::Kind kind, uint64_t txn) {
  Outgoing out;
  MutexLock l(mu_);
  if (segments_.empty()) return out;
  std::map<SegmentId, size_t> record_of;  // segment -> index in out.records
  for (const auto& op : ops) {
    auto it = segments_.find(op.segment);
    if (it == segments_.end() || it->second.followers.empty()) continue;
    auto [at, added] = record_of.emplace(op.segment, out.records.size());
    if (added) {
      ReplicaRecord r{op.segment, it->second.epoch, it->second.next_seq++, ts, {}, kind, txn};
      out.records.emplace_back(std::move(r), it->second.followers);
    }
    if (kind != ReplicaRecord::Kind::kAbort) out.records[at->second].first.ops.push_back(op);
  }
  return out;
}

std::vector<ReplicaFailure> Replicator::Send(const Outgoing& out) {
  std::vector<ReplicaFailure> failed;
  for (const auto& [r, followers] : out.records) {
    for (NodeId n : followers) {
      std::shared_ptr<ReplicaPeer> p = PeerOf(n);
      Status s = p ? p->Send(r) : Status::Unavailable(fmt::format("node {} unreachable", n));
      if (!s.ok()) failed.push_back({r.segment, n, s.message()});
    }
  }
  return failed;
}

Status Replicator::Ship(Timestamp ts, const std::vector<storage::WriteOp>& ops) {
  std::vector<ReplicaFailure> failed = Send(Number(ts, ops));
  if (failed.empty()) return Status::OK();
  std::string what;
  for (const auto& f : failed) {
    what += fmt::format("{}segment {} on node {}: {}", what.empty() ? "" : "; ", f.segment, f.node,
                        f.message);
  }
  return Status::Unavailable("replication failed: " + what);
}

Status ApplyReplicaRecord(FollowerLog& log, storage::SegmentStore& store, const ReplicaRecord& r) {
  ASSIGN_OR_RETURN(FollowerLog::Admission a, log.Admit(r.segment, r.epoch, r.seq));
  if (a == FollowerLog::Admission::kDone) return Status::OK();
  Status s;
  bool released = false;  // Applied already: the next record may be written meanwhile
  switch (r.kind) {
    case ReplicaRecord::Kind::kCommit:
      // Written in order, synced in groups: once the writes are in the log the next record
      // may go, and this one answers when its sync (shared with the records around it) ends.
      s = store.Apply(r.ts, r.ops, /*prepared_txn=*/0, /*txn=*/0, /*sync=*/true, [&](uint64_t) {
        log.Applied(r.segment, r.seq);
        released = true;
      });
      // Unsynced: should it come back after a crash, the copy of a committed prepare is
      // resolved by the master's kept decision when this node leads, or dropped with the copy.
      if (s.ok() && r.txn) s = store.EraseReplicaPrepared(r.segment, r.txn);
      break;
    case ReplicaRecord::Kind::kPrepare:
      s = store.PutReplicaPrepared(r.segment, r.txn, EncodeReplicaPrepare(r.ts, r.ops));
      break;
    case ReplicaRecord::Kind::kAbort:
      s = store.EraseReplicaPrepared(r.segment, r.txn);
      break;
  }
  if (released) return s;  // (a failed log sync ends the process)
  if (s.ok()) {
    log.Applied(r.segment, r.seq);
  } else {
    log.Failed(r.segment, r.seq);
  }
  return s;
}

}  // namespace wattdb::node
