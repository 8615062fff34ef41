// SegmentLatches: one latch per segment, shared by the transaction coordinator and the
// placement. A statement's writes hold the latches of the segments they touch (shared) from
// routing until their transaction ends; a move, a split or a write block holds one
// exclusively, so it never runs under in-flight writes. Readers take none: a reader that
// meets a moved or split segment re-resolves the partition map and resumes. Latches are
// never freed (one small object per segment ever seen). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "common/mutex.h"
#include "common/schema.h"
#include "common/status.h"

namespace wattdb::master {

class SegmentLatches {
 public:
  using Latch = std::shared_timed_mutex;

  // The latch of `seg` (made on first use); it lives as long as this object.
  std::shared_ptr<Latch> Get(SegmentId seg);
  // `seg`'s latch held exclusively, or 55006 (InUse) if it was not free within `wait_ms`.
  Result<std::unique_lock<Latch>> LockExclusive(SegmentId seg, int wait_ms);
  // Unavailable (55006): `seg`'s latch was not free within `waited_ms`.
  static Status InUse(SegmentId seg, int waited_ms);

 private:
  Mutex mu_;
  std::map<SegmentId, std::shared_ptr<Latch>> latches_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
