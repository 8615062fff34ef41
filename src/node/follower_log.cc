#include "node/follower_log.h"

#include <chrono>

#include <fmt/format.h>

namespace wattdb::node {

Status FollowerLog::Follow(SegmentId segment, uint64_t epoch, uint64_t next_seq) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it != segments_.end() && epoch < it->second.epoch) {
    return Status::Stale(
        fmt::format("segment {}: epoch {} is older than {}", segment, epoch, it->second.epoch));
  }
  Followed& f = segments_[segment];
  f.epoch = epoch;
  if (next_seq != f.next_seq || next_seq <= 1) f.offset = 0;  // a new numbering
  f.next_seq = next_seq;
  f.applying = false;
  changed_.SignalAll();
  return Status::OK();
}

void FollowerLog::Unfollow(SegmentId segment) {
  MutexLock l(mu_);
  segments_.erase(segment);
  changed_.SignalAll();
}

Result<FollowerLog::Admission> FollowerLog::Admit(SegmentId segment, uint64_t epoch, uint64_t seq) {
  MutexLock l(mu_);
  auto until = CondVar::DeadlineIn(std::chrono::milliseconds(timeout_ms_));
  while (true) {
    auto it = segments_.find(segment);
    if (it == segments_.end()) {
      return Status::NotFound(fmt::format("segment {} is not followed here", segment));
    }
    Followed& f = it->second;
    if (epoch != f.epoch) {
      // An older epoch is a deposed leader's; a newer one is the master's word not yet here.
      return Status::Stale(fmt::format("segment {}: a record of epoch {}, followed in epoch {}",
                                       segment, epoch, f.epoch));
    }
    if (seq < f.next_seq) return Admission::kDone;
    if (seq == f.next_seq && !f.applying) {
      f.applying = true;
      return Admission::kApply;
    }
    if (!changed_.WaitUntil(mu_, until)) {
      return Status::Aborted(
          fmt::format("segment {}: record {} waited {} ms for record {}; the follower is behind",
                      segment, seq, timeout_ms_, f.next_seq));
    }
  }
}

void FollowerLog::Applied(SegmentId segment, uint64_t seq, Timestamp ts, uint64_t offset) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end() || it->second.next_seq != seq) return;
  it->second.next_seq = seq + 1;
  it->second.applying = false;
  if (ts) it->second.ts = ts;
  if (offset) it->second.offset = offset;
  changed_.SignalAll();
}

void FollowerLog::Failed(SegmentId segment, uint64_t seq) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end() || it->second.next_seq != seq) return;
  it->second.applying = false;
  changed_.SignalAll();
}

void FollowerLog::Prepared(SegmentId segment, uint64_t txn, Timestamp min_commit_ts) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it != segments_.end()) it->second.prepared[txn] = min_commit_ts;
}

void FollowerLog::Resolved(SegmentId segment, uint64_t txn) {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it != segments_.end()) it->second.prepared.erase(txn);
}

Status FollowerLog::Readable(SegmentId segment, uint64_t epoch, Timestamp read_ts) const {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end()) {
    return Status::NotFound(fmt::format("segment {} is not followed here", segment));
  }
  const Followed& f = it->second;
  if (f.epoch < epoch) {
    return Status::Stale(
        fmt::format("segment {}: followed in epoch {}, not {}", segment, f.epoch, epoch));
  }
  for (const auto& [txn, min_ts] : f.prepared) {
    // It commits above min_ts: a read at or below that cannot miss it.
    if (min_ts < read_ts) {
      return Status::Unavailable(fmt::format(
          "segment {}: transaction {} is prepared and not yet resolved here", segment, txn));
    }
  }
  return Status::OK();
}

std::optional<uint64_t> FollowerLog::LastApplied(SegmentId segment) const {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end()) return std::nullopt;
  return it->second.next_seq - 1;
}

std::map<SegmentId, ReplicaPosition> FollowerLog::Positions() const {
  MutexLock l(mu_);
  std::map<SegmentId, ReplicaPosition> out;
  for (const auto& [seg, f] : segments_) out[seg] = {f.next_seq - 1, f.ts, f.offset, 0, 0};
  return out;
}

std::optional<uint64_t> FollowerLog::Epoch(SegmentId segment) const {
  MutexLock l(mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end()) return std::nullopt;
  return it->second.epoch;
}

}  // namespace wattdb::node
