#include "master/energy/energy_service.h"

#include <fmt/format.h>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/cluster.h"

namespace wattdb::master {

const char* const kDefaultPolicyToml =
    R"(# The embedded energy policy: nodes with nothing to do drain and go to standby, down to one;
# they come back when the CPU demand rises towards 80% of the active nodes.
mode = "dynamic"
min_active_nodes = 1
)";

// The cluster as the controller sees it: nodes from the registry and the catalog, segment
// heat from the nodes' per-segment counters, actions through the cluster's operations.
class EnergyService::ClusterPlane : public ControlPlane {
 public:
  ClusterPlane(Cluster& c, EnergyService& svc) : c_(c), svc_(svc) {}

  std::vector<ControlNode> Observe() override {
    std::map<NodeId, NodeInfo> info;
    for (auto& n : c_.registry().Snapshot()) info[n.id] = std::move(n);
    std::map<SegmentId, const SegmentTelemetry*> tele;
    std::map<SegmentId, int64_t> seen_at;
    for (const auto& [id, n] : info) {
      for (const auto& s : n.segments) {
        tele[s.id] = &s;
        seen_at[s.id] = n.last_heartbeat_us;
      }
    }
    std::map<NodeId, ControlNode> out;
    for (const auto& nc : c_.config().nodes) {
      ControlNode& n = out[nc.id];
      n.id = nc.id;
      n.profile = c_.config().Profile(nc);
      n.hosted = nc.InMaster();
      switch (c_.catalog().GetNodeState(nc.id)) {
        case NodeAdminState::kActive:
          n.state = ControlState::kActive;
          break;
        case NodeAdminState::kDraining:
          n.state = ControlState::kDraining;
          break;
        case NodeAdminState::kOff:
          n.state = ControlState::kOff;
          break;
        case NodeAdminState::kSuspended:
          n.state = ControlState::kSuspended;
          break;
      }
      auto it = info.find(nc.id);
      n.up = it != info.end() && it->second.up;
      if (n.up) n.cpu_cores = it->second.cpu_percent / 100.0;
      n.busy = c_.placement().OperatorBusy(nc.id);
    }
    std::map<SegmentId, Heat> heat;
    for (const auto& s : c_.catalog().AllSegments()) {
      auto n = out.find(s.node);
      if (n == out.end()) continue;
      ControlSegment cs{s.id, 0, 0, s.followers};
      auto t = tele.find(s.id);
      Heat h = heat_.count(s.id) ? heat_[s.id] : Heat{};
      if (t != tele.end()) {
        cs.bytes = t->second->bytes;
        uint64_t count = t->second->rows_read + t->second->rows_written;
        int64_t at = seen_at[s.id];
        if (h.at == 0 || h.node != s.node || count < h.count) {
          // First sight, or the segment moved (its counters restart on the new owner): a new
          // baseline; the rate measured so far stays, heat follows the segment.
          h = Heat{count, at, s.node, h.rate};
        } else if (at > h.at) {
          double rate = (count - h.count) / ((at - h.at) / 1e6);
          h.rate = 0.5 * h.rate + 0.5 * rate;
          h.count = count;
          h.at = at;
        }
      }
      cs.heat = h.rate;
      heat[s.id] = h;
      n->second.segments.push_back(cs);
    }
    heat_ = std::move(heat);
    std::vector<ControlNode> v;
    v.reserve(out.size());
    for (auto& [_, n] : out) v.push_back(std::move(n));
    return v;
  }

  Status Wake(NodeId node) override { return c_.placement().PowerOn(node); }
  Status SetDraining(NodeId node, bool draining) override {
    return c_.placement().SetDraining(node, draining);
  }
  Result<MovedSegment> Move(SegmentId seg, NodeId to) override {
    ASSIGN_OR_RETURN(MoveReport r, c_.placement().MoveSegment(seg, to));
    return MovedSegment{r.bytes, r.pull_ms / 1000.0};
  }
  std::pair<uint64_t, uint64_t> Statements() override {
    return {c_.queries().statements.load(), c_.queries().micros.load()};
  }
  Result<SegmentId> Split(SegmentId seg) override { return c_.placement().SplitSegment(seg); }
  Status Sleep(NodeId node, bool suspend) override {
    return suspend ? c_.placement().Suspend(node) : c_.placement().PowerOff(node);
  }
  bool Pause(double seconds) override {
    MutexLock l(svc_.mu_);
    auto until = CondVar::DeadlineIn(std::chrono::duration<double>(seconds));
    while (!svc_.stopping_ && svc_.cv_.WaitUntil(svc_.mu_, until)) {
    }
    return !svc_.stopping_;
  }

 private:
  struct Heat {
    uint64_t count = 0;
    int64_t at = 0;  // heartbeat time of the count
    NodeId node = 0;
    double rate = 0;  // rows per second, smoothed
  };
  Cluster& c_;
  EnergyService& svc_;
  std::map<SegmentId, Heat> heat_;  // used by the controller thread only
};

EnergyService::EnergyService(Cluster& cluster, std::string policy_path)
    : cluster_(cluster), path_(std::move(policy_path)) {}

EnergyService::~EnergyService() { Stop(); }

Result<EnergyPolicy> EnergyService::Load() const {
  if (path_.empty()) return ParsePolicy(kDefaultPolicyToml, "<default policy>", cluster_.config());
  return LoadPolicy(path_, cluster_.config());
}

Status EnergyService::Init() {
  ASSIGN_OR_RETURN(EnergyPolicy p, Load());
  plane_ = std::make_unique<ClusterPlane>(cluster_, *this);
  controller_ = std::make_unique<EnergyController>(*plane_, Clock::Real(), p);
  Log("energy")->info(
      "energy policy {}: mode={} scale_out_cpu={} scale_in_cpu={} min_active_nodes={}", p.source,
      PolicyModeName(p.mode), p.scale_out_cpu, p.scale_in_cpu, p.min_active_nodes);
  return Status::OK();
}

void EnergyService::Start() {
  if (!controller_ || thread_.joinable()) return;
  // (The cluster has started: its placement exists.)
  EnergyPolicy p = controller_->policy();
  cluster_.placement().SetSleepPolicy(p.min_live_replicas,
                                      static_cast<uint64_t>(p.sleep_log_mb * (1 << 20)));
  thread_ = std::thread([this] { Loop(); });
}

void EnergyService::Stop() {
  {
    MutexLock l(mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

Status EnergyService::Reload() {
  if (!controller_) return Status::Internal("the energy controller is not running");
  auto p = Load();
  DecisionRecord rec;
  rec.time_us = Clock::Real().WallMicros();
  rec.decision = "reload";
  rec.mode = PolicyModeName(p.ok() ? p->mode : controller_->policy().mode);
  if (!p.ok()) {
    rec.reason = "the new policy is invalid; the old one stays in force";
    rec.outcome = p.status().message();
    Log("energy")->error("policy reload rejected (the old policy stays in force): {}",
                         p.status().message());
    controller_->log().Add(rec);
    return Status::Sql(sqlstate::kInvalidParameterValue,
                       fmt::format("energy policy not reloaded: {}", p.status().message()));
  }
  rec.reason = fmt::format("policy reloaded from {}", p->source);
  rec.outcome = "ok";
  rec.scale_out_cpu = p->scale_out_cpu;
  rec.scale_in_cpu = p->scale_in_cpu;
  Log("energy")->info("policy reloaded from {}: mode={}", p->source, PolicyModeName(p->mode));
  controller_->SetPolicy(*p);
  cluster_.placement().SetSleepPolicy(p->min_live_replicas,
                                      static_cast<uint64_t>(p->sleep_log_mb * (1 << 20)));
  controller_->log().Add(rec);
  return Status::OK();
}

void EnergyService::Loop() {
  auto interval = std::chrono::milliseconds(cluster_.config().telemetry_interval_ms);
  for (;;) {
    {
      MutexLock l(mu_);
      auto until = CondVar::DeadlineIn(interval);
      while (!stopping_ && cv_.WaitUntil(mu_, until)) {
      }
      if (stopping_) return;
    }
    controller_->Step();
  }
}

}  // namespace wattdb::master
