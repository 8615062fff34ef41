#include "master/sql/exchange.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "master/energy/statement_energy.h"
#include "master/cluster/node_rpc.h"

namespace wattdb::master {

namespace {

const plan::PlanNode* LeafScan(const plan::PlanNode& p) {
  if (p.kind == plan::PlanNode::Kind::kScan) return &p;
  return p.children.size() == 1 ? LeafScan(*p.children[0]) : nullptr;
}

bool Blocking(const plan::PlanNode& p) {
  if (p.kind == plan::PlanNode::Kind::kAggregate || p.kind == plan::PlanNode::Kind::kSort) return true;
  return !p.children.empty() && Blocking(*p.children[0]);
}

}  // namespace

Result<std::unique_ptr<ExchangeSource>> ExchangeSource::Open(Cluster& cluster, const plan::PlanNode& exchange,
                                                             Options opts) {
  if (exchange.children.size() != 1) return Status::Internal("exchange without its fragment");
  const plan::PlanNode* scan = LeafScan(*exchange.children[0]);
  if (!scan) return Status::Internal("exchange fragment without a scan");
  std::unique_ptr<ExchangeSource> x(new ExchangeSource(cluster, opts));
  x->table_ = scan->table;
  x->ncols_ = exchange.types.size();
  exchange.children[0]->Serialize(&x->fragment_);
  x->fragment_root_ = exchange.children[0].get();
  x->blocking_ = Blocking(*exchange.children[0]);
  for (const auto& s : cluster.catalog().SegmentsOverlapping(scan->table, scan->lo, scan->hi)) {
    Part p;
    p.lo = std::max(scan->lo, s.lo);
    p.hi = s.hi.empty() ? scan->hi : (scan->hi.empty() ? s.hi : std::min(scan->hi, s.hi));
    x->parts_.push_back(std::move(p));
  }
  size_t n = std::min(kMaxInFlight, x->parts_.size());
  for (size_t i = 0; i < n; i++) x->producers_.emplace_back([p = x.get()] { p->Produce(); });
  return x;
}

ExchangeSource::~ExchangeSource() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : producers_) t.join();
  if (!opts_.stats) return;
  std::vector<const plan::PlanNode*> order;  // the fragment's nodes in pre-order
  std::function<void(const plan::PlanNode&)> walk = [&](const plan::PlanNode& p) {
    order.push_back(&p);
    for (const auto& c : p.children) walk(*c);
  };
  walk(*fragment_root_);
  for (const auto& [node, stats] : node_stats_) {
    for (size_t i = 0; i < stats.size() && i < order.size(); i++) {
      exec::OperatorStats& into = (*opts_.stats)[order[i]][node];
      into.rows += stats[i].rows;
      into.batches += stats[i].batches;
      into.ms += stats[i].ms;
    }
  }
}

void ExchangeSource::Produce() {
  while (true) {
    size_t i;
    {
      std::unique_lock<std::mutex> l(mu_);
      // Not too far ahead of the consumer: finished parts wait in memory until read.
      cv_.wait(l, [&] { return stop_ || next_part_ >= parts_.size() || next_part_ < current_ + 2 * kMaxInFlight; });
      if (stop_ || next_part_ >= parts_.size()) return;
      i = next_part_++;
    }
    Status st = RunPart(i);
    {
      std::lock_guard<std::mutex> l(mu_);
      parts_[i].done = true;
      parts_[i].error = st;
    }
    cv_.notify_all();
  }
}

bool ExchangeSource::Push(size_t i, exec::Batch b) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return stop_ || parts_[i].batches.size() < kBufferedBatches; });
  if (stop_) return false;
  parts_[i].batches.push_back(std::move(b));
  cv_.notify_all();
  return true;
}

Status ExchangeSource::RunPart(size_t i) {
  const std::string part_hi = parts_[i].hi;
  std::string cursor = parts_[i].lo;
  int retries = 0;
  while (true) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stop_) return Status::OK();
    }
    if (!part_hi.empty() && cursor >= part_hi) return Status::OK();
    auto segs = cluster_.catalog().SegmentsOverlapping(table_, cursor, part_hi);
    if (segs.empty()) return Status::OK();
    const SegmentEntry s = segs.front();
    std::string lo = std::max(cursor, s.lo);
    std::string hi = s.hi.empty() ? part_hi : (part_hi.empty() ? s.hi : std::min(part_hi, s.hi));
    Status st;
    auto client = cluster_.registry().Client(s.node);
    std::unique_ptr<ScanStream> stream;
    if (client.ok()) {
      auto opened = ScanStream::OpenFragment(**client, s.id, lo, hi, opts_.read_ts, opts_.txn, fragment_, opts_.work_mem);
      if (opened.ok()) {
        stream = std::move(*opened);
      } else {
        st = opened.status();
      }
    } else {
      st = client.status();
    }
    std::vector<exec::Batch> held;  // blocking fragments: the segment's output until complete
    bool last = false;
    while (stream && !last) {
      exec::Batch b;
      std::string resume;
      uint64_t cpu = 0;
      std::vector<exec::OperatorStats> stats;
      st = stream->NextColumns(&b, &resume, &last, &cpu, &stats);
      {
        std::lock_guard<std::mutex> l(mu_);
        cpu_[s.node] += cpu;
        if (st.ok() && last && !stats.empty()) {
          auto& sum = node_stats_[s.node];
          sum.resize(std::max(sum.size(), stats.size()));
          for (size_t k = 0; k < stats.size(); k++) {
            sum[k].rows += stats[k].rows;
            sum[k].batches += stats[k].batches;
            sum[k].ms += stats[k].ms;
          }
        }
      }
      if (!st.ok()) break;
      if (b.rows > 0) {
        if (blocking_) {
          held.push_back(std::move(b));
        } else if (!Push(i, std::move(b))) {
          return Status::OK();  // stopped
        }
      }
      // Keys are prefix-free, so key + "\0" is the smallest key after it.
      if (!blocking_ && !resume.empty()) cursor = resume + std::string(1, '\0');
    }
    if (st.ok() && last) {
      for (auto& b : held) {
        if (!Push(i, std::move(b))) return Status::OK();
      }
      if (s.hi.empty() || (!part_hi.empty() && s.hi >= part_hi)) return Status::OK();
      cursor = std::max(cursor, s.hi);
      retries = 0;
      continue;
    }
    // A segment that moved or split, or a node briefly away: read the map again and resume.
    RETURN_NOT_OK(ScanRetryBackoff(st, &retries));
  }
}

Result<bool> ExchangeSource::Next(exec::Batch& out) {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    for (auto& [node, ns] : cpu_) StatementCpuScope::AddNode(node, ns);
    cpu_.clear();
    if (current_ >= parts_.size()) return false;
    Part& p = parts_[current_];
    if (!p.batches.empty()) {
      out = std::move(p.batches.front());
      p.batches.pop_front();
      cv_.notify_all();
      if (out.cols.size() != ncols_) return Status::Corruption("a node sent a batch of another width");
      return true;
    }
    if (p.done) {
      RETURN_NOT_OK(p.error);
      current_++;
      cv_.notify_all();
      continue;
    }
    if (opts_.cancel && opts_.cancel->load()) return Status::Sql("57014", "canceling statement due to user request");
    // The producers' every receive has a deadline; this wait only checks for cancellation.
    cv_.wait_for(l, std::chrono::milliseconds(100));
  }
}

}  // namespace wattdb::master
