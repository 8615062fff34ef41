// PowerMonitor: reads every meter (each node's, and the always-on infrastructure's: the
// master's host, the switch) every meter_interval_ms and integrates the readings into joules
// since the master started (power/energy_integrator.h). Model meters get the node's power
// state (NodePower) and CPU utilisation (its telemetry over its profile's CPU capacity).
// A meter that fails or goes silent is flagged with the reason and its gap left out of the
// energy. Each component is read on a thread of its own, so a slow meter (an ipmitool call
// waiting for an unreachable BMC) delays no other; node power states are refreshed on
// another. Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "master/energy/node_power.h"
#include "master/cluster/node_registry.h"
#include "power/energy_integrator.h"
#include "power/meter.h"

namespace wattdb::master {

struct ComponentPower {
  std::string component;  // "node 1", ..., "master", "switch"
  NodeId node_id = 0;     // 0 for infrastructure
  std::string state;      // power state ("on" for infrastructure)
  std::string meter;      // meter type
  double watts = 0;       // newest good reading
  double joules = 0;      // since the master started, gaps left out
  bool meter_ok = false;  // the newest reading succeeded
  std::string meter_error;
  uint64_t readings = 0, gaps = 0;
  double gap_seconds = 0, covered_seconds = 0;
};

class PowerMonitor {
 public:
  PowerMonitor(const ClusterConfig& config, NodeRegistry& registry, NodePower& power,
               const Clock& clock = Clock::Real());
  ~PowerMonitor();

  Status Init();  // builds the meters
  void Start();
  void Stop();
  // Refreshes power states and reads every meter once, on the calling thread (tests).
  void SampleOnce();
  std::vector<ComponentPower> Snapshot();

 private:
  struct Component {
    ComponentPower info;
    std::unique_ptr<power::Meter> meter;  // null: not metered
    power::EnergyIntegrator energy;
    double cpus = 1;  // capacity the utilisation is relative to
  };
  void Sample(Component& c, const std::map<NodeId, NodeInfo>& live);
  double MasterCpuUtilization();
  // Runs `f` every meter interval until Stop().
  void Every(const std::function<void()>& f);

  const ClusterConfig& config_;
  NodeRegistry& registry_;
  NodePower& power_;
  const Clock& clock_;
  std::mutex mu_;  // guards components_' info and energy
  std::vector<std::unique_ptr<Component>> components_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  int64_t last_cpu_us_ = 0, last_cpu_at_us_ = 0;  // the master's own CPU time (its component's thread)
};

}  // namespace wattdb::master
