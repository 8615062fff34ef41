// Replication on a node (docs/design/replication.md).
//
// Leader side, Replicator: the followers of each segment this node leads, as the master last
// told it (epoch and nodes), and the shipping of a commit's writes to them: one record per
// segment (segment, epoch, sequence number, commit timestamp, writes), sent to each follower
// through a Peer, answered once each follower made it durable. Follower side,
// ApplyReplicaRecord: admits a record through the FollowerLog (epoch and order) and applies
// it to the store at the leader's timestamp, synced, so the follower's versions are the
// leader's. Thread-safe.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/schema.h"
#include "common/status.h"
#include "node/follower_log.h"
#include "storage/segment_store.h"

namespace wattdb::node {

// One record of a segment's log as its leader ships it. kCommit: `ops` committed at `ts`
// (`txn` nonzero: the durably prepared transaction it ends, whose prepare record the
// follower drops). kPrepare: `txn`'s prepared writes on the segment, all of them (a newer
// record replaces an older), to commit above `ts`. kAbort: `txn` ended without a commit.
struct ReplicaRecord {
  enum class Kind : uint8_t { kCommit = 0, kPrepare = 1, kAbort = 2 };
  SegmentId segment = 0;
  uint64_t epoch = 0;
  uint64_t seq = 0;
  Timestamp ts = 0;
  std::vector<storage::WriteOp> ops;  // all of `segment`
  Kind kind = Kind::kCommit;
  uint64_t txn = 0;
  uint64_t offset = 0;  // the segment's log length in bytes with this record (ReplicaPosition)
};

// A follower's stored copy of a kPrepare record (SegmentStore::PutReplicaPrepared).
std::string EncodeReplicaPrepare(Timestamp min_commit_ts, const std::vector<storage::WriteOp>& ops);
// Decodes a stored copy of `segment`'s kPrepare record.
Status DecodeReplicaPrepare(std::string_view blob, SegmentId segment, Timestamp* min_commit_ts,
                            std::vector<storage::WriteOp>* ops);

// A follower that did not make a record durable: the master takes it out of the segment's
// set (a new epoch) before the commit is acknowledged.
struct ReplicaFailure {
  SegmentId segment = 0;
  NodeId node = 0;
  std::string message;
};

// One follower node as the leader reaches it.
class ReplicaPeer {
 public:
  // A record sent whose answer is still to be read.
  class Pending {
   public:
    virtual ~Pending() = default;
    // Returns once the follower made the record durable, or failed. Once.
    virtual Status Finish() = 0;
  };
  virtual ~ReplicaPeer() = default;
  // Sends `r` and returns once the follower made it durable, or failed.
  virtual Status Send(const ReplicaRecord& r) = 0;
  // Sends `r`; its answer is read by Finish, so that a leader's local work (the log sync)
  // and several followers' work overlap. Never null. By default Send, at once.
  virtual std::unique_ptr<Pending> Start(const ReplicaRecord& r);
  // A Pending whose answer is known already.
  static std::unique_ptr<Pending> Answered(Status s);
};

class Replicator {
 public:
  // `peer(n)` reaches follower node n (called once per node, kept).
  explicit Replicator(std::function<std::shared_ptr<ReplicaPeer>(NodeId)> peer)
      : peer_(std::move(peer)) {}

  // The master's word: this node leads `segment` in `epoch` with `followers` (none: it is
  // not replicated), and the next record it ships is `next_seq` (0: the numbering goes on,
  // in the epoch it is led in already; only the followers change). An older epoch is
  // refused (Stale).
  // `keep_bytes` > 0: a copy of the segment sleeps; every record numbered from now on is
  // also kept (the oldest dropped beyond keep_bytes) to catch it up (CatchUp); 0: none kept.
  Status Lead(SegmentId segment, uint64_t epoch, std::vector<NodeId> followers, uint64_t next_seq,
              uint64_t keep_bytes = 0) EXCLUDES(mu_);
  // No longer led here (dropped, or this node follows it now).
  void Drop(SegmentId segment) EXCLUDES(mu_);
  // The sequence number the next record of `segment` takes (1 if not led here).
  uint64_t NextSeq(SegmentId segment) const EXCLUDES(mu_);
  // Sends the kept records of `segment` numbered `from_seq` and after to `node`, in order, and
  // returns once it holds them durably. The caller holds the segment's writers off (the
  // master's exclusive latch), so the node then has every record. NotFound if some of them
  // are not kept (dropped beyond the bound, or not led here in that numbering).
  Status CatchUp(SegmentId segment, NodeId node, uint64_t from_seq) EXCLUDES(mu_);
  // Where each segment led here stands: its last record numbered.
  std::map<SegmentId, ReplicaPosition> Positions() const EXCLUDES(mu_);

  // A commit's records, numbered: one per segment with followers, each with its followers.
  struct Outgoing {
    std::vector<std::pair<ReplicaRecord, std::vector<NodeId>>> records;
    bool empty() const { return records.empty(); }
  };
  // Numbers the records of a commit at `ts` (or, with `kind`, of `txn`'s prepare or abort:
  // one per replicated segment of `ops`, an abort's without the writes). Called while the
  // transaction still holds its rows' locks, so that two commits of one key are numbered in
  // the order they apply.
  Outgoing Number(Timestamp ts, const std::vector<storage::WriteOp>& ops,
                  ReplicaRecord::Kind kind = ReplicaRecord::Kind::kCommit, uint64_t txn = 0)
      EXCLUDES(mu_);
  // The records of `out` applied nothing here (the local apply failed before writing): any
  // copy kept for a sleeping copy goes out empty too, as `out`'s records then do.
  void Blank(const Outgoing& out) EXCLUDES(mu_);
  // Records sent to their followers, answers still to be read (Finish).
  struct InFlight {
    struct Sent {
      SegmentId segment;
      NodeId node;
      std::unique_ptr<ReplicaPeer::Pending> pending;
    };
    std::vector<Sent> sent;
  };
  // Sends each record to each of its followers at once; written to this node's log already
  // (the sync may still be due: a record a follower holds and the leader lost in a crash was
  // never acknowledged, and the restarted leader no longer leads).
  InFlight Begin(const Outgoing& out) EXCLUDES(mu_);
  // The answers of `f`: the records that failed.
  static std::vector<ReplicaFailure> Finish(InFlight& f);
  // Begin and Finish.
  std::vector<ReplicaFailure> Send(const Outgoing& out) EXCLUDES(mu_);
  // Number and Send. OK when every follower answered OK; else Unavailable naming the
  // segments and followers that failed.
  Status Ship(Timestamp ts, const std::vector<storage::WriteOp>& ops) EXCLUDES(mu_);

 private:
  struct Led {
    uint64_t epoch = 0;
    std::vector<NodeId> followers;
    uint64_t next_seq = 1;
    Timestamp ts = 0;                // of the last record numbered
    uint64_t offset = 0;             // the log's length with it
    uint64_t keep_bytes = 0;         // Lead's bound; 0: nothing kept
    std::deque<ReplicaRecord> kept;  // consecutive, the newest last
    uint64_t kept_from = 0;          // seq of kept.front() (or of the next record, if empty)
    uint64_t kept_size = 0;          // bytes of their writes
  };
  std::shared_ptr<ReplicaPeer> PeerOf(NodeId n) EXCLUDES(mu_);

  std::function<std::shared_ptr<ReplicaPeer>(NodeId)> peer_;
  mutable Mutex mu_;
  std::map<SegmentId, Led> segments_ GUARDED_BY(mu_);
  std::map<NodeId, std::shared_ptr<ReplicaPeer>> peers_ GUARDED_BY(mu_);
};

// Applies record `r` on a follower: admitted by `log` (Stale for another epoch, Aborted when
// behind), then made durable in `store`: a commit's writes at r.ts, a prepare's copy kept, an
// abort's dropped. A record applied before is OK at once.
Status ApplyReplicaRecord(FollowerLog& log, storage::SegmentStore& store, const ReplicaRecord& r);

}  // namespace wattdb::node
