#include "master/sql/offload.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "common/sqlstate.h"

namespace wattdb::master {

namespace {

// Offloaded subtrees running now, by helper node (spreads concurrent statements before the
// helpers' telemetry shows their load).
std::mutex g_running_mu;
std::map<NodeId, int> g_running;

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
      return Status::Sql(
          sqlstate::kInvalidParameterValue,
          fmt::format("invalid value for parameter \"wattdb_offload\": \"{}\" (off, auto, on "
                      "or a node id)",
                      s));
    }
    o.mode = Mode::kNode;
    o.node = static_cast<NodeId>(n);
  }
  return o;
}

NodeId ChooseHelper(const std::vector<HelperCandidate>& nodes, const OffloadSetting& s,
                    double master_share) {
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
  if (s.mode == Mode::kAuto && (master_share < kMasterBusyShare || best_load >= kIdleHelperLoad))
    return 0;
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
      std::ifstream q("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_quota_us"),
          p("/sys/fs/cgroup/cpu" + path + "/cpu.cfs_period_us");
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

Result<std::unique_ptr<OffloadSource>> OffloadSource::Open(Cluster& cluster,
                                                           const plan::PlanNode& offload,
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

  RemotePlan::Options ro{opts.read_ts, opts.txn, opts.work_mem, opts.cancel, opts.stats != nullptr};
  ASSIGN_OR_RETURN(auto remote, RemotePlan::Start(cluster, *offload.children[0], helper, ro));
  if (!remote) return std::unique_ptr<OffloadSource>();  // run here
  std::unique_ptr<OffloadSource> src(new OffloadSource(cluster.queries(), offload, opts));
  src->helper_ = helper;
  src->remote_ = std::move(remote);
  std::lock_guard<std::mutex> l(g_running_mu);
  g_running[helper]++;
  return src;
}

OffloadSource::~OffloadSource() {
  remote_.reset();  // an unfinished plan's connection is dropped: the helper stops
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
  std::vector<exec::OperatorStats> stats;
  auto more = remote_->Next(out, &stats);
  ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!more.ok()) {
    failed_ = exec::IsHelperFailure(more.status());
    if (failed_) {
      Log("master")->info("offloaded plan failed on its helper node=n{} rows={} err={}", helper_,
                          rows_, more.status().ToString());
    }
    return more.status();
  }
  if (*more) {
    rows_ += out.rows;
    batches_++;
    return true;
  }
  done_ = true;
  AddRemoteStats(*offload_.children[0], helper_, stats, opts_.stats);
  AddOwnerStats(*offload_.children[0], remote_->owner_stats(), opts_.stats);
  return false;
}

}  // namespace wattdb::master
