// NodePower: every node's power driver, the power state the master knows for it, and the
// last power action with its result (wattdb_nodes shows them). Power actions on nodes are
// serialized by mu(): ALTER NODE ... POWER/SUSPEND and the supervisor's restarts hold it.
// State is cached: Refresh() asks the drivers (an ipmitool call each for ipmi) and is run by
// the power monitor every meter interval; State() never blocks on hardware. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "master/nodes/node_registry.h"
#include "power/power_driver.h"

namespace wattdb::master {

struct NodePowerInfo {
  NodeId id = 0;
  power::PowerState state = power::PowerState::kUnknown;
  std::string driver;
  std::string state_error;     // why the state is unknown ("" if known)
  std::string last_action;     // "" = none since the master started
  std::string last_result;     // "ok" or the error
  int64_t last_action_us = 0;  // wall clock
  double last_action_ms = 0;   // how long the action took
};

class NodePower {
 public:
  NodePower(const ClusterConfig& config, NodeRegistry& registry, const Clock& clock);

  // Creates each node's driver.
  Status Init(const power::DriverContext& ctx);

  Mutex& mu() RETURN_CAPABILITY(mu_) { return mu_; }
  power::PowerDriver& Driver(NodeId node);

  // Runs `action` on `node` through its driver and records it as the node's last action.
  // `label` names the action in the record (e.g. "restart").
  Status Act(NodeId node, power::PowerAction action, const std::string& label = "") REQUIRES(mu_);

  // Records that `action` on `node` failed after the driver took it (e.g. the node did not
  // register after a wake): the node's state becomes unknown with `why`.
  void RecordFailure(NodeId node, const std::string& why);

  // Re-reads every node's state (drivers that observe it; otherwise from heartbeats and the
  // last action). Skips a node whose action is running.
  void Refresh();
  // The node's state as last refreshed; a registered node is on.
  power::PowerState State(NodeId node);
  std::vector<NodePowerInfo> Snapshot();

 private:
  const ClusterConfig& config_;
  NodeRegistry& registry_;
  const Clock& clock_;
  Mutex mu_;                                                       // serializes power actions
  std::map<NodeId, std::unique_ptr<power::PowerDriver>> drivers_;  // made by Init, then read-only
  Mutex info_mu_;
  std::map<NodeId, NodePowerInfo> info_ GUARDED_BY(info_mu_);
};

}  // namespace wattdb::master
