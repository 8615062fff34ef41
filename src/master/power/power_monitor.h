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
#include "common/mutex.h"
#include "master/nodes/node_registry.h"
#include "master/power/node_power.h"
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

// What a statement's energy needs of one component, as of its newest sample.
struct ComponentRate {
  NodeId node_id = 0;   // 0 for infrastructure
  bool master = false;  // the master's own host
  bool meter_ok = false;
  double watts = 0;
  double cpu_rate = 0;  // CPU seconds per second it spent (nodes: telemetry; master: its process)
};

struct EnergyRates {
  std::vector<ComponentRate> components;
  double master_cpu_rate = 0;  // the master process's, sampled whether or not it is metered
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
  // Every component's rates as of its newest sample: one shared immutable table, replaced
  // after each sample, so that reading it per statement costs a lock and a reference.
  std::shared_ptr<const EnergyRates> Rates() const;

 private:
  struct Component {
    ComponentPower info;
    std::unique_ptr<power::Meter> meter;  // null: not metered
    power::EnergyIntegrator energy;
    double cpus = 1;      // capacity the utilisation is relative to
    double cpu_rate = 0;  // CPU seconds per second, newest sample
  };
  void Sample(Component& c, const std::map<NodeId, NodeInfo>& live);
  void PublishRatesLocked() REQUIRES(mu_);
  // Samples the master process's CPU rate (CPU seconds per second since the last call).
  void SampleMasterCpu();
  // Runs `f` every meter interval until Stop().
  void Every(const std::function<void()>& f);

  const ClusterConfig& config_;
  NodeRegistry& registry_;
  NodePower& power_;
  const Clock& clock_;
  mutable Mutex mu_;  // guards components_' info, energy and rates, and rates_
  // The list is made by Init and read-only after; its components' fields are under mu_.
  std::vector<std::unique_ptr<Component>> components_;
  std::shared_ptr<const EnergyRates> rates_ GUARDED_BY(mu_) = std::make_shared<EnergyRates>();
  double master_cpu_rate_ GUARDED_BY(mu_) = 0;
  Mutex stop_mu_;
  CondVar stop_cv_;
  bool stopping_ GUARDED_BY(stop_mu_) = false;
  std::vector<std::thread> threads_;
  int64_t last_cpu_us_ = 0,
          last_cpu_at_us_ = 0;  // the master's own CPU time (SampleMasterCpu's caller)
};

}  // namespace wattdb::master
