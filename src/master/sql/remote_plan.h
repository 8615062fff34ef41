// A plan subtree running on one node (the node service's runPlan; query/plan/offload.h,
// query/plan/partition.h): the master sends it with, for each of its Exchanges, the segments
// of the Exchange's scan range and their owners' addresses, and reads its output as column
// batches. The node reads the segments from their owners itself.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "master/cluster/cluster.h"
#include "query/exec/context.h"
#include "rpc/scan_stream.h"

namespace wattdb::master {

class RemotePlan {
 public:
  struct Options {
    Timestamp read_ts = 0;
    uint64_t txn = 0;
    int64_t work_mem = 0;
    const std::atomic<bool>* cancel = nullptr;
    bool analyze = false;  // EXPLAIN ANALYZE: also collect the owners' counters (owner_stats)
  };
  // Sends `subtree` (borrowed; it outlives the RemotePlan) to `node`. Null if a segment it
  // reads has its owner down, or `node` is not reachable: the caller runs the subtree itself.
  static Result<std::unique_ptr<RemotePlan>> Start(Cluster& cluster, const plan::PlanNode& subtree,
                                                   NodeId node, const Options& opts);
  ~RemotePlan();  // an unfinished plan's connection is dropped: the node stops
  // The next batch with rows (true), or the end (false; then `stats`, if given, has the node's
  // operator counters in the subtree's pre-order). Node CPU is booked to the statement.
  Result<bool> Next(exec::Batch& out, std::vector<exec::OperatorStats>* stats = nullptr);
  NodeId node() const { return node_; }
  bool delivered() const { return delivered_; }  // some rows reached the caller
  // At the end, with Options::analyze: per owner, the counters of the fragments below the
  // subtree's Exchanges, in the subtree's pre-order.
  const rpc::ScanStream::OwnerStats& owner_stats() const { return owner_stats_; }

 private:
  RemotePlan(const plan::PlanNode& subtree, NodeId node, const Options& opts)
      : subtree_(subtree), node_(node), opts_(opts) {}
  const plan::PlanNode& subtree_;
  NodeId node_;
  Options opts_;
  std::shared_ptr<rpc::NodeClient> client_;  // keeps the stream's client alive
  std::unique_ptr<rpc::ScanStream> stream_;
  bool done_ = false, delivered_ = false;
  rpc::ScanStream::OwnerStats owner_stats_;
  std::vector<exec::OperatorStats> counters_;  // the last reply's, handed over with the end
};

// The operator counters of a subtree's nodes, given in its pre-order, into `into` under `node`.
void AddRemoteStats(const plan::PlanNode& subtree, NodeId node,
                    const std::vector<exec::OperatorStats>& stats, exec::RemoteStats* into);
// The owners' counters of the fragments below a subtree's Exchanges (RemotePlan::owner_stats)
// into `into`, each under its owner.
void AddOwnerStats(const plan::PlanNode& subtree, const rpc::ScanStream::OwnerStats& owners,
                   exec::RemoteStats* into);

}  // namespace wattdb::master
