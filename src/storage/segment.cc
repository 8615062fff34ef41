// Segment: one segment's column family handle, metadata, counters, data version and the
// recording of commits that keeps derived state (column images) current.
#include <rocksdb/db.h>

#include "storage/segment_store.h"

namespace wattdb::storage {

Segment::~Segment() { db_->DestroyColumnFamilyHandle(cf_); }

void Segment::Changed() {
  MutexLock l(change_mu_);
  recent_.Disarm();
  data_version_.fetch_add(1, std::memory_order_acq_rel);
}

void Segment::Committed(Timestamp ts, const std::vector<WriteOp>& ops) {
  MutexLock l(change_mu_);
  if (recent_.armed()) {
    const SegmentId id = id_;
    for (const WriteOp& op : ops) {
      if (op.segment == id) recent_.Record(op.key, ts, op.kind == VersionKind::kDelete, op.row);
    }
  }
  data_version_.fetch_add(1, std::memory_order_acq_rel);
}

uint64_t Segment::ArmRecent() {
  MutexLock l(change_mu_);
  uint64_t v = data_version_.load(std::memory_order_acquire);
  recent_.Arm(v);
  return v;
}

bool Segment::RecentCovers(uint64_t base) const {
  MutexLock l(change_mu_);
  return recent_.Covers(base);
}

bool Segment::RecentAt(uint64_t base, std::string_view lo, std::string_view hi, Timestamp read_ts,
                       std::vector<RecentRow>* out, bool lo_alone) const {
  MutexLock l(change_mu_);
  if (!recent_.Covers(base)) return false;
  if (lo_alone) {
    recent_.VisibleAt(lo, read_ts, out);
  } else {
    recent_.VisibleAt(lo, hi, read_ts, out);
  }
  return true;
}

bool Segment::RecentLatest(uint64_t base, std::string_view key, LatestVersion* latest,
                           std::string* row) const {
  MutexLock l(change_mu_);
  if (!recent_.Covers(base)) return false;
  *latest = LatestVersion{};
  bool deleted = false;
  if (recent_.Latest(key, &latest->ts, &deleted, row)) {
    latest->found = true;
    latest->deleted = deleted;
  }
  return true;
}

void Segment::DisarmRecent(uint64_t base) {
  MutexLock l(change_mu_);
  if (recent_.Covers(base)) recent_.Disarm();
}

size_t Segment::recent_bytes() const {
  MutexLock l(change_mu_);
  return recent_.bytes();
}

}  // namespace wattdb::storage
