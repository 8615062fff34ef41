#include "master/cluster/segment_latches.h"

#include <chrono>

#include <fmt/format.h>

#include "common/sqlstate.h"

namespace wattdb::master {

std::shared_ptr<SegmentLatches::Latch> SegmentLatches::Get(SegmentId seg) {
  MutexLock l(mu_);
  auto& p = latches_[seg];
  if (!p) p = std::make_shared<Latch>();
  return p;
}

Result<std::unique_lock<SegmentLatches::Latch>> SegmentLatches::LockExclusive(SegmentId seg,
                                                                              int wait_ms) {
  std::unique_lock<Latch> excl(*Get(seg), std::chrono::milliseconds(wait_ms));
  if (!excl.owns_lock()) return InUse(seg, wait_ms);
  return excl;
}

Status SegmentLatches::InUse(SegmentId seg, int waited_ms) {
  return Status(
      Status::Code::kUnavailable,
      fmt::format(
          "segment {} is in use by a transaction that did not finish within {} ms; try again", seg,
          waited_ms),
      sqlstate::kObjectInUse);
}

}  // namespace wattdb::master
