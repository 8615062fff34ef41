// Meter: measures one component's power (a node, the master's host, the switch). Readings
// are taken by the master every meter interval and integrated into joules
// (power/energy_integrator.h). Implementations: `model` (watts from the power state and the
// CPU utilisation, linear between idle and peak), `rapl` (Linux powercap energy counter),
// `ipmi-dcmi` (the BMC's DCMI power reading through ipmitool) and `external` (a lab
// wattmeter's stream of samples). A meter that cannot be read returns an error: the master
// flags it and leaves the gap out of the energy. Not thread-safe: one caller reads.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "power/power_driver.h"

namespace wattdb::power {

// What the master knows about the component when it reads the meter (the model's inputs).
struct ComponentStatus {
  PowerState state = PowerState::kUnknown;
  double cpu_utilization = 0;  // 0..1 of the component's CPU capacity
};

struct MeterReading {
  double watts = 0;
  // Energy since an arbitrary origin, from the meter's own counter (rapl); the integrator
  // prefers counter differences to integrating watts.
  std::optional<double> joules;
};

class Meter {
 public:
  virtual ~Meter() = default;
  virtual const char* type() const = 0;
  virtual Result<MeterReading> Read(const ComponentStatus& status) = 0;
};

// Watts from state and CPU: on = idle + (peak - idle) * utilisation, suspended and off from
// the profile; an unknown state cannot be modelled (error).
std::unique_ptr<Meter> MakeModelMeter(const HostProfile& profile);
// Always-on infrastructure: constant idle_watts, or linear in CPU up to peak_watts (> 0).
std::unique_ptr<Meter> MakeInfraModelMeter(const InfraConfig& infra);
// A powercap zone (e.g. /sys/class/powercap/intel-rapl:0): energy_uj, wrapping at
// max_energy_range_uj.
std::unique_ptr<Meter> MakeRaplMeter(const std::string& zone_dir);
// A wattmeter's samples, one per line "<unix seconds> <watts>", read from "tcp://host:port"
// (reconnecting) or from a file that a logger appends to. A reading is the newest sample;
// none for `stale_ms`, or garbage, is an error naming the cause.
std::unique_ptr<Meter> MakeExternalMeter(const MeterConfig& config);
// `ipmitool dcmi power reading` against the node's BMC.
std::unique_ptr<Meter> MakeIpmiDcmiMeter(const IpmiConfig& ipmi);

// The meter a node's config names (nullptr for "none").
Result<std::unique_ptr<Meter>> MakeNodeMeter(const NodeConfig& node, const HostProfile& profile);
Result<std::unique_ptr<Meter>> MakeInfraMeter(const InfraConfig& infra);

}  // namespace wattdb::power
