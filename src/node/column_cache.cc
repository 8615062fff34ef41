#include "node/column_cache.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/codec.h"
#include "query/exec/batch_codec.h"
#include "query/exec/row_decode.h"

namespace wattdb::node {

namespace {

// At most what a column batch carries as a dictionary.
constexpr size_t kImageDictionaryValues = 32;
// An image column keeps its encoding if it takes at most this many bytes a row (and 1 KiB).
constexpr size_t kImageEncodingBytesPerRow = 4;

size_t VectorBytes(const exec::Vector& v) {
  size_t n = v.size();
  size_t bytes = n;  // NULL flags
  switch (v.phys()) {
    case exec::PhysType::kInt:
    case exec::PhysType::kDouble:
      return bytes + 8 * n;
    case exec::PhysType::kDecimal:
      return bytes + sizeof(Decimal) * n;
    case exec::PhysType::kText:
      bytes += sizeof(std::string_view) * n + (v.dictionary() ? n : 0);
      for (size_t i = 0; i < n; i++) bytes += v.texts()[i].size();
      return bytes;
    case exec::PhysType::kBoxed:
      return bytes + 64 * n;
    case exec::PhysType::kEmpty:
      return bytes;
  }
  return bytes;
}

// Whether `image` answers for `seg` now: nothing changed since it was built, or only commits
// the segment's recording holds.
bool ImageCurrent(const storage::Segment& seg, const SegmentImage& image) {
  return image.data_version == seg.data_version() || seg.RecentCovers(image.data_version);
}

}  // namespace

std::string SegmentImage::EncodedRow(size_t i) const {
  const exec::Batch& b = batches[i / exec::kBatchRows];
  std::vector<Value> vals;
  vals.reserve(b.cols.size());
  for (const auto& c : b.cols) vals.push_back(c.GetValue(i % exec::kBatchRows));
  std::string row;
  EncodeRow(vals, &row);
  return row;
}

namespace {

// Bytes [from, from + 8) of s as a big-endian number, the bytes past its end taken as zero:
// of two strings equal before `from`, the one with the smaller head is the smaller (equal
// heads decide nothing).
uint64_t HeadOf(std::string_view s, size_t from) {
  unsigned char b[8] = {};
  if (s.size() > from) std::memcpy(b, s.data() + from, std::min<size_t>(8, s.size() - from));
  uint64_t x;
  std::memcpy(&x, b, 8);
  return __builtin_bswap64(x);
}

// k's order against the prefix every key of `image` (rows > 0) begins with; 0 if k begins
// with it too, and then *head is k's head.
int Probe(const SegmentImage& image, std::string_view k, uint64_t* head) {
  int c = k.substr(0, image.prefix).compare(image.key(0).substr(0, image.prefix));
  if (c == 0) *head = HeadOf(k, image.prefix);
  return c;
}

// Whether key i < k, for a k that begins with the prefix and has head `head`.
bool Below(const SegmentImage& image, size_t i, std::string_view k, uint64_t head) {
  uint64_t h = image.key_heads[i];
  return h != head ? h < head : image.key(i) < k;
}

// The first row in [lo, hi) whose key is >= k, given rows before lo below k and row hi (if
// below rows) not.
size_t Search(const SegmentImage& image, size_t lo, size_t hi, std::string_view k, uint64_t head) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (Below(image, mid, k, head)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

void SegmentImage::IndexKeys() {
  prefix = 0;
  key_heads.clear();
  if (rows == 0) return;
  // Keys in order: every key shares what the first and the last share.
  std::string_view first = key(0), last = key(rows - 1);
  while (prefix < first.size() && prefix < last.size() && first[prefix] == last[prefix]) prefix++;
  key_heads.resize(rows);
  for (size_t i = 0; i < rows; i++) key_heads[i] = HeadOf(key(i), prefix);
  head_blocks.clear();
  for (size_t i = 0; i < rows; i += kHeadBlock) head_blocks.push_back(key_heads[i]);
}

size_t SegmentImage::LowerBound(std::string_view k) const {
  if (rows == 0) return 0;
  uint64_t head = 0;
  if (int c = Probe(*this, k, &head); c != 0) return c < 0 ? 0 : rows;
  // Rows before lo have smaller heads (below k), rows from hi on larger ones (above it): the
  // keys themselves are compared only between. The first head >= k's lies in the block
  // before the first block that begins with one (or begins that block).
  const uint64_t* h = key_heads.data();
  size_t b = std::lower_bound(head_blocks.begin(), head_blocks.end(), head) - head_blocks.begin();
  size_t first = b == 0 ? 0 : (b - 1) * kHeadBlock;
  size_t lo = std::lower_bound(h + first, h + std::min(rows, b * kHeadBlock), head) - h;
  size_t hi = lo;
  for (size_t step = 1; hi < rows && h[hi] == head; step <<= 1)
    hi = std::min(rows, hi + step);  // gallops
  hi = std::upper_bound(h + lo, h + hi, head) - h;
  return Search(*this, lo, hi, k, head);
}

size_t SegmentImage::LowerBoundFrom(size_t from, std::string_view k) const {
  if (from >= rows) return rows;
  uint64_t head = 0;
  if (int c = Probe(*this, k, &head); c != 0) return c < 0 ? from : rows;
  // Keys before lo are < k; probe gallops from, from + 1, from + 2, from + 4, ...
  size_t lo = from, probe = from;
  for (size_t step = 1; probe < rows && Below(*this, probe, k, head); step <<= 1) {
    lo = probe + 1;
    probe = from + step;
  }
  return Search(*this, lo, std::min(probe, rows), k, head);
}

ColumnCache::ColumnCache(size_t budget_bytes, int64_t quiet_micros, const Clock& clock)
    : budget_(budget_bytes), quiet_micros_(quiet_micros), clock_(clock) {}

Result<std::shared_ptr<const SegmentImage>> ColumnCache::Get(storage::SegmentStore& store,
                                                             const storage::SegmentRef& seg,
                                                             Timestamp read_ts, bool may_build) {
  if (before_get_) before_get_();
  return Lookup(store, seg, read_ts, may_build, /*warm=*/false);
}

Result<int> ColumnCache::Warm(storage::SegmentStore& store, int max_builds) {
  if (budget_ == 0) return 0;
  int built = 0;
  for (const auto& info : store.List()) {
    if (built >= max_builds) break;
    auto seg = store.Get(info.meta.id);
    if (!seg.ok() || (*seg)->data_version() == 0) continue;  // gone, or not written since start
    bool now_built = false;
    RETURN_NOT_OK(Lookup(store, *seg, std::numeric_limits<Timestamp>::max(), /*may_build=*/true,
                         /*warm=*/true, &now_built)
                      .status());
    built += now_built;
  }
  return built;
}

Result<std::shared_ptr<const SegmentImage>> ColumnCache::Lookup(storage::SegmentStore& store,
                                                                const storage::SegmentRef& seg,
                                                                Timestamp read_ts, bool may_build,
                                                                bool warm, bool* did_build) {
  if (budget_ == 0) return std::shared_ptr<const SegmentImage>();
  SegmentId id = seg->meta().id;
  uint64_t version = seg->data_version();
  {
    MutexLock l(mu_);
    bool build = false;
    auto image = LookupLocked(seg, id, version, read_ts, may_build, warm, &build);
    if (!build) return image;
  }
  auto built = Build(store, seg);
  MutexLock l(mu_);
  return TakeBuiltLocked(seg, id, version, read_ts, warm, did_build, std::move(built));
}

std::shared_ptr<const SegmentImage> ColumnCache::LookupLocked(const storage::SegmentRef& seg,
                                                              SegmentId id, uint64_t version,
                                                              Timestamp read_ts, bool may_build,
                                                              bool warm, bool* build) {
  if (++gets_ % 256 == 0) PruneLocked();
  Entry& e = entries_[id];
  if (e.seg.lock() != seg) {
    DropImageLocked(e);
    e = Entry{seg, nullptr, version, clock_.NowMicros()};
  }
  if (e.image && !ImageCurrent(*seg, *e.image)) DropImageLocked(e);
  bool refresh = false;
  if (e.image && warm) {
    // An image whose recording of later commits has grown is built anew if it is read (reads
    // merge fewer rows, and the recording stays within its bound), dropped if not. So is one
    // whose segment went quiet with kQuietRefreshBytes of commits recorded: every read would
    // look them up until the next commit; one build takes them in.
    size_t recorded = seg->recent_bytes();
    if (e.building || recorded == 0) return e.image;
    int64_t now = clock_.NowMicros();
    e.See(version, now);
    bool idle = now - e.last_use >= kIdleMicros;
    bool quiet = now - e.seen_at >= quiet_micros_;
    if (recorded < kRefreshBytes && (idle || !quiet || recorded < kQuietRefreshBytes))
      return e.image;
    if (idle) {
      DropImageLocked(e);
      return std::shared_ptr<const SegmentImage>();
    }
    refresh = true;
  }
  if (e.image && !refresh) {
    if (read_ts < e.image->newest_ts) {
      stats_.misses++;
      return std::shared_ptr<const SegmentImage>();
    }
    e.last_use = clock_.NowMicros();
    stats_.hits++;
    return e.image;
  }
  int64_t now = clock_.NowMicros();
  // Changed only by commits since a reader missed: the recording that miss started holds
  // them, as it would keep an image current; such a segment is as good as quiet.
  bool commits_only = e.probe && seg->RecentCovers(e.probe_base);
  if (e.See(version, now) && !commits_only) e.partial_reads = 0;
  bool quiet = version == 0 || now - e.seen_at >= quiet_micros_;
  bool settled = quiet || commits_only;
  if (!warm) {
    e.missed = true;
    e.last_miss = now;
  }
  if (!settled && !warm && !e.building && RoomLocked()) {
    e.probe = true;
    e.probe_base = seg->ArmRecent();
  }
  if (settled && !may_build) may_build = ++e.partial_reads >= kPartialReadsBeforeImage;
  if (warm && !quiet && (!e.missed || now - e.last_miss >= kIdleMicros))
    may_build = false;  // no reader lately
  if (!refresh &&
      (!may_build || !settled || e.building || e.failed_version == version || !RoomLocked())) {
    if (!warm) stats_.misses++;
    return std::shared_ptr<const SegmentImage>();
  }
  e.building = true;
  e.probe = false;  // the build records anew
  *build = true;
  return std::shared_ptr<const SegmentImage>();
}

Result<std::shared_ptr<const SegmentImage>> ColumnCache::TakeBuiltLocked(
    const storage::SegmentRef& seg, SegmentId id, uint64_t version, Timestamp read_ts, bool warm,
    bool* did_build, Result<std::shared_ptr<SegmentImage>> built) {
  auto it = entries_.find(id);
  bool ours = it != entries_.end() && it->second.seg.lock() == seg;
  if (ours) it->second.building = false;
  if (!built.ok()) return built.status();
  std::shared_ptr<SegmentImage> image = std::move(*built);
  if (!image) {
    if (ours) it->second.failed_version = version;
    if (!warm) stats_.misses++;
    return std::shared_ptr<const SegmentImage>();
  }
  stats_.builds++;
  if (did_build) *did_build = true;
  // Kept only if nothing changed meanwhile and it fits; this scan may read it either way,
  // if it answers read_ts (the version was read before the image's snapshot was taken).
  bool current = ImageCurrent(*seg, *image);
  if (ours && current) {
    ForgetImageLocked(it->second);  // the one it refreshes, if still there
    it->second.image = image;
    it->second.last_use = clock_.NowMicros();
    stats_.bytes += image->bytes;
    stats_.images++;
    EvictLocked(id);
  }
  if (!(ours && current))
    seg->DisarmRecent(image->data_version);  // not kept: nothing to record for
  if (read_ts < image->newest_ts || !current) {
    if (!warm) stats_.misses++;
    return std::shared_ptr<const SegmentImage>();
  }
  if (!warm) stats_.hits++;
  return std::shared_ptr<const SegmentImage>(std::move(image));
}

Result<std::shared_ptr<SegmentImage>> ColumnCache::Build(storage::SegmentStore& store,
                                                         const storage::SegmentRef& seg) {
  auto image = std::make_shared<SegmentImage>();
  // Commits from here on are recorded (before the scan's view is taken): the image answers
  // for later data versions with them merged in.
  image->data_version = seg->ArmRecent();
  struct Disarm {  // unless an image comes out
    const storage::SegmentRef& seg;
    uint64_t base;
    bool armed = true;
    ~Disarm() {
      if (armed) seg->DisarmRecent(base);
    }
  } disarm{seg, image->data_version};
  storage::SegmentMeta meta = seg->meta();
  // The scan checks the range under the store's lock its view is taken under: the image holds
  // exactly [meta.lo, meta.hi).
  ASSIGN_OR_RETURN(auto scan,
                   store.Scan(meta.id, meta.lo, meta.hi, std::numeric_limits<Timestamp>::max()));
  if (scan->segment() != seg.get()) return std::shared_ptr<SegmentImage>();  // replaced meanwhile
  image->lo = meta.lo;
  image->hi = meta.hi;
  bool uniform = true;
  bool more = true;
  while (more && uniform) {
    ASSIGN_OR_RETURN(
        more,
        scan->Visit(exec::kBatchRows, SIZE_MAX, [&](std::string_view key, std::string_view row) {
          if (image->width == 0) {
            ASSIGN_OR_RETURN(image->width, exec::EncodedRowWidth(row));
          }
          if (image->batches.empty() || image->batches.back().rows == exec::kBatchRows) {
            image->batches.emplace_back();
            image->batches.back().Reset(image->width);
            for (auto& c : image->batches.back().cols) c.Reserve(exec::kBatchRows);
          }
          Status st = exec::AppendEncodedRow(row, &image->batches.back());
          if (!st.ok()) {  // another width (or undecodable): this segment is read from RocksDB
            uniform = false;
            return Status::OK();
          }
          image->key_bytes.append(key);
          image->key_ends.push_back(static_cast<uint32_t>(image->key_bytes.size()));
          image->row_ts.push_back(scan->visit_ts());
          image->rows++;
          return Status::OK();
        }));
  }
  if (!uniform || image->key_bytes.size() > std::numeric_limits<uint32_t>::max()) {
    return std::shared_ptr<SegmentImage>();
  }
  // A text column of few distinct values in a batch carries their dictionary (functions and
  // groupings work per value), and a column whose encoding for a column batch is small
  // (packed integers, a dictionary's codes) keeps it: a scan that ships the whole batch sends
  // it as it is.
  image->nulls_in.reserve(image->batches.size() * image->width);
  for (auto& b : image->batches) {
    for (auto& c : b.cols) {
      image->nulls_in.push_back(c.HasNulls());
      if (auto d = exec::FindDictionary(c, b.rows, kImageDictionaryValues))
        c.AttachDictionary(std::move(d));
      // (Doubles, decimals and texts without a dictionary take more: not tried.)
      if (c.phys() != exec::PhysType::kInt && c.phys() != exec::PhysType::kEmpty && !c.dictionary())
        continue;
      auto e = std::make_shared<std::string>();
      exec::EncodeColumn(c, b.rows, e.get());
      if (e->size() <= kImageEncodingBytesPerRow * b.rows + 1024) {
        e->shrink_to_fit();
        image->encoded_bytes += e->size();
        c.AttachEncoding(std::move(e));
      }
    }
  }
  disarm.armed = false;
  image->newest_ts = scan->newest_ts();
  image->IndexKeys();
  image->bytes = sizeof(SegmentImage) + image->key_bytes.size() + 21 * image->key_ends.size();
  for (const auto& b : image->batches) {
    for (const auto& c : b.cols) image->bytes += VectorBytes(c);
  }
  image->bytes += image->encoded_bytes + image->nulls_in.size();
  return image;
}

void ColumnCache::DropImageLocked(Entry& e) {
  if (!e.image) return;
  if (storage::SegmentRef seg = e.seg.lock()) seg->DisarmRecent(e.image->data_version);
  ForgetImageLocked(e);
}

void ColumnCache::ForgetImageLocked(Entry& e) {
  if (!e.image) return;
  stats_.bytes -= e.image->bytes;
  stats_.images--;
  e.image.reset();
}

void ColumnCache::EvictLocked(SegmentId keep) {
  PruneLocked();
  int64_t idle_before = clock_.NowMicros() - kIdleMicros;
  while (stats_.bytes > budget_) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      if (!e.image || it->first == keep || e.last_use > idle_before) continue;
      if (victim == entries_.end() || e.last_use < victim->second.last_use) victim = it;
    }
    if (victim == entries_.end()) return;
    DropImageLocked(victim->second);
  }
}

bool ColumnCache::RoomLocked() const {
  if (stats_.bytes < budget_) return true;
  int64_t idle_before = clock_.NowMicros() - kIdleMicros;
  for (const auto& [id, e] : entries_) {
    if (e.image && e.last_use <= idle_before) return true;
  }
  return false;
}

void ColumnCache::PruneLocked() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    storage::SegmentRef seg = it->second.seg.lock();
    if (!seg && !it->second.building) {  // dropped or moved away
      DropImageLocked(it->second);
      it = entries_.erase(it);
      continue;
    }
    if (seg && it->second.image && !ImageCurrent(*seg, *it->second.image)) {
      DropImageLocked(it->second);
    }
    ++it;
  }
}

ColumnCacheStats ColumnCache::stats() const {
  MutexLock l(mu_);
  return stats_;
}

}  // namespace wattdb::node
