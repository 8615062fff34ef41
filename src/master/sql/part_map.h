// The partition map as the master's exchanges read it: segments from the catalog (read afresh
// after a move or split), clients from the node registry, node CPU booked to the statement,
// the copy a follower read goes to from FollowerReads.
#pragma once

#include "master/cluster/cluster.h"
#include "master/power/statement_energy.h"
#include "rpc/exchange.h"

namespace wattdb::master {

class ClusterPartMap : public rpc::PartMap {
 public:
  explicit ClusterPartMap(Cluster& cluster) : cluster_(cluster) {}
  std::vector<rpc::SegmentPlace> Segments(TableId table, const std::string& lo,
                                          const std::string& hi) override {
    std::vector<rpc::SegmentPlace> out;
    for (auto& s : cluster_.catalog().SegmentsOverlapping(table, lo, hi)) {
      out.push_back(
          {s.id, s.node, std::move(s.lo), std::move(s.hi), s.epoch, std::move(s.followers)});
    }
    return out;
  }
  NodeId ReadFrom(const rpc::SegmentPlace& s) override {
    return cluster_.follower_reads().ReadFrom(s.id, s.node, s.epoch, s.followers);
  }
  Result<std::shared_ptr<rpc::NodeClient>> Client(NodeId node) override {
    return cluster_.registry().Client(node);
  }
  void BookCpu(NodeId node, uint64_t cpu_nanos) override {
    StatementCpuScope::AddNode(node, cpu_nanos);
  }
  void BookOtherThreadsCpu(uint64_t cpu_nanos) override {
    StatementCpuScope::AddOtherThreads(cpu_nanos);
  }
  // The master node's segments (a node hosted by this process) are read here, on the
  // statement's thread: no message, no other thread woken.
  bool IsLocal(NodeId node) const override {
    auto* local = cluster_.local_segments();
    return local && local->node_id() == node;
  }
  Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                  const plan::PlanNode& fragment, const rpc::ExchangeOptions& opts,
                  const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>* stats) override {
    auto* local = cluster_.local_segments();
    if (!local) return Status::Unavailable("the master hosts no node");
    return local->RunLocal(seg, lo, hi, fragment, opts, emit, stats);
  }

 private:
  Cluster& cluster_;  // borrowed; outlives the map
};

}  // namespace wattdb::master
