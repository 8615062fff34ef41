#include "rpc/gather.h"

#include <chrono>
#include <functional>
#include <tuple>

#include "common/clock.h"
#include "common/sqlstate.h"
#include "common/thread_cache.h"
#include "query/exec/operator.h"
#include "query/plan/fragment.h"

namespace wattdb::rpc {

// The source's map for its parts' exchanges: the same segments and clients; the CPU the nodes
// report is kept until the consumer books it on its own thread.
class GatherSource::CountingMap : public PartMap {
 public:
  CountingMap(GatherSource& g, PartMap& base) : g_(g), base_(base) {}
  std::vector<SegmentPlace> Segments(TableId table, const std::string& lo,
                                     const std::string& hi) override {
    return base_.Segments(table, lo, hi);
  }
  Result<std::shared_ptr<NodeClient>> Client(NodeId node) override { return base_.Client(node); }
  NodeId ReadFrom(const SegmentPlace& s) override { return base_.ReadFrom(s); }
  bool Refreshable() const override { return base_.Refreshable(); }
  void BookCpu(NodeId node, uint64_t cpu_nanos) override {
    MutexLock l(g_.mu_);
    g_.node_cpu_[node] += cpu_nanos;
  }
  bool IsLocal(NodeId node) const override { return base_.IsLocal(node); }
  Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                  const plan::PlanNode& fragment, const ExchangeOptions& opts,
                  const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>* stats) override {
    return base_.RunLocal(seg, lo, hi, fragment, opts, emit, stats);
  }

 private:
  GatherSource& g_;
  PartMap& base_;
};

// A part's scans: its one Exchange, over the part's range, read off the wire by the part.
class GatherSource::PartScans : public exec::ScanProvider {
 public:
  explicit PartScans(GatherSource& g) : g_(g) {}
  Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode&) override {
    return Status::Internal("a gathered subtree reads its table only through its exchange");
  }
  Result<std::unique_ptr<exec::RowSource>> OpenExchange(const plan::PlanNode& exchange,
                                                        const exec::ExecContext& ctx) override {
    ExchangeOptions o = g_.opts_;
    o.prefetch = false;
    o.range = ctx.exchange_range;
    o.cancel = &g_.halt_;
    o.stats = ctx.remote_stats;
    ASSIGN_OR_RETURN(auto x, ExchangeSource::Open(*g_.counting_map_, exchange, o));
    return std::unique_ptr<exec::RowSource>(std::move(x));
  }

 private:
  GatherSource& g_;
};

GatherSource::GatherSource(PartMap& map, const plan::PlanNode& gather, ExchangeOptions opts,
                           const exec::ExecContext& ctx)
    : map_(map),
      counting_map_(std::make_unique<CountingMap>(*this, map)),
      subtree_(*gather.children[0]),
      opts_(opts),
      ctx_(ctx),
      counting_(ctx.local_stats != nullptr || ctx.remote_stats != nullptr) {}

Result<std::unique_ptr<GatherSource>> GatherSource::Open(PartMap& map, const plan::PlanNode& gather,
                                                         ExchangeOptions opts,
                                                         const exec::ExecContext& ctx) {
  if (gather.children.size() != 1) return Status::Internal("gather without its subtree");
  const plan::PlanNode* x = gather.children[0].get();
  while (x->kind != plan::PlanNode::Kind::kExchange && x->children.size() == 1)
    x = x->children[0].get();
  const plan::PlanNode* scan = x->kind == plan::PlanNode::Kind::kExchange && x->children.size() == 1
                                   ? plan::LeafScan(*x->children[0])
                                   : nullptr;
  if (!scan) return Status::Internal("gather without an exchange over a scan");
  const std::string& lo = opts.range ? opts.range->first : scan->lo;
  const std::string& hi = opts.range ? opts.range->second : scan->hi;
  auto segs = map.Segments(scan->table, lo, hi);
  if (segs.size() < 2) return std::unique_ptr<GatherSource>();
  std::unique_ptr<GatherSource> g(new GatherSource(map, gather, opts, ctx));
  for (const auto& s : segs) {
    Part p;
    std::tie(p.lo, p.hi) = WithinSegment(lo, hi, s.lo, s.hi);
    g->parts_.push_back(std::move(p));
  }
  ThreadCache::Shared().RunCounted(std::min(kMaxInFlight, g->parts_.size()), g->mu_, g->workers_,
                                   g->ended_, [p = g.get()] { p->Work(); });
  return g;
}

GatherSource::~GatherSource() {
  {
    MutexLock l(mu_);
    stop_ = true;
    halt_ = true;
  }
  window_.SignalAll();
  MutexLock l(mu_);
  // Bounded by the parts' own waits: with halt_ set an operator stops at its next batch, and an
  // exchange's every receive has the RPC deadline.
  while (workers_ != 0) ended_.Wait(mu_);
  BookCpuLocked();
  if (ctx_.remote_stats) {
    for (auto& [p, by_node] : remote_stats_) {
      for (auto& [node, st] : by_node) (*ctx_.remote_stats)[p][node].Add(st);
    }
  }
  if (!ctx_.local_stats || op_stats_.empty()) return;
  size_t at = 0;  // the subtree's nodes in pre-order, as exec::Execute lists their counters
  std::function<void(const plan::PlanNode&)> walk = [&](const plan::PlanNode& p) {
    mu_.AssertHeld();  // the destructor's
    if (at < op_stats_.size()) (*ctx_.local_stats)[&p].Add(op_stats_[at++]);
    for (const auto& c : p.children) walk(*c);
  };
  walk(subtree_);
}

void GatherSource::Work() {
  while (true) {
    size_t i;
    {
      MutexLock l(mu_);
      // Not too far ahead of the consumer: finished parts' outputs wait in memory until read.
      while (!stop_ && next_part_ < parts_.size() && next_part_ >= current_ + 2 * kMaxInFlight) {
        window_.Wait(mu_);
      }
      if (stop_ || next_part_ >= parts_.size()) return;
      i = next_part_++;
    }
    uint64_t t0 = ThreadCpuNanos();
    std::vector<exec::Batch> out;
    Status st = RunPart(i, &out);
    uint64_t spent = ThreadCpuNanos() - t0;
    bool wake;
    {
      MutexLock l(mu_);
      own_cpu_ += spent;
      if (st.ok()) {
        parts_[i].out = std::move(out);
        parts_[i].done = true;
      } else if (error_.ok() && !stop_) {
        error_ = st;
        halt_ = true;  // the other parts stop at their next batch
      }
      wake = i == current_ || !st.ok();
    }
    if (wake) cv_.Signal();  // only the consumer waits on cv_
    if (!st.ok()) return;
  }
}

Status GatherSource::RunPart(size_t i, std::vector<exec::Batch>* out) {
  std::pair<std::string, std::string> range{parts_[i].lo, parts_[i].hi};
  PartScans scans(*this);
  exec::RemoteStats remote;
  exec::ExecContext ctx(&scans, &halt_);
  ctx.work_mem = opts_.work_mem;
  ctx.prefetch = false;
  ctx.params = opts_.params;
  ctx.exchange_range = &range;
  ctx.remote_stats = counting_ ? &remote : nullptr;
  std::vector<exec::OperatorStats> stats;
  Status st = exec::Execute(
      subtree_, ctx,
      [&](exec::Batch& b) {
        out->push_back(std::move(b));  // taken, not copied
        b = exec::Batch();
        return Status::OK();
      },
      counting_ ? &stats : nullptr);
  if (counting_) {
    MutexLock l(mu_);
    op_stats_.resize(std::max(op_stats_.size(), stats.size()));
    for (size_t k = 0; k < stats.size(); k++) op_stats_[k].Add(stats[k]);
    for (auto& [p, by_node] : remote) {
      for (auto& [node, s] : by_node) remote_stats_[p][node].Add(s);
    }
  }
  return st;
}

void GatherSource::BookCpuLocked() {
  for (auto& [node, ns] : node_cpu_) map_.BookCpu(node, ns);
  node_cpu_.clear();
  if (own_cpu_) map_.BookOtherThreadsCpu(own_cpu_);
  own_cpu_ = 0;
}

Result<bool> GatherSource::Next(exec::Batch& out) {
  MutexLock l(mu_);
  while (true) {
    BookCpuLocked();
    RETURN_NOT_OK(error_);
    if (current_ >= parts_.size()) return false;
    Part& p = parts_[current_];
    if (p.done) {
      if (p.next < p.out.size()) {
        out = std::move(p.out[p.next++]);
        return true;
      }
      p.out = std::vector<exec::Batch>();
      current_++;
      window_.SignalAll();
      continue;
    }
    if (opts_.cancel && opts_.cancel->load()) {
      halt_ = true;
      return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
    }
    // The parts' every receive has a deadline; this wait only checks for cancellation.
    cv_.WaitFor(mu_, std::chrono::milliseconds(100));
  }
}

}  // namespace wattdb::rpc
