#include "rpc/exchange.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/sqlstate.h"
#include "common/thread_cache.h"
#include "query/plan/fragment.h"
#include "rpc/scan_stream.h"

namespace wattdb::rpc {

namespace {

bool Blocking(const plan::PlanNode& p) {
  if (p.kind == plan::PlanNode::Kind::kAggregate || p.kind == plan::PlanNode::Kind::kSort)
    return true;
  return !p.children.empty() && Blocking(*p.children[0]);
}

}  // namespace

std::pair<std::string, std::string> WithinSegment(const std::string& lo, const std::string& hi,
                                                  const std::string& seg_lo,
                                                  const std::string& seg_hi) {
  return {std::max(lo, seg_lo), seg_hi.empty() ? hi : (hi.empty() ? seg_hi : std::min(hi, seg_hi))};
}

Result<std::unique_ptr<ExchangeSource>> ExchangeSource::Open(PartMap& map,
                                                             const plan::PlanNode& exchange,
                                                             Options opts) {
  if (exchange.children.size() != 1) return Status::Internal("exchange without its fragment");
  const plan::PlanNode* scan = plan::LeafScan(*exchange.children[0]);
  if (!scan) return Status::Internal("exchange fragment without a scan");
  std::unique_ptr<ExchangeSource> x(new ExchangeSource(map, opts));
  x->table_ = scan->table;
  x->ncols_ = exchange.types.size();
  x->fragment_root_ = exchange.children[0].get();
  x->blocking_ = Blocking(*exchange.children[0]);
  const std::string& lo = opts.range ? opts.range->first : scan->lo;
  const std::string& hi = opts.range ? opts.range->second : scan->hi;
  auto segments = map.Segments(scan->table, lo, hi);
  x->parts_.reserve(segments.size());
  for (const auto& s : segments) {
    Part& p = x->parts_.emplace_back();  // in place: a moved deque allocates anew for its source
    std::tie(p.lo, p.hi) = WithinSegment(lo, hi, s.lo, s.hi);
  }
  if (x->parts_.size() == 1 || (!opts.prefetch && !x->parts_.empty())) {
    x->inline_ = std::make_unique<PartReader>(*x, x->parts_.front().lo, x->parts_.back().hi);
    return x;
  }
  ThreadCache::Shared().RunCounted(std::min(kMaxInFlight, x->parts_.size()), x->mu_, x->producers_,
                                   x->ended_, [p = x.get()] { p->Produce(); });
  return x;
}

ExchangeSource::~ExchangeSource() {
  {
    MutexLock l(mu_);
    stop_ = true;
    for (auto& part : parts_) part.space->SignalAll();
  }
  cv_.SignalAll();
  window_.SignalAll();
  {
    MutexLock l(mu_);
    // Bounded by the producers' own waits: with stop_ set a Push returns at once, and a
    // segment read ends by its RPC deadline or with its local fragment.
    while (producers_ != 0) ended_.Wait(mu_);
  }
  if (!opts_.stats) return;
  std::vector<const plan::PlanNode*> order;  // the fragment's nodes in pre-order
  std::function<void(const plan::PlanNode&)> walk = [&](const plan::PlanNode& p) {
    order.push_back(&p);
    for (const auto& c : p.children) walk(*c);
  };
  walk(*fragment_root_);
  for (const auto& [node, stats] : node_stats_) {
    for (size_t i = 0; i < stats.size() && i < order.size(); i++)
      (*opts_.stats)[order[i]][node].Add(stats[i]);
  }
}

void ExchangeSource::Produce() {
  while (true) {
    size_t i;
    {
      MutexLock l(mu_);
      // Not too far ahead of the consumer: finished parts wait in memory until read.
      while (!stop_ && next_part_ < parts_.size() && next_part_ >= current_ + 2 * kMaxInFlight) {
        window_.Wait(mu_);
      }
      if (stop_ || next_part_ >= parts_.size()) return;
      i = next_part_++;
    }
    bool handed = false;
    uint64_t t0 = ThreadCpuNanos();
    Status st = RunPart(i, &handed);
    uint64_t spent = ThreadCpuNanos() - t0;
    if (handed) {  // the consumer reads the rest
      MutexLock l(mu_);
      producer_cpu_ += spent;
      continue;
    }
    bool current;
    {
      MutexLock l(mu_);
      producer_cpu_ += spent;
      parts_[i].done = true;
      parts_[i].error = st;
      current = i == current_;
    }
    if (current) cv_.Signal();
  }
}

Status ExchangeSource::RunPart(size_t i, bool* handed) {
  auto reader = std::make_unique<PartReader>(*this, parts_[i].lo, parts_[i].hi);
  while (true) {
    exec::Batch b;
    ASSIGN_OR_RETURN(bool more, reader->Next(&b));
    if (!more) return Status::OK();
    MutexLock l(mu_);
    while (!stop_ && parts_[i].batches.size() >= kBufferedBatches) parts_[i].space->Wait(mu_);
    if (stop_) return Status::OK();
    parts_[i].batches.push_back(std::move(b));
    bool current = i == current_;
    // The part the consumer reads now: it takes the stream, so that the rest of the part's
    // batches go from the wire to its operators on its own thread, without a hand-off and a
    // sleep and wake-up per batch. A blocking fragment's output comes whole anyway.
    if (current && !blocking_) {
      parts_[i].reader = std::move(reader);
      *handed = true;
      taken_over_.fetch_add(1, std::memory_order_relaxed);
      l.Unlock();
      cv_.Signal();  // only the consumer waits on cv_
      return Status::OK();
    }
    l.Unlock();
    if (current) cv_.Signal();
  }
}

Result<bool> ExchangeSource::PartReader::Next(exec::Batch* out) {
  while (true) {
    if (!ready_.empty()) {
      *out = std::move(ready_.front());
      ready_.pop_front();
      return true;
    }
    {
      MutexLock l(x_.mu_);
      if (x_.stop_) return false;
    }
    // Retries (a node away, a segment moved) and connecting (to a node that froze, maybe)
    // wait without looking at the flag.
    if (x_.opts_.cancel && x_.opts_.cancel->load())
      return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
    if (finished_ || (!hi_.empty() && cursor_ >= hi_)) return false;
    Status st;
    bool local = false;  // the segment's whole output is in pending_
    if (!stream_) {
      auto segs = x_.map_.Segments(x_.table_, cursor_, hi_);
      if (segs.empty()) return false;
      seg_ = segs.front();
      auto [lo, hi] = WithinSegment(cursor_, hi_, seg_.lo, seg_.hi);
      pending_.clear();
      node_ = x_.opts_.follower_reads && !leader_only_ ? x_.map_.ReadFrom(seg_) : seg_.node;
      uint64_t follower_epoch = node_ != seg_.node ? seg_.epoch : 0;
      if (x_.map_.IsLocal(node_)) {
        // This process owns the segment: the fragment runs here, its output never on a wire.
        std::vector<exec::OperatorStats> stats;
        ExchangeOptions o = x_.opts_;
        o.follower_epoch = follower_epoch;
        st = x_.map_.RunLocal(
            seg_.id, lo, hi, *x_.fragment_root_, o,
            [&](exec::Batch& out) {
              pending_.push_back(std::move(out));  // taken, not copied
              out = exec::Batch();
              return Status::OK();
            },
            x_.opts_.stats ? &stats : nullptr);
        local = st.ok();
        if (local && !stats.empty()) x_.AddNodeStats(node_, stats);
      } else if (auto client = x_.map_.Client(node_); client.ok()) {
        auto opened = ScanStream::OpenFragment(
            **client, seg_.id, lo, hi, x_.opts_.read_ts, x_.opts_.txn, x_.fragment_root_->Encoded(),
            x_.opts_.work_mem, x_.opts_.params, x_.opts_.stats != nullptr, follower_epoch);
        if (opened.ok()) {
          stream_ = std::move(*opened);
        } else {
          st = opened.status();
        }
      } else {
        st = client.status();
      }
    }
    exec::Batch b;
    bool last = local;
    if (stream_) {
      std::string resume;
      uint64_t cpu = 0;
      std::vector<exec::OperatorStats> stats;
      st = stream_->NextColumns(&b, &resume, &last, &cpu, &stats, x_.opts_.cancel);
      MutexLock l(x_.mu_);
      x_.cpu_[node_] += cpu;
      if (st.ok() && last && !stats.empty()) x_.AddNodeStatsLocked(node_, stats);
      // Keys are prefix-free, so key + "\0" is the smallest key after it.
      if (st.ok() && !x_.blocking_ && !resume.empty()) cursor_ = resume + std::string(1, '\0');
    }
    if (!st.ok()) {
      // A segment that moved or split, or a node briefly away: read the map again and resume
      // (a blocking fragment reruns the whole segment).
      stream_.reset();
      if (node_ != seg_.node && !leader_only_) {
        // A follower that cannot answer (behind a prepare, dropped, away): the leader reads
        // the rest of the segment, at once.
        leader_only_ = true;
        continue;
      }
      if (!x_.map_.Refreshable() && (st.IsStale() || st.IsNotFound())) {
        return Status::Stale(fmt::format(
            "segment {} moved or split while a helper node read it: {}", seg_.id, st.message()));
      }
      RETURN_NOT_OK(ScanRetryBackoff(st, &retries_));
      continue;
    }
    std::optional<exec::Batch> rows;  // to return, once the segment's end is handled
    if (b.rows > 0 && x_.blocking_) {
      pending_.push_back(std::move(b));
    } else if (b.rows > 0) {
      rows = std::move(b);
    }
    if (last) {
      stream_.reset();
      for (auto& p : pending_) ready_.push_back(std::move(p));
      pending_.clear();
      if (seg_.hi.empty() || (!hi_.empty() && seg_.hi >= hi_)) {
        finished_ = true;
      } else {
        cursor_ = std::max(cursor_, seg_.hi);
      }
      retries_ = 0;
      leader_only_ = false;
    }
    if (rows) {
      *out = std::move(*rows);
      return true;
    }
  }
}

void ExchangeSource::AddNodeStats(NodeId node, const std::vector<exec::OperatorStats>& stats) {
  MutexLock l(mu_);
  AddNodeStatsLocked(node, stats);
}

void ExchangeSource::AddNodeStatsLocked(NodeId node,
                                        const std::vector<exec::OperatorStats>& stats) {
  auto& sum = node_stats_[node];
  sum.resize(std::max(sum.size(), stats.size()));
  for (size_t k = 0; k < stats.size(); k++) sum[k].Add(stats[k]);
}

void ExchangeSource::BookNodeCpu() {
  for (auto& [node, ns] : cpu_) map_.BookCpu(node, ns);
  cpu_.clear();
  if (producer_cpu_) map_.BookOtherThreadsCpu(producer_cpu_);
  producer_cpu_ = 0;
}

Result<bool> ExchangeSource::Next(exec::Batch& out) {
  if (inline_) {
    if (opts_.cancel && opts_.cancel->load())
      return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
    auto more = inline_->Next(&out);
    MutexLock l(mu_);
    BookNodeCpu();
    if (more.ok() && *more && out.cols.size() != ncols_)
      return Status::Corruption("a node sent a batch of another width");
    return more;
  }
  MutexLock l(mu_);
  while (true) {
    BookNodeCpu();
    if (current_ >= parts_.size()) return false;
    Part& p = parts_[current_];
    if (!p.batches.empty()) {
      bool was_full = p.batches.size() >= kBufferedBatches;
      out = std::move(p.batches.front());
      p.batches.pop_front();
      if (was_full) p.space->Signal();
      if (out.cols.size() != ncols_)
        return Status::Corruption("a node sent a batch of another width");
      return true;
    }
    if (p.reader) {
      // Handed over by its producer: read here, without the lock (the reader takes it).
      l.Unlock();
      if (opts_.cancel && opts_.cancel->load())
        return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
      auto more = p.reader->Next(&out);
      l.Lock();
      BookNodeCpu();
      if (!more.ok() || !*more) {
        p.reader.reset();
        p.done = true;
        p.error = more.status();
        continue;
      }
      if (out.cols.size() != ncols_)
        return Status::Corruption("a node sent a batch of another width");
      return true;
    }
    if (p.done) {
      RETURN_NOT_OK(p.error);
      current_++;
      window_.SignalAll();
      continue;
    }
    if (opts_.cancel && opts_.cancel->load())
      return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
    // The producers' every receive has a deadline; this wait only checks for cancellation.
    cv_.WaitFor(mu_, std::chrono::milliseconds(100));
  }
}

}  // namespace wattdb::rpc
