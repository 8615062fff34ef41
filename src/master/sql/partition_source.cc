#include "master/sql/partition_source.h"

#include <set>

#include "query/plan/fragment.h"
#include "query/plan/offload.h"
#include "query/plan/partition.h"

namespace wattdb::master {

PartitionSource::PartitionSource(Cluster& cluster, const plan::PlanNode& partition, Options opts)
    : cluster_(cluster),
      partition_(partition),
      opts_(opts),
      here_ctx_(opts.ctx->scans, opts.ctx->cancelled) {
  here_ctx_.work_mem = opts.ctx->work_mem;
  here_ctx_.prefetch = opts.ctx->prefetch;
}

Result<std::unique_ptr<PartitionSource>> PartitionSource::Open(Cluster& cluster,
                                                               const plan::PlanNode& partition,
                                                               Options opts) {
  if (partition.children.size() != 1) return Status::Internal("partition without its subtree");
  const plan::PlanNode& subtree = *partition.children[0];
  auto xs = plan::Exchanges(subtree);
  if (partition.index >= xs.size() || xs[partition.index]->children.empty()) {
    return Status::Internal("partition without its exchange");
  }
  const plan::PlanNode* scan = plan::LeafScan(*xs[partition.index]->children[0]);
  if (!scan) return Status::Internal("partition exchange without a scan");
  std::unique_ptr<PartitionSource> src(new PartitionSource(cluster, partition, opts));
  for (const auto& seg : cluster.catalog().SegmentsOverlapping(scan->table, scan->lo, scan->hi)) {
    Part p;
    p.plan = subtree.Clone();
    p.node = seg.node;
    if (plan::NarrowToPart(partition, p.plan.get(), seg.lo, seg.hi))
      src->parts_.push_back(std::move(p));
  }
  std::set<NodeId> owners;
  for (const auto& p : src->parts_) owners.insert(p.node);
  src->in_flight_ = kInFlightPerNode * std::max<size_t>(1, owners.size());
  return src;
}

PartitionSource::~PartitionSource() {
  for (auto& p : parts_) {
    p.remote.reset();  // unfinished parts' connections are dropped: their nodes stop
    if (p.here) p.here->Close();
  }
}

void PartitionSource::Start(Part& p) {
  RemotePlan::Options ro{opts_.read_ts, opts_.txn, opts_.ctx->work_mem, opts_.ctx->cancelled,
                         opts_.ctx->remote_stats != nullptr};
  auto r = RemotePlan::Start(cluster_, *p.plan, p.node, ro);
  if (r.ok()) p.remote = std::move(*r);  // else (or null) the part runs here
}

Result<bool> PartitionSource::Next(exec::Batch& out) {
  while (current_ < parts_.size()) {
    for (; started_ < parts_.size() && started_ < current_ + in_flight_; started_++)
      Start(parts_[started_]);
    Part& p = parts_[current_];
    if (p.remote) {
      std::vector<exec::OperatorStats> stats;
      auto more = p.remote->Next(out, &stats);
      if (more.ok() && *more) return true;
      if (more.ok()) {
        AddRemoteStats(*partition_.children[0], p.node, stats, opts_.ctx->remote_stats);
        AddOwnerStats(*partition_.children[0], p.remote->owner_stats(), opts_.ctx->remote_stats);
        p.remote.reset();
        current_++;
        continue;
      }
      if (p.remote->delivered() || !exec::IsHelperFailure(more.status())) return more.status();
      p.remote.reset();  // the node failed before the part's first row: run it here
    }
    if (!p.here) {
      ASSIGN_OR_RETURN(p.here, exec::BuildOperator(*p.plan));
      RETURN_NOT_OK(p.here->Open(here_ctx_));
    }
    ASSIGN_OR_RETURN(bool more, p.here->Next(out));
    if (more) return true;
    p.here->Close();
    p.here.reset();
    current_++;
  }
  return false;
}

}  // namespace wattdb::master
