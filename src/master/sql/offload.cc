#include "master/sql/offload.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <thread>
#include <map>
#include <mutex>

#include "master/energy/statement_energy.h"
#include "proto/node_service.capnp.h"
#include "query/plan/offload.h"
#include "rpc/proto_util.h"

namespace wattdb::master {

namespace {

// Offloaded subtrees running now, by helper node (spreads concurrent statements before the
// helpers' telemetry shows their load).
std::mutex g_running_mu;
std::map<NodeId, int> g_running;

const plan::PlanNode* LeafScan(const plan::PlanNode& p) {
  if (p.kind == plan::PlanNode::Kind::kScan) return &p;
  return p.children.size() == 1 ? LeafScan(*p.children[0]) : nullptr;
}

}  // namespace

Result<OffloadSetting> OffloadSetting::Parse(const std::string& s) {
  OffloadSetting o;
  if (s == "off") {
    o.mode = Mode::kOff;
  } else if (s == "auto" || s == "default" || s == "DEFAULT") {
    o.mode = Mode::kAuto;
  } else if (s == "on") {
    o.mode = Mode::kOn;
  } else {
    char* end = nullptr;
    unsigned long n = std::strtoul(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0' || n == 0 || n > 0xffffffffu) {
      return Status::Sql("22023", fmt::format("invalid value for parameter \"wattdb_offload\": \"{}\" (off, auto, on "
                                              "or a node id)",
                                              s));
    }
    o.mode = Mode::kNode;
    o.node = static_cast<NodeId>(n);
  }
  return o;
}

NodeId ChooseHelper(const std::vector<HelperCandidate>& nodes, const OffloadSetting& s, double master_share) {
  using Mode = OffloadSetting::Mode;
  if (s.mode == Mode::kOff) return 0;
  if (s.mode == Mode::kNode) {
    for (const auto& n : nodes) {
      if (n.id == s.node) return n.id;
    }
    return 0;
  }
  const HelperCandidate* best = nullptr;
  double best_load = 0;
  for (const auto& n : nodes) {
    double load = n.cpu_percent / 100.0 + n.running;
    if (!best || load < best_load || (load == best_load && n.id < best->id)) {
      best = &n;
      best_load = load;
    }
  }
  if (!best) return 0;
  if (s.mode == Mode::kAuto && (master_share < kMasterBusyShare || best_load >= kIdleHelperLoad)) return 0;
  return best->id;
}

double CpuCapacity() {
  double cores = std::max(1u, std::thread::hardware_concurrency());
  std::ifstream self("/proc/self/cgroup");
  std::string line;
  while (std::getline(self, line)) {
    // v2 "0::/path"; v1 "N:cpu,cpuacct:/path"
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    long long quota = -1, period = 0;
    if (controllers.empty()) {
      std::ifstream f("/sys/fs/cgroup" + path + "/cpu.max");
      std::string q;
      if (f >> q >> period && q != "max") quota = std::atoll(q.c_str());
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      std::ifstream q("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_quota_us"), p("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_period_us");
      if (!(q >> quota) || !(p >> period)) quota = -1;
    }
    if (quota > 0 && period > 0) cores = std::min(cores, static_cast<double>(quota) / period);
  }
  return cores;
}

double MasterShare() {
  static std::mutex mu;
  static std::chrono::steady_clock::time_point last_wall;
  static double last_cpu = 0, share = 0;
  auto cpu_now = [] {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  std::lock_guard<std::mutex> l(mu);
  auto now = std::chrono::steady_clock::now();
  double wall = std::chrono::duration<double>(now - last_wall).count();
  if (wall >= 0.5) {
    double cpu = cpu_now();
    if (last_wall.time_since_epoch().count() != 0) share = (cpu - last_cpu) / wall / CpuCapacity();
    last_cpu = cpu;
    last_wall = now;
  }
  return share;
}

Result<std::unique_ptr<OffloadSource>> OffloadSource::Open(Cluster& cluster, const plan::PlanNode& offload,
                                                           Options opts) {
  if (offload.children.size() != 1) return Status::Internal("offload without its subtree");
  OffloadSetting setting = opts.setting;
  if (offload.index != 0) setting = {OffloadSetting::Mode::kNode, offload.index};
  // Automatic: nothing to decide (nor to look up) while the master has room.
  double master_share = setting.mode == OffloadSetting::Mode::kAuto ? MasterShare() : 0;
  if (setting.mode == OffloadSetting::Mode::kAuto && master_share < kMasterBusyShare) {
    return std::unique_ptr<OffloadSource>();
  }
  std::map<NodeId, NodeInfo> up;
  for (auto& n : cluster.registry().Snapshot()) {
    if (n.up) up[n.id] = std::move(n);
  }
  std::vector<HelperCandidate> candidates;
  {
    std::lock_guard<std::mutex> l(g_running_mu);
    for (const auto& [id, n] : up) {
      if (cluster.catalog().GetNodeState(id) != NodeAdminState::kActive) continue;
      candidates.push_back({id, n.cpu_percent, g_running[id]});
    }
  }
  NodeId helper = ChooseHelper(candidates, setting, master_share);
  if (helper == 0) return std::unique_ptr<OffloadSource>();

  capnp::MallocMessageBuilder mb;
  auto r = mb.initRoot<proto::Request>().initRunPlan();
  std::string plan;
  offload.children[0]->Serialize(&plan);
  r.setPlan(rpc::Bytes(plan));
  r.setReadTs(opts.read_ts);
  r.setTxn(opts.txn);
  r.setWorkMem(static_cast<uint64_t>(std::max<int64_t>(0, opts.work_mem)));
  auto xs = plan::Exchanges(*offload.children[0]);
  auto lx = r.initExchanges(xs.size());
  for (size_t i = 0; i < xs.size(); i++) {
    const plan::PlanNode* scan = xs[i]->children.empty() ? nullptr : LeafScan(*xs[i]->children[0]);
    if (!scan) return Status::Internal("exchange fragment without a scan");
    auto segs = cluster.catalog().SegmentsOverlapping(scan->table, scan->lo, scan->hi);
    auto lp = lx[i].initPlaces(segs.size());
    for (size_t k = 0; k < segs.size(); k++) {
      auto it = up.find(segs[k].node);
      if (it == up.end()) return std::unique_ptr<OffloadSource>();  // an owner is down: the master's exchanges wait for it
      lp[k].setSegment(segs[k].id);
      lp[k].setLo(rpc::Bytes(segs[k].lo));
      lp[k].setHi(rpc::Bytes(segs[k].hi));
      lp[k].setNode(segs[k].node);
      lp[k].setHost(it->second.host);
      lp[k].setPort(it->second.port);
    }
  }
  std::unique_ptr<OffloadSource> src(new OffloadSource(cluster.queries(), offload, opts));
  src->helper_ = helper;
  auto client = cluster.registry().Client(helper);
  if (!client.ok()) return std::unique_ptr<OffloadSource>();  // went down meanwhile: run here
  src->client_ = std::move(*client);
  auto stream = rpc::ScanStream::Start(*src->client_, mb);
  if (!stream.ok()) return std::unique_ptr<OffloadSource>();  // the helper is unreachable: run here
  src->stream_ = std::move(*stream);
  std::lock_guard<std::mutex> l(g_running_mu);
  g_running[helper]++;
  return src;
}

OffloadSource::~OffloadSource() {
  stream_.reset();  // an unfinished stream drops its connection: the helper stops
  if (done_) counters_.offloaded.fetch_add(1, std::memory_order_relaxed);
  if (failed_) counters_.offload_failures.fetch_add(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> l(g_running_mu);
    if (--g_running[helper_] <= 0) g_running.erase(helper_);
  }
  if (opts_.stats) {
    exec::OperatorStats& into = (*opts_.stats)[&offload_][helper_];
    into.rows += rows_;
    into.batches += batches_;
    into.ms += ms_;
  }
}

Result<bool> OffloadSource::Next(exec::Batch& out) {
  auto t0 = std::chrono::steady_clock::now();
  while (!done_) {
    std::string resume;
    bool last = false;
    uint64_t cpu = 0;
    std::vector<exec::OperatorStats> stats;
    Status st = stream_->NextColumns(&out, &resume, &last, &cpu, &stats, opts_.cancel);
    StatementCpuScope::AddNode(helper_, cpu);
    if (!st.ok()) {
      failed_ = exec::IsHelperFailure(st);
      return st;
    }
    if (last) {
      done_ = true;
      if (opts_.stats && !stats.empty()) {
        std::vector<const plan::PlanNode*> order;  // the subtree's nodes in pre-order
        std::function<void(const plan::PlanNode&)> walk = [&](const plan::PlanNode& p) {
          order.push_back(&p);
          for (const auto& c : p.children) walk(*c);
        };
        walk(*offload_.children[0]);
        for (size_t i = 0; i < stats.size() && i < order.size(); i++) (*opts_.stats)[order[i]][helper_] = stats[i];
      }
    }
    if (out.rows > 0) {
      if (out.cols.size() != offload_.types.size()) {
        return Status::Corruption(fmt::format("helper node {} sent a batch of another width", helper_));
      }
      rows_ += out.rows;
      batches_++;
      ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      return true;
    }
  }
  ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return false;
}

}  // namespace wattdb::master
