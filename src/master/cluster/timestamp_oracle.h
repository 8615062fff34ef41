// TimestampOracle: hands out the cluster's commit timestamps and read snapshots, and knows
// which commits are still in flight. A snapshot is the highest timestamp below every commit in
// flight, so every commit at or below it has completed; a commit is acknowledged only once
// every earlier-stamped one completed too, so a snapshot taken after the acknowledgement (in
// any session) includes it. Timestamps are drawn from a durable counter (the catalog's), so
// they grow across restarts. Held snapshots bound garbage collection (GcHorizon). Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>

#include <boost/container/flat_set.hpp>

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
  // REQUIRES mu_ held. The highest timestamp below every commit in flight.
  Timestamp StableLocked() const;
  // REQUIRES mu_ held via `l`. Waits until no commit at or below `ts` is in flight.
  void AwaitCompletedLocked(std::unique_lock<std::mutex>& l, Timestamp ts);

  const std::function<Result<Timestamp>()> next_;
  std::mutex mu_;               // guards the state below
  std::condition_variable cv_;  // signalled when the lowest commit in flight completes
  Timestamp last_ = 0;
  // Sorted arrays: as many entries as commits in flight and snapshots held (a few per
  // session), mostly added near the end; they keep their memory, so a statement's snapshot
  // and a commit's stamp allocate nothing.
  boost::container::flat_set<Timestamp> inflight_;
  boost::container::flat_multiset<Timestamp> snapshots_;  // held by statements and transactions
};

}  // namespace wattdb::master
