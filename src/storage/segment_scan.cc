// SegmentScanner, and SegmentStore's scans of a segment's rows or of one of its secondary
// indexes at a snapshot (segment_store.h).
#include <rocksdb/db.h>

#include "common/codec.h"
#include "storage/segment_store.h"
#include "storage/segment_store_util.h"

namespace wattdb::storage {

using internal::FromRocks;

SegmentScanner::~SegmentScanner() {
  // A point lookup of a key that is written often (it has older versions) leaves what it
  // learned for the next one, if nothing was written to the segment since its view was
  // taken (nor being written then).
  if (narrow_ && several_versions_ && quiet_ && first_seen_ &&
      (first_seen_->has_row || first_seen_->latest.deleted)) {
    NewestRow r{first_seen_->latest.ts, first_seen_->latest.deleted, std::move(first_seen_->row)};
    seg_->newest().PutIf(first_seen_->key, std::move(r),
                         [&] { return seg_->write_seq() == write_seq_; });
  }
  it_.reset();
  rows_.reset();
  if (snap_) db_->ReleaseSnapshot(snap_);
}

Result<bool> SegmentScanner::Visit(size_t max_rows, size_t max_bytes, const RowVisitor& fn) {
  size_t produced = 0, bytes = 0;
  while (!done_ && produced < max_rows && bytes < max_bytes) {
    if (!it_->Valid()) {
      RETURN_NOT_OK(FromRocks(it_->status(), "scan"));
      done_ = true;
      break;
    }
    rocksdb::Slice k = it_->key();
    if (k.size() < 8) return Status::Corruption("stored key shorter than its version suffix");
    std::string_view sk(k.data(), k.size());
    std::string_view user = UserKey(sk);
    if (user >= hi_) {
      done_ = true;
      break;
    }
    if (have_last_ && user == last_key_) {  // an older version of a key already decided
      if (narrow_ && hi_ <= PrefixSuccessor(last_key_)) {
        several_versions_ = true;
        done_ = true;
        break;
      }
      SkipOlderVersions();
      continue;
    }
    if (record_first_) {  // a key's first entry met is its newest version
      record_first_ = false;
      if (it_->value().empty()) return Status::Corruption("stored value without a version kind");
      first_seen_.emplace();
      first_seen_->segment = seg_.get();
      first_seen_->write_seq = write_seq_;
      first_seen_->key.assign(user.substr(strip_));
      first_seen_->latest = {true, VersionTs(sk),
                             static_cast<VersionKind>(it_->value()[0]) == VersionKind::kDelete};
      if (narrow_ && !first_seen_->latest.deleted) {
        first_seen_->has_row = true;
        first_seen_->row.assign(it_->value().data() + 1, it_->value().size() - 1);
      }
    }
    if (VersionTs(sk) > read_ts_) {  // too new for this snapshot; an older version may follow
      SkipNewerVersions(user);
      continue;
    }
    last_key_.assign(user);
    have_last_ = true;
    newest_ts_ = std::max(newest_ts_, VersionTs(sk));
    rocksdb::Slice v = it_->value();
    if (v.empty()) return Status::Corruption("stored value without a version kind");
    if (static_cast<VersionKind>(v[0]) == VersionKind::kPut) {
      std::string_view payload(v.data() + 1, v.size() - 1);
      if (!rows_) {
        std::string_view key = std::string_view(last_key_).substr(strip_);
        visit_ts_ = VersionTs(sk);
        RETURN_NOT_OK(fn(key, payload));
        produced++;
        bytes += key.size() + payload.size();
      } else {  // an index entry: payload is the primary key of its row
        std::string rk = RowUserKey(payload);
        rows_->Seek(MvccKey(rk, read_ts_));
        if (rows_->Valid() && rows_->key().size() >= 8 &&
            UserKey(rows_->key().ToStringView()) == rk && !rows_->value().empty() &&
            static_cast<VersionKind>(rows_->value()[0]) == VersionKind::kPut) {
          rocksdb::Slice rv = rows_->value();
          std::string_view key = std::string_view(last_key_).substr(strip_);
          std::string_view row(rv.data() + 1, rv.size() - 1);
          RETURN_NOT_OK(fn(key, row));
          produced++;
          bytes += key.size() + row.size();
        }
        RETURN_NOT_OK(FromRocks(rows_->status(), "index scan row"));
      }
    }
    it_->Next();
  }
  seg_->counters().rows_read += produced;
  if (old_version_work_ > 0) {
    seg_->counters().old_version_work += old_version_work_;
    old_version_work_ = 0;
  }
  return !done_ || produced > 0;
}

// A hot row has thousands of versions until compaction drops them: a few steps of Next, then
// one seek past the rest (keys are prefix-free, so the user key's successor follows them all).
void SegmentScanner::SkipOlderVersions() {
  for (int i = 0; i < kNextBeforeSeek; i++) {
    old_version_work_++;
    it_->Next();
    if (!it_->Valid() || it_->key().size() < 8 || UserKey(it_->key().ToStringView()) != last_key_)
      return;
  }
  old_version_work_ += kSeekWork;
  it_->Seek(PrefixSuccessor(last_key_));
}

void SegmentScanner::SkipNewerVersions(std::string_view user_key) {
  std::string user(user_key);  // the iterator's buffer moves on
  for (int i = 0; i < kNextBeforeSeek; i++) {
    it_->Next();
    if (!it_->Valid() || it_->key().size() < 8) return;
    std::string_view k = it_->key().ToStringView();
    if (UserKey(k) != user || VersionTs(k) <= read_ts_) return;
  }
  it_->Seek(MvccKey(user, read_ts_));
}

Result<bool> SegmentScanner::Next(size_t max_rows, std::vector<ScanRow>* out, size_t max_bytes) {
  return Visit(max_rows, max_bytes, [out](std::string_view key, std::string_view row) {
    out->push_back(ScanRow{std::string(key), std::string(row)});
    return Status::OK();
  });
}

Result<std::unique_ptr<SegmentScanner>> SegmentStore::OpenScanner(SegmentId id,
                                                                  std::string_view seg_lo,
                                                                  std::string_view seg_hi,
                                                                  uint32_t index,
                                                                  Timestamp read_ts) const {
  std::unique_ptr<SegmentScanner> sc(new SegmentScanner());
  // The view is taken under mu_, consistent with the range check: a row scan's iterator is
  // its own view; an index scan's two iterators share a snapshot.
  ReaderLock l(mu_);
  ASSIGN_OR_RETURN(SegmentRef seg, GetCoveringLocked(id, seg_lo, seg_hi));
  if (index && !seg->HasIndex(index)) {
    return Status::InvalidArgument(fmt::format("segment {} has no index {} (dropped)", id, index));
  }
  sc->db_ = db_.get();
  sc->seg_ = std::move(seg);
  sc->write_seq_ =
      sc->seg_->QuietWriteSeq(&sc->quiet_);  // before the view: a write after it changes it
  rocksdb::ReadOptions ro;
  if (index) {
    sc->snap_ = db_->GetSnapshot();
    ro.snapshot = sc->snap_;
  }
  sc->it_.reset(db_->NewIterator(ro, sc->seg_->cf()));
  if (index) sc->rows_.reset(db_->NewIterator(ro, sc->seg_->cf()));
  l.Unlock();
  sc->read_ts_ = read_ts;
  return sc;
}

Result<std::unique_ptr<SegmentScanner>> SegmentStore::Scan(SegmentId id, std::string_view lo,
                                                           std::string_view hi,
                                                           Timestamp read_ts) const {
  ASSIGN_OR_RETURN(auto sc, OpenScanner(id, lo, hi, 0, read_ts));
  sc->hi_ = hi.empty() ? std::string(1, kIndexSpace) : RowUserKey(hi);
  sc->strip_ = 1;
  std::string start = RowUserKey(lo);
  sc->narrow_ = NarrowRange(start, sc->hi_);
  sc->record_first_ = true;
  sc->it_->Seek(start);
  return sc;
}

Result<std::unique_ptr<SegmentScanner>> SegmentStore::ScanIndex(
    SegmentId id, std::string_view seg_lo, std::string_view seg_hi, uint32_t index,
    std::string_view lo, std::string_view hi, Timestamp read_ts) const {
  ASSIGN_OR_RETURN(auto sc, OpenScanner(id, seg_lo, seg_hi, index, read_ts));
  std::string prefix = IndexSpacePrefix(index);
  sc->hi_ = hi.empty() ? PrefixSuccessor(prefix) : prefix + std::string(hi);
  sc->strip_ = prefix.size();
  sc->it_->Seek(prefix + std::string(lo));
  return sc;
}

}  // namespace wattdb::storage
