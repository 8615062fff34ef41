// The rows of a Partition (query/plan/partition.h): one part per segment of the partitioning
// table, each run on the node owning that segment (RemotePlan), a few at a time, their outputs
// read in turn. A part whose node fails before its first row runs on the master instead.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "master/sql/remote_plan.h"
#include "query/exec/operator.h"

namespace wattdb::master {

class PartitionSource : public exec::RowSource {
 public:
  struct Options {
    Timestamp read_ts = 0;
    uint64_t txn = 0;
    const exec::ExecContext* ctx = nullptr;  // the statement's (scans, cancellation, work_mem)
  };
  static constexpr size_t kInFlightPerNode = 4;  // parts running at once, per node owning some

  static Result<std::unique_ptr<PartitionSource>> Open(Cluster& cluster,
                                                       const plan::PlanNode& partition,
                                                       Options opts);
  ~PartitionSource() override;
  Result<bool> Next(exec::Batch& out) override;

 private:
  struct Part {
    plan::PlanPtr plan;  // the subtree narrowed to the part
    NodeId node = 0;     // the owner of the part's segment
    std::unique_ptr<RemotePlan> remote;
    std::unique_ptr<exec::Operator> here;  // run on the master instead
  };
  PartitionSource(Cluster& cluster, const plan::PlanNode& partition, Options opts);
  void Start(Part& p);

  Cluster& cluster_;
  const plan::PlanNode& partition_;
  Options opts_;
  exec::ExecContext here_ctx_;  // for parts run on the master
  std::vector<Part> parts_;
  size_t current_ = 0, started_ = 0;
  size_t in_flight_ = kInFlightPerNode;
};

}  // namespace wattdb::master
