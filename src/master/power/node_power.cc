#include "master/power/node_power.h"

#include <chrono>

#include "common/logging.h"
#include "common/sqlstate.h"

namespace wattdb::master {

using power::PowerAction;
using power::PowerState;

NodePower::NodePower(const ClusterConfig& config, NodeRegistry& registry, const Clock& clock)
    : config_(config), registry_(registry), clock_(clock) {}

Status NodePower::Init(const power::DriverContext& ctx) {
  for (const auto& n : config_.nodes) {
    ASSIGN_OR_RETURN(drivers_[n.id], power::MakeDriver(n, ctx));
    MutexLock l(info_mu_);
    NodePowerInfo& i = info_[n.id];
    i.id = n.id;
    i.driver = drivers_[n.id]->name();
  }
  return Status::OK();
}

power::PowerDriver& NodePower::Driver(NodeId node) { return *drivers_.at(node); }

Status NodePower::Act(NodeId node, PowerAction action, const std::string& label) {
  const NodeConfig* nc = config_.FindNode(node);
  if (!nc)
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", node));
  power::PowerDriver& d = Driver(node);
  if (!d.Supports(action)) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("node {}'s power driver '{}' cannot {}", node, d.name(),
                                   power::PowerActionName(action)));
  }
  auto t0 = std::chrono::steady_clock::now();
  Status s;
  switch (action) {
    case PowerAction::kOn:
      s = d.PowerOn(*nc);
      break;
    case PowerAction::kOff:
      s = d.PowerOff(*nc);
      break;
    case PowerAction::kSuspend:
      s = d.Suspend(*nc);
      break;
  }
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MutexLock l(info_mu_);
  NodePowerInfo& i = info_[node];
  i.last_action = label.empty() ? power::PowerActionName(action) : label;
  i.last_result = s.ok() ? "ok" : s.ToString();
  i.last_action_us = clock_.WallMicros();
  i.last_action_ms = ms;
  if (s.ok()) {
    i.state = action == PowerAction::kOn    ? PowerState::kOn
              : action == PowerAction::kOff ? PowerState::kOff
                                            : PowerState::kSuspended;
    i.state_error.clear();
  } else {
    Log("power")->warn("node {} {} failed driver={}: {}", node, i.last_action, d.name(),
                       s.ToString());
  }
  return s;
}

void NodePower::RecordFailure(NodeId node, const std::string& why) {
  MutexLock l(info_mu_);
  NodePowerInfo& i = info_[node];
  i.last_result = why;
  i.state = PowerState::kUnknown;
  i.state_error = why;
  Log("power")->warn("node {}: {}", node, why);
}

void NodePower::Refresh() {
  for (const auto& n : config_.nodes) {
    if (!mu_.TryLock()) return;  // an action runs; it records its own outcome
    power::PowerDriver& d = Driver(n.id);
    Result<PowerState> st = PowerState::kUnknown;
    if (d.ObservesState()) st = d.State(n);
    mu_.Unlock();
    MutexLock l(info_mu_);
    NodePowerInfo& i = info_[n.id];
    if (!d.ObservesState()) {
      // Heartbeats say on; otherwise the last successful action says what the node became.
      if (registry_.IsUp(n.id)) {
        i.state = PowerState::kOn;
        i.state_error.clear();
      } else if (i.state == PowerState::kOn) {
        i.state = PowerState::kUnknown;
        i.state_error = "not heartbeating";
      }
      continue;
    }
    if (st.ok()) {
      i.state = *st;
      i.state_error.clear();
    } else {
      if (i.state != PowerState::kUnknown || i.state_error != st.status().message()) {
        Log("power")->warn("node {} power state unknown driver={}: {}", n.id, d.name(),
                           st.status().message());
      }
      i.state = PowerState::kUnknown;
      i.state_error = st.status().message();
    }
  }
}

PowerState NodePower::State(NodeId node) {
  if (registry_.IsUp(node)) return PowerState::kOn;
  MutexLock l(info_mu_);
  auto it = info_.find(node);
  return it == info_.end() ? PowerState::kUnknown : it->second.state;
}

std::vector<NodePowerInfo> NodePower::Snapshot() {
  std::vector<NodePowerInfo> out;
  {
    MutexLock l(info_mu_);
    for (const auto& [id, i] : info_) out.push_back(i);
  }
  for (auto& i : out) {
    if (registry_.IsUp(i.id)) i.state = PowerState::kOn;
  }
  return out;
}

}  // namespace wattdb::master
