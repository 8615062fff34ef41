#include "node/segment_rows.h"

#include <algorithm>

#include "common/codec.h"
#include "query/exec/row_decode.h"

namespace wattdb::node {

Result<std::unique_ptr<SegmentRows>> SegmentRows::Open(storage::SegmentStore& store,
                                                       Participant& participant,
                                                       const ScanRequest& req, ColumnCache* cache) {
  // Index scans read rows anywhere in the segment; the transaction's own writes in the range
  // are read with the wait (one hold of the participant's lock).
  std::unique_ptr<SegmentRows> s(new SegmentRows());
  const bool own = req.txn != 0 && !req.index;
  if (!req.locked) {
    RETURN_NOT_OK(participant.AwaitReadable(req.segment, req.index ? "" : req.lo,
                                            req.index ? "" : req.hi, req.read_ts, req.txn,
                                            own ? &s->pending_ : nullptr));
  } else if (own) {
    s->pending_ = participant.PendingWrites(req.txn, req.segment, req.lo, req.hi);
  }
  // A point lookup of a key the transaction wrote reads its own write, whatever storage holds
  // (stored keys are prefix-free: the range holds that key alone).
  if (s->pending_.size() == 1 && s->pending_.begin()->first == req.lo &&
      storage::NarrowRange(req.lo, req.hi)) {
    ASSIGN_OR_RETURN(s->seg_, store.GetCovering(req.segment, req.lo, req.hi));
    storage::WriteOp& own = s->pending_.begin()->second;
    if (own.kind == storage::VersionKind::kPut)
      s->cached_ = storage::ScanRow{req.lo, std::move(own.row)};
    s->pending_.clear();
    return s;
  }
  const bool point =
      !req.index && s->pending_.empty() && !req.lo.empty() && storage::NarrowRange(req.lo, req.hi);
  if (point || (cache && !req.index && s->pending_.empty())) {
    ASSIGN_OR_RETURN(s->seg_, store.GetCovering(req.segment, req.lo, req.hi));
  }
  // A point lookup whose key's newest version is cached and visible at the read timestamp
  // (see storage/newest_rows.h): no storage read.
  if (point) {
    uint64_t seq = s->seg_->write_seq();  // before the entry: the check a prepare makes of it
    std::optional<storage::NewestRow> newest = s->seg_->newest().Get(req.lo);
    if (newest && newest->ts <= req.read_ts) {
      s->seen_ =
          storage::SeenLatest{s->seg_.get(), seq, req.lo, {true, newest->ts, newest->deleted}};
      if (!newest->deleted) {
        s->seen_->has_row = true;
        s->seen_->row = newest->row;
        s->cached_ = storage::ScanRow{req.lo, std::move(newest->row)};
      }
      s->seg_->counters().newest_hits++;
      return s;
    }
  }
  if (cache && !req.index && s->pending_.empty()) {
    storage::SegmentMeta meta = s->seg_->meta();
    bool whole = req.lo == meta.lo && req.hi == meta.hi;
    uint64_t seq = s->seg_->write_seq();  // before the image and its recording are read
    ASSIGN_OR_RETURN(s->image_, cache->Get(store, s->seg_, req.read_ts, whole));
    // The range was checked before the image was taken: a split in between leaves an image
    // (built since) of the part that stayed, which would answer without the rows that left.
    if (s->image_ && !s->image_->Covers(req.lo, req.hi)) {
      return Status::Stale(
          fmt::format("segment {} no longer covers the requested range (it split)", req.segment));
    }
    if (s->image_) {
      s->pos_ = s->image_->LowerBound(req.lo);
      s->end_ = req.hi.empty() ? s->image_->rows : s->image_->LowerBoundFrom(s->pos_, req.hi);
      // A key the image holds is a stored key: the point range holds it alone.
      bool lo_alone = point && s->pos_ < s->end_ && s->image_->key(s->pos_) == req.lo;
      if (!s->ReadRecent(req, lo_alone)) s->image_.reset();
    }
    if (s->image_) {
      if (point) s->SeeImageRow(req.lo, seq);
      return s;
    }
  }
  if (req.index) {
    ASSIGN_OR_RETURN(s->scanner_, store.ScanIndex(req.segment, req.lo, req.hi, req.index,
                                                  req.index_lo, req.index_hi, req.read_ts));
  } else {
    ASSIGN_OR_RETURN(s->scanner_, store.Scan(req.segment, req.lo, req.hi, req.read_ts));
  }
  // A transaction sees its own pending writes on top of its snapshot (pending_, above). Index
  // scans: committed entries of rows the transaction wrote are hidden, and its pending rows
  // are keyed by their entries.
  if (req.txn != 0 && req.index) {
    for (const auto& ix : s->scanner_->meta().indexes) {
      if (ix.id == req.index) s->spec_ = ix;
    }
    std::vector<Value> vals;
    for (auto& [pk, op] : participant.PendingWrites(req.txn, req.segment, "", "")) {
      s->hidden_pks_.insert(pk);
      if (op.kind != storage::VersionKind::kPut || !DecodeRow(op.row, &vals).ok()) continue;
      std::string ikey = EncodeIndexKey(s->spec_, vals);
      if (ikey < req.index_lo || (!req.index_hi.empty() && ikey >= req.index_hi)) continue;
      s->pending_[ikey + pk] = std::move(op);
    }
  }
  s->next_pending_ = s->pending_.begin();
  return s;
}

// The primary key inside an index scan's entry key: what follows the row's index key.
bool SegmentRows::Hidden(const storage::ScanRow& r) const {
  if (hidden_pks_.empty()) return false;
  std::vector<Value> vals;
  if (!DecodeRow(r.row, &vals).ok()) return false;
  std::string ikey = EncodeIndexKey(spec_, vals);
  return r.key.size() >= ikey.size() && hidden_pks_.count(r.key.substr(ikey.size())) > 0;
}

void SegmentRows::EmitPendingBefore(const std::string* key, std::vector<storage::ScanRow>* out) {
  while (next_pending_ != pending_.end() && (!key || next_pending_->first < *key)) {
    if (next_pending_->second.kind == storage::VersionKind::kPut) {
      out->push_back({next_pending_->first, next_pending_->second.row});
    }
    ++next_pending_;
  }
}

Result<bool> SegmentRows::Next(size_t max_rows, size_t max_bytes,
                               std::vector<storage::ScanRow>* out) {
  out->clear();
  if (!scanner_) {  // a cached point lookup
    if (!cached_) return false;
    out->push_back(std::move(*cached_));
    cached_.reset();
    seg_->counters().rows_read++;
    return true;
  }
  while (out->empty()) {
    if (exhausted_ && next_pending_ == pending_.end()) return false;
    rows_.clear();
    if (!exhausted_) {
      ASSIGN_OR_RETURN(bool more, scanner_->Next(max_rows, &rows_, max_bytes));
      exhausted_ = !more;
    }
    for (auto& r : rows_) {
      EmitPendingBefore(&r.key, out);
      if (next_pending_ != pending_.end() && next_pending_->first == r.key) {
        if (next_pending_->second.kind == storage::VersionKind::kPut)
          out->push_back({r.key, next_pending_->second.row});
        ++next_pending_;
        continue;
      }
      if (Hidden(r)) continue;
      out->push_back(std::move(r));
    }
    if (exhausted_) EmitPendingBefore(nullptr, out);
  }
  return true;
}

Result<bool> SegmentRows::Visit(size_t max_rows, size_t max_bytes,
                                const storage::SegmentScanner::RowVisitor& fn) {
  if (scanner_ && pending_.empty() && hidden_pks_.empty())
    return scanner_->Visit(max_rows, max_bytes, fn);
  ASSIGN_OR_RETURN(bool more, Next(max_rows, max_bytes, &visit_buf_));
  for (const auto& r : visit_buf_) RETURN_NOT_OK(fn(r.key, r.row));
  return more;
}

bool SegmentRows::ReadRecent(const ScanRequest& req, bool lo_alone) {
  // With the recording over, the image still answers if nothing was committed since it was
  // built: a commit at or below read_ts was applied before this read began.
  if (!seg_->RecentAt(image_->data_version, req.lo, req.hi, req.read_ts, &recent_, lo_alone)) {
    return seg_->data_version() == image_->data_version;
  }
  for (const auto& r : recent_) {
    if (r.deleted) continue;
    auto width = exec::EncodedRowWidth(r.row);
    if (!width.ok() || *width != image_->width) return false;
  }
  return true;
}

std::optional<storage::SeenLatest> SegmentRows::first_seen() const {
  if (scanner_) return scanner_->first_seen();
  std::optional<storage::SeenLatest> seen = seen_;
  if (seen && seen_image_row_ != SIZE_MAX) seen->row = image_->EncodedRow(seen_image_row_);
  return seen;
}

void SegmentRows::SeeImageRow(const std::string& key, uint64_t seq) {
  // A key the recording lacks was not written since the image was built: the image's
  // version is its newest. (A key neither holds may have a deletion the image left out.)
  storage::SeenLatest seen{seg_.get(), seq, key};
  if (seg_->RecentLatest(image_->data_version, key, &seen.latest, &seen.row)) {
    seen.recent_base = image_->data_version;
  } else if (seg_->data_version() != image_->data_version) {
    return;
  }
  if (!seen.latest.found) {
    if (pos_ >= end_ || image_->key(pos_) != key) return;
    seen.latest = {true, image_->row_ts[pos_], false};
    seen_image_row_ = pos_;  // encoded if a writer asks (first_seen), not for every read
  }
  seen.has_row = !seen.latest.deleted;
  seen_ = std::move(seen);
}

Result<bool> SegmentRows::NextMergedBatch(const std::vector<bool>* used, exec::Batch* out,
                                          std::string* last_key) {
  // (An image without rows has no width; the recording's rows are checked as they are appended.)
  if (image_->rows > 0 && out->cols.size() != image_->width) {
    return Status::Corruption("row width does not match the table");
  }
  for (auto& c : out->cols) c.Clear();
  out->rows = 0;
  size_t run = pos_;  // image rows [run, pos_) are taken, not yet copied
  auto copy_run = [&] {
    while (run < pos_) {
      const exec::Batch& src = image_->batches[run / exec::kBatchRows];
      size_t first = run % exec::kBatchRows;
      size_t n = std::min(pos_ - run, exec::kBatchRows - first);
      sel_.resize(n);
      for (size_t i = 0; i < n; i++) sel_[i] = static_cast<uint32_t>(first + i);
      for (size_t c = 0; c < out->cols.size(); c++) {
        if (used && c < used->size() && !(*used)[c]) continue;  // PadUnused below
        out->cols[c].Gather(src.cols[c], sel_.data(), n);
      }
      out->rows += n;
      run += n;
    }
  };
  std::string_view last;
  size_t taken = 0;
  while (taken < exec::kBatchRows && (pos_ < end_ || next_recent_ < recent_.size())) {
    const storage::RecentRow* r = next_recent_ < recent_.size() ? &recent_[next_recent_] : nullptr;
    int cmp = !r ? -1 : pos_ >= end_ ? 1 : image_->key(pos_).compare(r->key);
    if (cmp < 0) {  // an image row no commit since replaced
      last = image_->key(pos_++);
      taken++;
      continue;
    }
    copy_run();
    next_recent_++;
    if (cmp == 0) pos_++;  // replaced (or deleted) since the image was built
    run = pos_;
    if (r->deleted) continue;
    RETURN_NOT_OK(exec::AppendEncodedRow(r->row, out, used));
    last = r->key;
    taken++;
  }
  copy_run();
  if (used) exec::PadUnused(*used, out);
  if (out->rows == 0) return false;
  last_key->assign(last);
  seg_->counters().rows_read += out->rows;
  return true;
}

Result<bool> SegmentRows::NextBatch(const std::vector<bool>* used, exec::Batch* out,
                                    std::string* last_key) {
  if (next_recent_ < recent_.size()) return NextMergedBatch(used, out, last_key);
  size_t n = std::min(exec::kBatchRows - pos_ % exec::kBatchRows, end_ - pos_);
  if (pos_ >= end_) n = 0;
  if (n > 0 && out->cols.size() != image_->width)
    return Status::Corruption("row width does not match the table");
  out->rows = n;
  if (n == 0) {
    for (auto& c : out->cols) c.Clear();
    return false;
  }
  const exec::Batch& src = image_->batches[pos_ / exec::kBatchRows];
  size_t first = pos_ % exec::kBatchRows;
  bool whole = first == 0 && n == src.rows;
  if (!whole) {
    sel_.resize(n);
    for (size_t i = 0; i < n; i++) sel_[i] = static_cast<uint32_t>(first + i);
  }
  for (size_t c = 0; c < out->cols.size(); c++) {
    exec::Vector& col = out->cols[c];
    if (used && c < used->size() && !(*used)[c]) {
      col.Clear();
      col.AppendNulls(n);
    } else if (whole) {
      size_t at = pos_ / exec::kBatchRows * image_->width + c;
      bool no_nulls = at < image_->nulls_in.size() && !image_->nulls_in[at];
      col.Share(std::shared_ptr<const exec::Vector>(image_, &src.cols[c]), no_nulls);  // no copy
    } else {
      col.Clear();
      col.Gather(src.cols[c], sel_.data(), n);
    }
  }
  pos_ += n;
  last_key->assign(image_->key(pos_ - 1));
  seg_->counters().rows_read += n;
  return true;
}

}  // namespace wattdb::node
