// EnergyPolicy: what the energy controller may do, from an energy-policy file (TOML, its own
// file). Every key is optional; unknown keys, wrong types and impossible values are errors
// naming the file, the line and the key, and the master refuses to start on them.
//
//   mode = "dynamic"            # static (all nodes on) | dynamic | manual (controller off)
//   scale_out_cpu = 0.80        # wake a node when forecast utilisation exceeds this
//   scale_in_cpu = 0.30         # consider sleeping one when it stays below this
//   hysteresis = 0.05           # a threshold counts as crossed only this far beyond it
//   window_s = 60               # utilisation is observed over this window
//   cooldown_s = 60             # no decision within this long after an action
//   min_active_nodes = 1
//   max_active_nodes = 0        # 0 = every configured node
//   pinned = [1]                # nodes never put to sleep
//   standby = "suspend"         # suspend | off
//   migration_mb_s = 50         # drains and refills move at most this fast (0 = unlimited)
//   forecaster = "holt"         # holt (linear trend) | ewma
//   alpha = 0.3                 # level smoothing, weight of one second of samples
//   beta = 0.05                 # trend smoothing, per second (holt; low: one busy sample is not a
//   trend) horizon_s = 15              # forecast this far ahead (wake before the load arrives)
//   down_s = 5                  # time a node takes to go to standby (break-even energy)
//   latency_target_ms = 0       # also wake a node when statements take longer than this on
//                               # average over a telemetry interval (0 = CPU only)
//   min_live_replicas = 1       # live copies every replicated segment keeps: no node sleeps
//                               # that would leave fewer (1: energy first, 2: durability first)
//   sleep_log_mb = 64           # a leader keeps this much of the writes a sleeping copy misses,
//                               # to catch it up on waking (beyond: it is copied again; 0: always)
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::master {

struct EnergyPolicy {
  enum class Mode { kStatic, kDynamic, kManual };
  Mode mode = Mode::kDynamic;
  double scale_out_cpu = 0.80;
  double scale_in_cpu = 0.30;
  double hysteresis = 0.05;
  double window_s = 60;
  double cooldown_s = 60;
  int min_active_nodes = 1;
  int max_active_nodes = 0;
  std::vector<NodeId> pinned;
  std::string standby = "suspend";
  double migration_mb_s = 50;
  std::string forecaster = "holt";
  double alpha = 0.3;
  double beta = 0.05;
  double horizon_s = 15;
  double down_s = 5;
  double latency_target_ms = 0;
  int min_live_replicas = 1;
  double sleep_log_mb = 64;
  std::string source;  // the file it came from ("<default>" for the embedded one)
};

const char* PolicyModeName(EnergyPolicy::Mode m);

// Parses policy TOML; `source` names it in errors. `cluster` checks node ids and counts.
Result<EnergyPolicy> ParsePolicy(const std::string& toml_text, const std::string& source,
                                 const ClusterConfig& cluster);
Result<EnergyPolicy> LoadPolicy(const std::string& path, const ClusterConfig& cluster);

// The break-even time of putting a node to sleep: the idle time after which sleeping saves
// energy, T_be = (E_down + E_up + E_migrate) / (P_idle - P_standby), with
//   E_down = P_idle × down_s, E_up = P_idle × (resume or boot time),
//   E_migrate = 2 × P_idle × bytes / rate (source and target busy while its segments move,
//   and again when they come back is counted in the refill's own decision).
// Infinite if standby saves nothing.
struct BreakEven {
  double e_down_j = 0, e_up_j = 0, e_migrate_j = 0, saved_w = 0, seconds = 0;
};
BreakEven ComputeBreakEven(const EnergyPolicy& policy, const HostProfile& profile,
                           uint64_t bytes_to_move, double move_bytes_per_s);

}  // namespace wattdb::master
