#include "node/replicator.h"

#include <fmt/format.h>

#include "common/bytes.h"

namespace wattdb::node {

namespace {

// Records kept for a sleeping copy, whatever their size.
constexpr size_t kMaxKeptRecords = 1 << 20;

// A record's bytes in the log's length: its writes' keys and rows.
uint64_t LogBytes(const std::vector<storage::WriteOp>& ops) {
  uint64_t n = 0;
  for (const auto& op : ops) n += op.key.size() + op.row.size();
  return n;
}

}  // namespace

Status Replicator::Lead(SegmentId segment, uint64_t epoch, std::vector<NodeId> followers,
                        uint64_t next_seq, uint64_t keep_bytes) {
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
    Led& led = it->second;
    led.followers = std::move(followers);
    if (keep_bytes == 0) {
      led.kept.clear();
      led.kept_size = 0;
    } else if (led.keep_bytes == 0) {
      led.kept_from = led.next_seq;  // from now on
    }
    led.keep_bytes = keep_bytes;
    return Status::OK();
  }
  Led led{epoch, std::move(followers), next_seq};
  led.keep_bytes = keep_bytes;
  led.kept_from = next_seq;
  segments_[segment] = std::move(led);
  return Status::OK();
}

void Replicator::Drop(SegmentId segment) {
  MutexLock l(mu_);
  segments_.erase(segment);
}

std::map<SegmentId, ReplicaPosition> Replicator::Positions() const {
  MutexLock l(mu_);
  std::map<SegmentId, ReplicaPosition> out;
  for (const auto& [seg, led] : segments_) {
    out[seg] = {led.next_seq - 1, led.ts, led.offset, led.keep_bytes ? led.kept_from : 0,
                led.kept_size};
  }
  return out;
}

uint64_t Replicator::NextSeq(SegmentId segment) const {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  return it == segments_.end() ? 1 : it->second.next_seq;
}

void Replicator::Blank(const Outgoing& out) {
  MutexLock l(mu_);
  for (const auto& [r, followers] : out.records) {
    auto it = segments_.find(r.segment);
    if (it == segments_.end() || it->second.epoch != r.epoch) continue;
    for (auto& kept : it->second.kept) {
      if (kept.seq != r.seq) continue;
      it->second.kept_size -= LogBytes(kept.ops);
      kept.ops.clear();
      kept.txn = 0;
    }
  }
}

Status Replicator::CatchUp(SegmentId segment, NodeId node, uint64_t from_seq) {
  std::vector<ReplicaRecord> records;
  {
    MutexLock l(mu_);
    auto it = segments_.find(segment);
    if (it == segments_.end() || it->second.keep_bytes == 0 || from_seq < it->second.kept_from ||
        from_seq > it->second.next_seq) {
      return Status::NotFound(
          fmt::format("segment {}: the records from {} on are not kept here", segment, from_seq));
    }
    for (const auto& r : it->second.kept) {
      if (r.seq >= from_seq) records.push_back(r);
    }
  }
  std::shared_ptr<ReplicaPeer> p = PeerOf(node);
  if (!p) return Status::Unavailable(fmt::format("node {} unreachable", node));
  // A window of records on their way (the follower applies them in order, and syncs them in
  // groups), not one round trip each.
  constexpr size_t kWindow = 16;
  std::deque<std::unique_ptr<ReplicaPeer::Pending>> sent;
  Status s;
  for (size_t i = 0; i < records.size() || !sent.empty();) {
    if (i < records.size() && sent.size() < kWindow && s.ok()) {
      sent.push_back(p->Start(records[i++]));
      continue;
    }
    Status one = sent.front()->Finish();
    sent.pop_front();
    if (s.ok() && !one.ok()) s = one.Prepend(fmt::format("catching node {} up", node));
    if (!s.ok()) i = records.size();  // the rest are not sent; those sent are awaited
  }
  return s;
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
    // (Numbered without followers too while records are kept for a sleeping copy.)
    if (it == segments_.end() || (it->second.followers.empty() && !it->second.keep_bytes)) continue;
    auto [at, added] = record_of.emplace(op.segment, out.records.size());
    if (added) {
      ReplicaRecord r{op.segment, it->second.epoch, it->second.next_seq++, ts, {}, kind, txn};
      out.records.emplace_back(std::move(r), it->second.followers);
    }
    if (kind != ReplicaRecord::Kind::kAbort) {
      out.records[at->second].first.ops.push_back(op);
      if (kind == ReplicaRecord::Kind::kCommit) it->second.offset += op.key.size() + op.row.size();
    }
  }
  for (auto& [r, followers] : out.records) {
    Led& led = segments_[r.segment];
    r.offset = led.offset;  // (the commit's bytes of the segment are all counted by now)
    if (kind == ReplicaRecord::Kind::kCommit) led.ts = std::max(led.ts, ts);
    if (led.keep_bytes == 0) continue;
    led.kept.push_back(r);
    led.kept_size += LogBytes(r.ops);
    while ((led.kept_size > led.keep_bytes || led.kept.size() > kMaxKeptRecords) &&
           !led.kept.empty()) {
      led.kept_size -= LogBytes(led.kept.front().ops);
      led.kept.pop_front();
      led.kept_from++;
    }
  }
  return out;
}

namespace {

class Known : public ReplicaPeer::Pending {
 public:
  explicit Known(Status s) : s_(std::move(s)) {}
  Status Finish() override { return s_; }

 private:
  Status s_;
};

}  // namespace

std::unique_ptr<ReplicaPeer::Pending> ReplicaPeer::Answered(Status s) {
  return std::make_unique<Known>(std::move(s));
}

std::unique_ptr<ReplicaPeer::Pending> ReplicaPeer::Start(const ReplicaRecord& r) {
  return Answered(Send(r));
}

Replicator::InFlight Replicator::Begin(const Outgoing& out) {
  InFlight f;
  for (const auto& [r, followers] : out.records) {
    for (NodeId n : followers) {
      std::shared_ptr<ReplicaPeer> p = PeerOf(n);
      f.sent.push_back(
          {r.segment, n,
           p ? p->Start(r)
             : ReplicaPeer::Answered(Status::Unavailable(fmt::format("node {} unreachable", n)))});
    }
  }
  return f;
}

std::vector<ReplicaFailure> Replicator::Finish(InFlight& f) {
  std::vector<ReplicaFailure> failed;
  for (auto& sent : f.sent) {
    Status s = sent.pending->Finish();
    if (!s.ok()) failed.push_back({sent.segment, sent.node, s.message()});
  }
  f.sent.clear();
  return failed;
}

std::vector<ReplicaFailure> Replicator::Send(const Outgoing& out) {
  InFlight f = Begin(out);
  return Finish(f);
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
        log.Applied(r.segment, r.seq, r.ts, r.offset);
        released = true;
      });
      // Unsynced: should it come back after a crash, the copy of a committed prepare is
      // resolved by the master's kept decision when this node leads, or dropped with the copy.
      if (s.ok() && r.txn) s = store.EraseReplicaPrepared(r.segment, r.txn);
      if (s.ok() && r.txn) log.Resolved(r.segment, r.txn);
      break;
    case ReplicaRecord::Kind::kPrepare:
      s = store.PutReplicaPrepared(r.segment, r.txn, EncodeReplicaPrepare(r.ts, r.ops));
      if (s.ok()) log.Prepared(r.segment, r.txn, r.ts);
      break;
    case ReplicaRecord::Kind::kAbort:
      s = store.EraseReplicaPrepared(r.segment, r.txn);
      if (s.ok()) log.Resolved(r.segment, r.txn);
      break;
  }
  if (released) return s;  // (a failed log sync ends the process)
  if (s.ok()) {
    log.Applied(r.segment, r.seq, r.kind == ReplicaRecord::Kind::kCommit ? r.ts : 0, r.offset);
  } else {
    log.Failed(r.segment, r.seq);
  }
  return s;
}

}  // namespace wattdb::node
