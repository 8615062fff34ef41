// TimestampOracle: hands out the cluster's commit timestamps and read snapshots, and knows
// which commits are still in flight. A snapshot is the highest timestamp below every commit in
// flight, so every commit at or below it has completed; a commit is acknowledged only once
// every earlier-stamped one completed too, so a snapshot taken after the acknowledgement (in
// any session) includes it. Timestamps are drawn from a durable counter (the catalog's), so
// they grow across restarts. Held snapshots bound garbage collection (GcHorizon). Thread-safe.
#pragma once

#include <functional>

#include <boost/container/flat_set.hpp>

#include "common/mutex.h"
#include "common/schema.h"
#include "common/status.h"

namespace wattdb::master {

class TimestampOracle {
 public:
  // `next` draws the next durable timestamp; it is called with the oracle's lock held.
  explicit TimestampOracle(std::function<Result<Timestamp>()> next) : next_(std::move(next)) {}

  // Everything committed before this run has a timestamp below `last`. REQUIRES: before use.
  void Reset(Timestamp last);

  // Snapshot for a new statement: every commit with a timestamp <= it has completed.
  Timestamp Read();
  // A snapshot held by a running statement or transaction: garbage collection keeps every
  // version it can see until Release.
  Timestamp Acquire();
  void Release(Timestamp ts);
  // The oldest snapshot in use (or the current read timestamp if none).
  Timestamp GcHorizon();
  // The highest timestamp drawn so far: every snapshot handed out is at or below it.
  Timestamp LastIssued();

  // A timestamp for a commit, in flight until EndCommit.
  Result<Timestamp> BeginCommit();
  // Ends commit `ts`; returns once no commit with a lower timestamp is still in flight.
  void EndCommit(Timestamp ts);
  // Returns once every commit that has a timestamp now has completed, so that snapshots taken
  // afterwards see all of them.
  void AwaitStable();

 private:
  // The highest timestamp below every commit in flight.
  Timestamp StableLocked() const REQUIRES(mu_);
  // Waits until no commit at or below `ts` is in flight.
  void AwaitCompletedLocked(Timestamp ts) REQUIRES(mu_);

  const std::function<Result<Timestamp>()> next_;
  Mutex mu_;
  CondVar cv_;  // signalled when the lowest commit in flight completes
  Timestamp last_ GUARDED_BY(mu_) = 0;
  // Sorted arrays: as many entries as commits in flight and snapshots held (a few per
  // session), mostly added near the end; they keep their memory, so a statement's snapshot
  // and a commit's stamp allocate nothing.
  boost::container::flat_set<Timestamp> inflight_ GUARDED_BY(mu_);
  // Held by statements and transactions.
  boost::container::flat_multiset<Timestamp> snapshots_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
