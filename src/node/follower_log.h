// FollowerLog: a follower node's bookkeeping of the segments it replicates
// (docs/design/replication.md): for each, the epoch the master told it of and the sequence
// number of the next record it expects from the leader.
//
// A record is admitted when it carries the newest epoch and the next sequence number. One
// of an older epoch (a deposed leader's) is refused with Stale, whatever its number, so such
// a leader cannot gather the acknowledgements a commit needs. Records of one segment may
// arrive out of order (the leader ships concurrent commits at once): one ahead of the next
// waits for those before it to be applied, until `timeout_ms`; then the follower is behind
// (Aborted) and the master re-seeds it. A record already applied (a resend) is admitted as
// done. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "common/mutex.h"
#include "common/schema.h"
#include "common/status.h"

namespace wattdb::node {

// Where a replica of a segment stands in its log: the last record numbered (leader) or
// applied (follower), its commit timestamp, and the log's length in bytes after it (the
// writes' keys and rows; the numbering and the length restart with each new numbering).
struct ReplicaPosition {
  uint64_t seq = 0;
  Timestamp ts = 0;
  uint64_t offset = 0;
  uint64_t kept_from = 0;   // a leader keeping records for a sleeping copy: the first kept
  uint64_t kept_bytes = 0;  // and their bytes
};

class FollowerLog {
 public:
  enum class Admission { kApply, kDone };

  explicit FollowerLog(int timeout_ms) : timeout_ms_(timeout_ms) {}

  // The master's word: `segment` is followed here in `epoch`, and its next record is
  // `next_seq`. A newer epoch replaces an older one (and wakes the records waiting in it,
  // which then fail Stale); an older one is refused (Stale).
  Status Follow(SegmentId segment, uint64_t epoch, uint64_t next_seq) EXCLUDES(mu_);
  // No longer followed here (dropped, or this node became its leader).
  void Unfollow(SegmentId segment) EXCLUDES(mu_);

  // Whether record `seq` of `segment`, shipped in `epoch`, is to be applied now (kApply: the
  // caller applies it durably, then calls Applied) or was applied before (kDone). Blocks while
  // an earlier record is still to come. NotFound if the segment is not followed here.
  Result<Admission> Admit(SegmentId segment, uint64_t epoch, uint64_t seq) EXCLUDES(mu_);
  // Record `seq` of `segment` is durable here: the next one may go. A failed apply calls
  // Failed instead (the record stays next; waiting records wait on).
  // `ts` and `offset`: the record's commit timestamp and log position (ReplicaRecord).
  void Applied(SegmentId segment, uint64_t seq, Timestamp ts = 0, uint64_t offset = 0)
      EXCLUDES(mu_);
  void Failed(SegmentId segment, uint64_t seq) EXCLUDES(mu_);

  // The copy of transaction `txn`'s prepare for `segment` is held here (it commits above
  // `min_commit_ts`), until Resolved (its outcome applied, or given up). Unfollow forgets them.
  void Prepared(SegmentId segment, uint64_t txn, Timestamp min_commit_ts) EXCLUDES(mu_);
  void Resolved(SegmentId segment, uint64_t txn) EXCLUDES(mu_);
  // Whether a read of `segment` at `read_ts` may be served by this copy, which the master
  // named a follower in `epoch` (follower reads, docs/design/replication.md): NotFound if the
  // segment is not followed here, Stale if followed in an older epoch, Unavailable while a
  // prepare copy held here may have committed at or below `read_ts` (its writes are not
  // applied here yet: the leader answers). OK: every commit at or below `read_ts` that the
  // master acknowledged before choosing this copy is applied here.
  Status Readable(SegmentId segment, uint64_t epoch, Timestamp read_ts) const EXCLUDES(mu_);

  // The last sequence number applied of `segment` (next - 1), if followed here.
  std::optional<uint64_t> LastApplied(SegmentId segment) const EXCLUDES(mu_);
  std::optional<uint64_t> Epoch(SegmentId segment) const EXCLUDES(mu_);
  // Where each followed segment stands: its last record applied.
  std::map<SegmentId, ReplicaPosition> Positions() const EXCLUDES(mu_);

 private:
  struct Followed {
    uint64_t epoch = 0;
    uint64_t next_seq = 1;                   // the record to apply next
    bool applying = false;                   // record next_seq is being applied
    Timestamp ts = 0;                        // of the last record applied
    uint64_t offset = 0;                     // its log position
    std::map<uint64_t, Timestamp> prepared;  // txn -> min commit ts, of the prepare copies
  };

  const int timeout_ms_;
  mutable Mutex mu_;
  CondVar changed_;  // a record applied or failed, or an epoch changed
  std::map<SegmentId, Followed> segments_ GUARDED_BY(mu_);
};

}  // namespace wattdb::node
