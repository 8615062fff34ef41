#include "master/sql/remote_plan.h"

#include <functional>
#include <map>

#include "master/power/statement_energy.h"
#include "net/message_builder.h"
#include "proto/node_service.capnp.h"
#include "query/plan/fragment.h"
#include "query/plan/offload.h"
#include "rpc/proto_util.h"

namespace wattdb::master {

Result<std::unique_ptr<RemotePlan>> RemotePlan::Start(Cluster& cluster,
                                                      const plan::PlanNode& subtree, NodeId node,
                                                      const Options& opts) {
  std::map<NodeId, NodeInfo> up;
  for (auto& n : cluster.registry().Snapshot()) {
    if (n.up) up[n.id] = std::move(n);
  }
  net::MessageBuilder mb;
  auto r = mb.initRoot<proto::Request>().initRunPlan();
  std::string plan;
  subtree.Serialize(&plan);
  r.setPlan(rpc::Bytes(plan));
  r.setReadTs(opts.read_ts);
  r.setTxn(opts.txn);
  r.setWorkMem(static_cast<uint64_t>(std::max<int64_t>(0, opts.work_mem)));
  r.setAnalyze(opts.analyze);
  auto xs = plan::Exchanges(subtree);
  auto lx = r.initExchanges(xs.size());
  for (size_t i = 0; i < xs.size(); i++) {
    const plan::PlanNode* scan =
        xs[i]->children.empty() ? nullptr : plan::LeafScan(*xs[i]->children[0]);
    if (!scan) return Status::Internal("exchange fragment without a scan");
    auto segs = cluster.catalog().SegmentsOverlapping(scan->table, scan->lo, scan->hi);
    auto lp = lx[i].initPlaces(segs.size());
    for (size_t k = 0; k < segs.size(); k++) {
      auto it = up.find(segs[k].node);
      if (it == up.end())
        return std::unique_ptr<RemotePlan>();  // the master's exchanges wait for it
      lp[k].setSegment(segs[k].id);
      lp[k].setLo(rpc::Bytes(segs[k].lo));
      lp[k].setHi(rpc::Bytes(segs[k].hi));
      lp[k].setNode(segs[k].node);
      lp[k].setHost(it->second.host);
      lp[k].setPort(it->second.port);
    }
  }
  std::unique_ptr<RemotePlan> rp(new RemotePlan(subtree, node, opts));
  auto client = cluster.registry().Client(node);
  if (!client.ok()) return std::unique_ptr<RemotePlan>();
  rp->client_ = std::move(*client);
  auto stream = rpc::ScanStream::Start(*rp->client_, mb);
  if (!stream.ok()) return std::unique_ptr<RemotePlan>();
  rp->stream_ = std::move(*stream);
  return rp;
}

RemotePlan::~RemotePlan() { stream_.reset(); }

Result<bool> RemotePlan::Next(exec::Batch& out, std::vector<exec::OperatorStats>* stats) {
  while (!done_) {
    std::string resume;
    bool last = false;
    uint64_t cpu = 0;
    std::vector<exec::OperatorStats> counters;
    std::vector<std::pair<NodeId, uint64_t>> node_cpu;  // the segments' owners, for this plan
    Status st = stream_->NextColumns(&out, &resume, &last, &cpu, &counters, opts_.cancel, &node_cpu,
                                     &owner_stats_);
    StatementCpuScope::AddNode(node_, cpu);
    for (const auto& [node, ns] : node_cpu) StatementCpuScope::AddNode(node, ns);
    RETURN_NOT_OK(st);
    if (last) {
      done_ = true;
      counters_ = std::move(counters);  // the last reply may carry batches too
    }
    if (out.rows > 0) {
      if (out.cols.size() != subtree_.types.size()) {
        return Status::Corruption(fmt::format("node {} sent a batch of another width", node_));
      }
      delivered_ = true;
      return true;
    }
  }
  if (stats) *stats = std::move(counters_);
  return false;
}

namespace {

// `subtree`'s nodes in pre-order; those below an Exchange (`fragments` false) or the others
// (`fragments` true) are null.
std::vector<const plan::PlanNode*> PreOrder(const plan::PlanNode& subtree, bool fragments) {
  std::vector<const plan::PlanNode*> order;
  std::function<void(const plan::PlanNode&, bool)> walk = [&](const plan::PlanNode& p,
                                                              bool fragment) {
    order.push_back(fragment == fragments ? &p : nullptr);
    for (const auto& c : p.children)
      walk(*c, fragment || p.kind == plan::PlanNode::Kind::kExchange);
  };
  walk(subtree, false);
  return order;
}

// `stats` (in `order`) into `into` under `node`; `skip_empty`: not the nodes that did nothing.
void AddInOrder(const std::vector<const plan::PlanNode*>& order, NodeId node,
                const std::vector<exec::OperatorStats>& stats, bool skip_empty,
                exec::RemoteStats* into) {
  for (size_t i = 0; i < stats.size() && i < order.size(); i++) {
    if (order[i] && !(skip_empty && stats[i].empty())) (*into)[order[i]][node].Add(stats[i]);
  }
}

}  // namespace

void AddOwnerStats(const plan::PlanNode& subtree, const rpc::ScanStream::OwnerStats& owners,
                   exec::RemoteStats* into) {
  if (!into || owners.empty()) return;
  auto order = PreOrder(subtree, /*fragments=*/true);
  // An owner's vector spans the whole subtree: zeros where it ran nothing.
  for (const auto& [owner, stats] : owners)
    AddInOrder(order, owner, stats, /*skip_empty=*/true, into);
}

void AddRemoteStats(const plan::PlanNode& subtree, NodeId node,
                    const std::vector<exec::OperatorStats>& stats, exec::RemoteStats* into) {
  // The fragments below Exchanges ran on their segments' owners: skipped here.
  if (into && !stats.empty())
    AddInOrder(PreOrder(subtree, /*fragments=*/false), node, stats, false, into);
}

}  // namespace wattdb::master
