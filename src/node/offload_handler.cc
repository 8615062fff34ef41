// The node service's runPlan request: this node as a helper (operator offloading,
// query/plan/offload.h) runs a plan whose Exchanges read other nodes' segments, and streams
// its output to the master as column batches.
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "common/sqlstate.h"
#include "net/message_builder.h"
#include "node/batch_frame.h"
#include "node/fragment_runner.h"
#include "node/node_server.h"
#include "node/segment_rows.h"
#include "node/wire.h"
#include "query/exec/batch_codec.h"
#include "query/exec/operator.h"
#include "query/plan/offload.h"
#include "rpc/exchange.h"

namespace wattdb::node {

using net::Connection;

namespace {

// CPU spent for one runPlan by the nodes its exchanges read (and by this node's own reads on
// other threads than the request's), by node. Thread-safe.
class CpuBook {
 public:
  void Add(NodeId node, uint64_t nanos) {
    MutexLock l(mu_);
    by_node_[node] += nanos;
  }
  std::map<NodeId, uint64_t> Take() {
    MutexLock l(mu_);
    return std::move(by_node_);
  }

 private:
  Mutex mu_;
  std::map<NodeId, uint64_t> by_node_ GUARDED_BY(mu_);
};

// The segments of one Exchange as the master listed them: not read again (a segment that
// moved or split meanwhile fails the plan with Stale; the master then runs it elsewhere).
class ShippedPartMap : public rpc::PartMap {
 public:
  using LocalRunner =
      std::function<Status(SegmentId, const std::string&, const std::string&, const plan::PlanNode&,
                           const rpc::ExchangeOptions&, const std::function<Status(exec::Batch&)>&,
                           std::vector<exec::OperatorStats>*)>;
  ShippedPartMap(std::vector<rpc::SegmentPlace> places, PeerClients& peers, NodeId self,
                 LocalRunner local, CpuBook& cpu)
      : places_(std::move(places)),
        peers_(peers),
        self_(self),
        local_(std::move(local)),
        cpu_(cpu) {}
  std::vector<rpc::SegmentPlace> Segments(TableId table, const std::string& lo,
                                          const std::string& hi) override {
    std::vector<rpc::SegmentPlace> out;
    for (const auto& p : places_) {
      if ((p.hi.empty() || p.hi > lo) && (hi.empty() || p.lo < hi)) out.push_back(p);
    }
    return out;
  }
  Result<std::shared_ptr<rpc::NodeClient>> Client(NodeId node) override { return peers_.Get(node); }
  bool Refreshable() const override { return false; }
  // This node's own segments are read in this process, not through its data port.
  bool IsLocal(NodeId node) const override { return node == self_; }
  Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                  const plan::PlanNode& fragment, const rpc::ExchangeOptions& opts,
                  const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>* stats) override {
    uint64_t t0 = ThreadCpuNanos();
    Status st = local_(seg, lo, hi, fragment, opts, emit, stats);
    // On an exchange's producer thread the CPU is not in what the request's own thread reports.
    if (std::this_thread::get_id() != request_thread_) cpu_.Add(self_, ThreadCpuNanos() - t0);
    return st;
  }
  void BookCpu(NodeId node, uint64_t cpu_nanos) override { cpu_.Add(node, cpu_nanos); }

 private:
  std::vector<rpc::SegmentPlace> places_;
  PeerClients& peers_;
  NodeId self_;
  LocalRunner local_;
  CpuBook& cpu_;
  std::thread::id request_thread_ = std::this_thread::get_id();  // made on the request's thread
};

// The counters the exchanges of `plan` collected from the owners, as one encoded vector per
// owner in `plan`'s pre-order (zeros where nothing ran on that owner).
std::map<NodeId, std::string> OwnerStats(const plan::PlanNode& plan,
                                         const exec::RemoteStats& owners) {
  std::map<const plan::PlanNode*, size_t> index;
  std::function<void(const plan::PlanNode&)> walk = [&](const plan::PlanNode& p) {
    index.emplace(&p, index.size());
    for (const auto& c : p.children) walk(*c);
  };
  walk(plan);
  std::map<NodeId, std::vector<exec::OperatorStats>> by_node;
  for (const auto& [node_ptr, per_owner] : owners) {
    auto at = index.find(node_ptr);
    if (at == index.end()) continue;
    for (const auto& [owner, st] : per_owner) {
      auto& v = by_node[owner];
      v.resize(index.size());
      v[at->second] = st;
    }
  }
  std::map<NodeId, std::string> out;
  for (const auto& [owner, v] : by_node) out[owner] = exec::EncodeOperatorStats(v);
  return out;
}

// Scans of the plan: only its Exchanges, each over the segments the master listed.
class HelperProvider : public exec::ScanProvider {
 public:
  HelperProvider(const plan::PlanNode& plan, std::vector<std::unique_ptr<ShippedPartMap>> maps,
                 rpc::ExchangeSource::Options opts)
      : maps_(std::move(maps)), opts_(opts) {
    auto xs = plan::Exchanges(plan);
    for (size_t i = 0; i < xs.size(); i++) index_[xs[i]] = i;
  }
  Status Check() const {
    if (index_.size() != maps_.size())
      return Status::Corruption("offloaded plan and its segment lists disagree");
    return Status::OK();
  }
  Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode& scan) override {
    return Status::Corruption("an offloaded plan reads tables only through exchanges");
  }
  Result<std::unique_ptr<exec::RowSource>> OpenExchange(const plan::PlanNode& exchange,
                                                        const exec::ExecContext& ctx) override {
    auto it = index_.find(&exchange);
    if (it == index_.end()) return Status::Corruption("exchange outside the offloaded plan");
    ASSIGN_OR_RETURN(auto x, rpc::ExchangeSource::Open(*maps_[it->second], exchange, opts_));
    return std::unique_ptr<exec::RowSource>(std::move(x));
  }

 private:
  std::vector<std::unique_ptr<ShippedPartMap>> maps_;
  rpc::ExchangeSource::Options opts_;
  std::map<const plan::PlanNode*, size_t> index_;
};

// Sets `cancel` once the master closes the connection (or sends anything) while the plan
// runs, so that its exchanges stop and drop their streams (the owners stop at their next send).
class HangUpWatch {
 public:
  HangUpWatch(Connection& conn, std::atomic<bool>* cancel)
      : thread_([this, &conn, cancel] { Watch(conn, cancel); }) {}
  ~HangUpWatch() {
    {
      MutexLock l(mu_);
      done_ = true;
    }
    cv_.SignalAll();
    thread_.join();
  }

 private:
  void Watch(Connection& conn, std::atomic<bool>* cancel) {
    MutexLock l(mu_);
    while (!done_) {
      if (!conn.LooksIdle()) {
        cancel->store(true);
        return;
      }
      cv_.WaitFor(mu_, std::chrono::milliseconds(50));
    }
  }
  Mutex mu_;
  CondVar cv_;
  bool done_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts once the fields above exist
};

}  // namespace

Result<std::shared_ptr<rpc::NodeClient>> PeerClients::Get(NodeId node) {
  MutexLock l(mu_);
  auto it = addrs_.find(node);
  if (it == addrs_.end()) return Status::NotFound(fmt::format("no address for node {}", node));
  auto& c = clients_[node];
  if (!c || c_addr_[node] != it->second) {
    c = std::make_shared<rpc::NodeClient>(node, it->second.first, it->second.second, opts_);
    c_addr_[node] = it->second;
  }
  return c;
}

void PeerClients::Learn(NodeId node, const std::string& host, uint16_t port) {
  MutexLock l(mu_);
  addrs_[node] = {host, port};
}

Status NodeServer::RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                            const plan::PlanNode& fragment, const rpc::ExchangeOptions& o,
                            const std::function<Status(exec::Batch&)>& emit,
                            std::vector<exec::OperatorStats>* stats) {
  ReaderLock serving(in_process_mu_);
  if (stopping_)
    return Status(Status::Code::kUnavailable, fmt::format("node {} is stopping", opts_.self.id),
                  sqlstate::kCannotConnectNow);
  ScanRequest sr;
  sr.segment = seg;
  sr.lo = lo;
  sr.hi = hi;
  sr.read_ts = o.read_ts;
  sr.txn = o.txn;
  RETURN_NOT_OK(FollowerReadable(sr, o.follower_epoch));
  ASSIGN_OR_RETURN(auto rows, SegmentRows::Open(*store_, *participant_, sr, columns_.get()));
  FragmentOptions fo{o.work_mem, o.cancel};
  fo.params = o.params;
  return RunFragment(
      fragment, *rows, fo, [&](exec::Batch& b, const std::string&) { return emit(b); }, stats);
}

bool NodeServer::OnRunPlan(Connection& conn, net::ReceivedMessage& msg) {
  auto r = msg.Root<proto::Request>().getRunPlan();
  CpuBook cpu;
  std::map<NodeId, std::string> owner_stats;  // encoded, for the last reply
  auto reply = [&](const Status& st, bool last, BatchFrame* frame, const std::string* stats) {
    net::MessageBuilder mb;
    auto resp = mb.initRoot<proto::Response>();
    SetStatus(resp.initStatus(), st);
    auto b = resp.initScanBatch();
    b.setLast(last);
    if (frame) frame->Attach(mb, b);
    if (stats) b.setStats(Bytes(*stats));
    if (last && !owner_stats.empty()) {
      auto l = b.initOwnerStats(owner_stats.size());
      size_t i = 0;
      for (const auto& [node, enc] : owner_stats) {
        l[i].setNode(node);
        l[i++].setStats(Bytes(enc));
      }
    }
    if (last) {
      auto by_node = cpu.Take();
      auto l = b.initNodeCpu(by_node.size());
      size_t i = 0;
      for (const auto& [node, nanos] : by_node) {
        l[i].setNode(node);
        l[i++].setNanos(nanos);
      }
    }
    return SendResponse(conn, mb).ok();
  };
  auto plan = plan::PlanNode::Deserialize(Str(r.getPlan()));
  if (!plan.ok()) return reply(plan.status(), true, nullptr, nullptr);
  std::vector<std::unique_ptr<ShippedPartMap>> maps;
  for (auto x : r.getExchanges()) {
    std::vector<rpc::SegmentPlace> places;
    for (auto p : x.getPlaces()) {
      places.push_back({p.getSegment(), p.getNode(), Str(p.getLo()), Str(p.getHi())});
      peers_->Learn(p.getNode(), p.getHost(), p.getPort());
    }
    maps.push_back(std::make_unique<ShippedPartMap>(
        std::move(places), *peers_, opts_.self.id,
        [this](SegmentId seg, const std::string& lo, const std::string& hi,
               const plan::PlanNode& fragment, const rpc::ExchangeOptions& o,
               const std::function<Status(exec::Batch&)>& emit,
               std::vector<exec::OperatorStats>* stats) {
          return RunLocal(seg, lo, hi, fragment, o, emit, stats);
        },
        cpu));
  }
  std::atomic<bool> cancel{false};
  rpc::ExchangeSource::Options xo;
  xo.read_ts = r.getReadTs();
  xo.txn = r.getTxn();
  xo.work_mem = static_cast<int64_t>(r.getWorkMem());
  xo.cancel = &cancel;
  exec::RemoteStats owners;  // EXPLAIN ANALYZE: the fragments' counters, by plan node and owner
  if (r.getAnalyze()) xo.stats = &owners;
  HelperProvider provider(**plan, std::move(maps), xo);
  if (Status st = provider.Check(); !st.ok()) return reply(st, true, nullptr, nullptr);
  exec::ExecContext ctx(&provider, &cancel);
  ctx.work_mem = xo.work_mem;
  std::vector<exec::OperatorStats> stats;
  // Batches go several to a frame (BatchFrame), the last ones with the end of the plan.
  bool sent = true;
  BatchFrame frame(opts_.scan_frame_bytes);
  Status st;
  {
    HangUpWatch watch(conn, &cancel);
    st = exec::Execute(
        **plan, ctx,
        [&](const exec::Batch& b) {
          auto now = BatchFrame::Clock::now();
          if (frame.Full(now)) {
            MaybeFail("node.offload.before_send");
            sent = reply(Status::OK(), false, &frame, nullptr);
            if (!sent) return Status::IOError("master went away");
            frame.Clear();
          }
          frame.Add(b, now);
          return Status::OK();
        },
        &stats);
  }
  if (!sent || cancel.load()) return false;
  std::string counters = exec::EncodeOperatorStats(stats);
  owner_stats = OwnerStats(**plan, owners);
  if (st.ok() && !frame.empty()) MaybeFail("node.offload.before_send");
  return reply(st, true, st.ok() && !frame.empty() ? &frame : nullptr, &counters);
}

}  // namespace wattdb::node
