#include "master/cluster/timestamp_oracle.h"

#include <algorithm>

namespace wattdb::master {

void TimestampOracle::Reset(Timestamp last) {
  MutexLock l(mu_);
  last_ = last;
}

Timestamp TimestampOracle::StableLocked() const {
  return inflight_.empty() ? last_ : *inflight_.begin() - 1;
}

void TimestampOracle::AwaitCompletedLocked(Timestamp ts) {
  while (!inflight_.empty() && *inflight_.begin() <= ts) cv_.Wait(mu_);
}

Timestamp TimestampOracle::Read() {
  MutexLock l(mu_);
  return StableLocked();
}

Timestamp TimestampOracle::Acquire() {
  MutexLock l(mu_);
  Timestamp ts = StableLocked();
  snapshots_.insert(ts);
  return ts;
}

void TimestampOracle::Release(Timestamp ts) {
  MutexLock l(mu_);
  auto it = snapshots_.find(ts);
  if (it != snapshots_.end()) snapshots_.erase(it);
}

Timestamp TimestampOracle::GcHorizon() {
  MutexLock l(mu_);
  Timestamp read = StableLocked();
  return snapshots_.empty() ? read : std::min(read, *snapshots_.begin());
}

Timestamp TimestampOracle::LastIssued() {
  MutexLock l(mu_);
  return last_;
}

Result<Timestamp> TimestampOracle::BeginCommit() {
  // Drawn under the lock snapshots are taken under: drawn before it, a later-drawn commit
  // could enter inflight_ first, and a snapshot taken in between (the stable point below that
  // one) would lie at or above this timestamp before it is in flight; a one-phase commit
  // reaching its node after a read there at that snapshot must then abort.
  MutexLock l(mu_);
  ASSIGN_OR_RETURN(Timestamp ts, next_());
  inflight_.insert(ts);
  if (ts > last_) last_ = ts;
  return ts;
}

void TimestampOracle::EndCommit(Timestamp ts) {
  MutexLock l(mu_);
  // Every wait (here and in AwaitStable) is for the lowest commit in flight to pass a
  // timestamp: only the end of the lowest can end one.
  bool lowest = !inflight_.empty() && *inflight_.begin() == ts;
  inflight_.erase(ts);
  if (lowest) {
    // Nothing earlier is in flight: no wait. The waiters are woken with the lock let go, so
    // that they need not queue for it behind this thread.
    l.Unlock();
    cv_.SignalAll();
    return;
  }
  // A commit is acknowledged only once every earlier-stamped commit completed too, so that
  // every snapshot taken after the acknowledgement (in any session) includes it.
  AwaitCompletedLocked(ts);
}

void TimestampOracle::AwaitStable() {
  MutexLock l(mu_);
  AwaitCompletedLocked(last_);
}

}  // namespace wattdb::master
