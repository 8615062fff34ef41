// EXPLAIN [ANALYZE] of the executor: the plan tree, where each operator runs, and with
// ANALYZE the counters of the operators run here and on the nodes.
#include <chrono>
#include <functional>
#include <set>

#include "common/sqlstate.h"
#include "master/sql/executor.h"
#include "master/sql/offload.h"
#include "master/sql/scan_provider.h"
#include "query/exec/operator.h"
#include "query/plan/binder.h"
#include "rpc/gather.h"

namespace wattdb::master {

namespace {

// Writes the lines of EXPLAIN [ANALYZE]: each operator of the plan, where it runs and, with
// ANALYZE, its counters (here, or per node for the operators run on nodes).
class ExplainPrinter {
 public:
  struct Inputs {
    bool analyze = false;
    bool prefetch = false;   // wattdb_exchange_prefetch
    OffloadSetting offload;  // wattdb_offload
    Catalog* catalog = nullptr;
    std::map<const plan::PlanNode*, exec::OperatorStats>* stats = nullptr;
    exec::RemoteStats* remote_stats = nullptr;
  };
  explicit ExplainPrinter(Inputs in) : in_(in) {}

  std::vector<std::string> Print(const plan::PlanNode& root) {
    MarkGathered(root, false);
    Walk(root, 0, nullptr, nullptr);
    return std::move(lines_);
  }

 private:
  // Below a Gather and above its Exchange, operators run on the master's threads, per segment.
  void MarkGathered(const plan::PlanNode& p, bool in) {
    if (in) gathered_.insert(&p);
    if (p.kind == plan::PlanNode::Kind::kExchange) return;
    for (const auto& c : p.children)
      MarkGathered(*c, in || p.kind == plan::PlanNode::Kind::kGather);
  }

  // Below an Exchange, operators run on the nodes owning the scan's segments.
  static const plan::PlanNode* ScanLeaf(const plan::PlanNode& p) {
    return p.kind == plan::PlanNode::Kind::kScan ? &p
           : p.children.size() == 1              ? ScanLeaf(*p.children[0])
                                                 : nullptr;
  }

  // Where operator `p` runs. Below an Offload (and above its Exchanges), operators run on a
  // helper node; below a Partition, on the node of each segment of its table.
  std::string Where(const plan::PlanNode& p, const plan::PlanNode* scan,
                    const plan::PlanNode* offload) {
    std::string where = "master";
    if (scan && scan->table < kFirstSystemTableId) {
      auto segs = in_.catalog->SegmentsOverlapping(scan->table, scan->lo, scan->hi);
      std::set<NodeId> nodes;
      for (const auto& seg : segs) nodes.insert(seg.node);
      where.clear();
      for (NodeId n : nodes) where += (where.empty() ? "nodes " : ",") + std::to_string(n);
      where = fmt::format("{}; {} segment{}", where.empty() ? "no nodes" : where, segs.size(),
                          segs.size() == 1 ? "" : "s");
    }
    if (offload && !scan && offload->kind == plan::PlanNode::Kind::kPartition) {
      where = fmt::format("the node of each {} segment", offload->table_name);
    } else if (offload && !scan) {
      auto ran = in_.remote_stats->find(offload);  // ANALYZE: the helper it ran on, if any
      if (in_.analyze) {
        where = ran != in_.remote_stats->end() && !ran->second.empty()
                    ? fmt::format("helper node {}", ran->second.begin()->first)
                    : "master";
      } else if (offload->index) {
        where = fmt::format("helper node {}", offload->index);
      } else {
        where = in_.offload.mode == OffloadSetting::Mode::kOn ? "a helper node"
                                                              : "master or a helper node";
      }
    }
    if (!scan && !offload && gathered_.count(&p) && in_.prefetch) {  // (else a segment at a time)
      where = fmt::format("master, up to {} segments at once", rpc::GatherSource::kMaxInFlight);
    }
    return where;
  }

  // ANALYZE's counters of `p`: its own when it ran here, else summed per node.
  std::string Actual(const plan::PlanNode& p, bool remote, const plan::PlanNode* offload) {
    auto rs = in_.remote_stats->find(&p);
    bool helped = rs != in_.remote_stats->end() && !rs->second.empty();  // ran on a helper
    if (!remote && !helped) {
      const exec::OperatorStats& st = (*in_.stats)[&p];
      return fmt::format(" (actual rows={} batches={} time={:.3f} ms)", st.rows, st.batches, st.ms);
    }
    std::string per_node;
    for (const auto& [node, st] : (*in_.remote_stats)[&p]) {
      per_node += fmt::format("{}n{}: rows={} batches={} time={:.3f} ms",
                              per_node.empty() ? "" : "; ", node, st.rows, st.batches, st.ms);
    }
    // Below an Exchange run by a helper or a part, the owners' counters stay with that node.
    return " (actual " +
           (!per_node.empty() ? per_node
            : offload         ? std::string("not collected")
                              : "not run") +
           ")";
  }

  void Walk(const plan::PlanNode& p, int depth, const plan::PlanNode* remote,
            const plan::PlanNode* offload) {
    std::string text = p.ToString(0);
    text = text.substr(0, text.find('\n'));
    const plan::PlanNode* scan = remote                                  ? remote
                                 : p.kind == plan::PlanNode::Kind::kScan ? &p
                                                                         : nullptr;
    std::string line = std::string(depth * 2, ' ') + (depth ? "->  " : "") + text + "  (on " +
                       Where(p, scan, offload) + ")";
    if (in_.analyze) line += Actual(p, remote != nullptr, offload);
    lines_.push_back(line);
    for (const auto& c : p.children) {
      const plan::PlanNode* child_remote = remote ? remote
                                           : p.kind == plan::PlanNode::Kind::kExchange
                                               ? ScanLeaf(*c)
                                               : nullptr;
      bool offloads =
          p.kind == plan::PlanNode::Kind::kOffload || p.kind == plan::PlanNode::Kind::kPartition;
      Walk(*c, depth + 1, child_remote, offloads ? &p : offload);
    }
  }

  Inputs in_;
  std::set<const plan::PlanNode*> gathered_;
  std::vector<std::string> lines_;
};

}  // namespace

Result<double> Executor::RunInstrumented(
    const plan::BoundSelect& bound, std::map<const plan::PlanNode*, exec::OperatorStats>* stats,
    exec::RemoteStats* remote_stats, const std::atomic<bool>* cancel) {
  MasterScanProvider scans(cluster_, energy_service_, Snapshot(), TxnId(), &db_);
  exec::ExecContext ctx(&scans, cancel);
  ConfigureExecution(scans, ctx);
  ctx.remote_stats = remote_stats;
  ctx.local_stats = stats;
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto op, exec::BuildInstrumented(*bound.plan, stats));
  RETURN_NOT_OK(op->Open(ctx));
  exec::Batch b;
  while (true) {
    auto more = op->Next(b);
    if (!more.ok()) {
      op->Close();
      return more.status();
    }
    if (!*more) break;
  }
  op->Close();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Result<std::string> Executor::Explain(sql::ExplainStmt& s, ResultSink& sink,
                                      const std::atomic<bool>* cancel) {
  auto* sel = std::get_if<sql::SelectStmt>(&s.inner->stmt);
  if (!sel)
    return Status::Sql(sqlstate::kFeatureNotSupported, "EXPLAIN supports only SELECT yet", s.pos);
  ASSIGN_OR_RETURN(plan::BoundSelect bound, PlanSelect(*sel));
  std::map<const plan::PlanNode*, exec::OperatorStats> stats;
  exec::RemoteStats remote_stats;
  double total_ms = 0;
  if (s.analyze) {
    ASSIGN_OR_RETURN(total_ms, RunInstrumented(bound, &stats, &remote_stats, cancel));
  }
  std::vector<std::string> lines = ExplainPrinter({s.analyze, ExchangePrefetch(), Offload(),
                                                   &cluster_.catalog(), &stats, &remote_stats})
                                       .Print(*bound.plan);
  if (s.analyze) {
    if (energy_) {
      StatementEnergy e = energy_->Finish(cluster_.monitor());
      lines.push_back(fmt::format(
          "Energy: {:.3f} J estimated (master {:.3f} J, nodes {:.3f} J, infrastructure {:.3f} J; "
          "CPU {:.3f} ms{})",
          e.joules, e.master_joules, e.node_joules, e.infra_joules, e.cpu_ms,
          e.unmetered ? fmt::format("; {} component(s) unmetered", e.unmetered) : ""));
    }
    lines.push_back(fmt::format("Execution Time: {:.3f} ms", total_ms));
  }
  RETURN_NOT_OK(sink.Describe({"QUERY PLAN"}, {SqlType{TypeId::kText}}));
  exec::Batch out;
  out.Reset(1);
  for (auto& l : lines) out.AppendRow({Value::Text(std::move(l))});
  RETURN_NOT_OK(sink.Rows(out));
  return std::string("EXPLAIN");
}

}  // namespace wattdb::master
