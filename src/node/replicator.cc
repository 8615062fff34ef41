#include "node/replicator.h"

#include <fmt/format.h>

namespace wattdb::node {

Status Replicator::Lead(SegmentId segment, uint64_t epoch, std::vector<NodeId> followers,
                        uint64_t next_seq) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it != segments_.end() && epoch < it->second.epoch) {
    return Status::Stale(
        fmt::format("segment {}: epoch {} is older than {}", segment, epoch, it->second.epoch));
  }
  segments_[segment] = Led{epoch, std::move(followers), next_seq};
  return Status::OK();
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

Status Replicator::Ship(Timestamp ts, const std::vector<storage::WriteOp>& ops) {
  // The records, numbered under mu_ in the order their segments' commits reach here.
  std::vector<std::pair<ReplicaRecord, std::vector<NodeId>>> records;
  {
    MutexLock l(mu_);
    if (segments_.empty()) return Status::OK();
    std::map<SegmentId, size_t> record_of;  // segment -> index in records
    for (const auto& op : ops) {
      auto it = segments_.find(op.segment);
      if (it == segments_.end() || it->second.followers.empty()) continue;
      auto [at, added] = record_of.emplace(op.segment, records.size());
      if (added) {
        ReplicaRecord r{op.segment, it->second.epoch, it->second.next_seq++, ts, {}};
        records.emplace_back(std::move(r), it->second.followers);
      }
      records[at->second].first.ops.push_back(op);
    }
  }
  std::string failed;
  for (const auto& [r, followers] : records) {
    for (NodeId n : followers) {
      std::shared_ptr<ReplicaPeer> p = PeerOf(n);
      Status s = p ? p->Send(r) : Status::Unavailable(fmt::format("node {} unreachable", n));
      if (!s.ok()) {
        failed += fmt::format("{}segment {} on node {}: {}", failed.empty() ? "" : "; ", r.segment,
                              n, s.message());
      }
    }
  }
  if (!failed.empty()) return Status::Unavailable("replication failed: " + failed);
  return Status::OK();
}

Status ApplyReplicaRecord(FollowerLog& log, storage::SegmentStore& store, const ReplicaRecord& r) {
  ASSIGN_OR_RETURN(FollowerLog::Admission a, log.Admit(r.segment, r.epoch, r.seq));
  if (a == FollowerLog::Admission::kDone) return Status::OK();
  Status s = store.Apply(r.ts, r.ops, /*prepared_txn=*/0, /*txn=*/0, /*sync=*/true);
  if (s.ok()) {
    log.Applied(r.segment, r.seq);
  } else {
    log.Failed(r.segment, r.seq);
  }
  return s;
}

}  // namespace wattdb::node
