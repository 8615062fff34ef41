// PowerDriver: how the master switches a node between the ACPI power states it models:
// on (S0, serving), suspended (S3, suspend-to-RAM: memory kept, fast resume) and off (S5).
// Implementations: `local` (a node is a process on this machine), `ipmi` (the node's BMC
// through ipmitool), `wol` (Wake-on-LAN magic packets; off and suspend the OS way).
// A driver says which actions it supports; the master offers only those. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

enum class PowerState { kOff, kOn, kSuspended, kUnknown };
const char* PowerStateName(PowerState s);

enum class PowerAction { kOn, kOff, kSuspend };
const char* PowerActionName(PowerAction a);

class PowerDriver {
 public:
  virtual ~PowerDriver() = default;
  virtual const char* name() const = 0;
  virtual bool Supports(PowerAction a) const = 0;
  // Whether State() observes the hardware; if not, the master infers the state from
  // heartbeats and the last action (wol).
  virtual bool ObservesState() const { return true; }
  // Starts an off node or resumes a suspended one. Returns once the action has been issued,
  // not when the node serves.
  virtual Status PowerOn(const NodeConfig& node) = 0;
  // Stops the node; returns when it is off (or fails after a timeout).
  virtual Status PowerOff(const NodeConfig& node) = 0;
  // Suspends the node (memory kept). NotSupported unless Supports(kSuspend).
  virtual Status Suspend(const NodeConfig& node);
  virtual Result<PowerState> State(const NodeConfig& node) = 0;
};

// Asks the node's operating system (through the node process) to suspend or power off
// its host: the path real Wake-on-LAN deployments use. Provided by the master.
using OsPowerRequest = std::function<Status(NodeId node, PowerAction action)>;

struct DriverContext {
  // local driver
  std::string node_binary;  // path of wattdb-node
  std::string config_path;  // passed to the node as --config ("" = embedded default)
  std::string data_dir;     // cluster data dir; node n uses <data_dir>/n<id>
  int stop_timeout_ms = 30000;
  // wol driver (and ipmi soft off): the OS path
  OsPowerRequest os_request;
};

// The driver named by `node.power`.
Result<std::unique_ptr<PowerDriver>> MakeDriver(const NodeConfig& node, const DriverContext& ctx);

// Local processes: power on = spawn `wattdb-node --id N` detached (own session, output to
// <data_dir>/n<id>.log); power off = SIGTERM, wait, SIGKILL after the timeout; suspend =
// SIGSTOP, resume = SIGCONT. A node's pid comes from the pid file it writes
// (<data_dir>/n<id>/node.pid), so nodes started by anyone are managed alike.
std::unique_ptr<PowerDriver> MakeLocalDriver(const DriverContext& ctx);

// Wake-on-LAN: magic packets (power/magic_packet.h) to wake; off and suspend through
// ctx.os_request (unsupported without it); state not observed.
std::unique_ptr<PowerDriver> MakeWolDriver(const DriverContext& ctx);
// The node the master process hosts (power = "master"): it is on while the master runs;
// it cannot be powered off or suspended apart from the master.
std::unique_ptr<PowerDriver> MakeMasterDriver();
// IPMI through ipmitool: on, off (soft, then forced after ctx.stop_timeout_ms), status.
std::unique_ptr<PowerDriver> MakeIpmiDriver(const DriverContext& ctx);

// The command line that starts node `id`: binary --id N [--config PATH].
std::vector<std::string> NodeCommandLine(const std::string& binary, NodeId id,
                                         const std::string& config_path);

// Path of the pid file a node writes in its data directory.
std::string NodePidFile(const std::string& node_data_dir);

}  // namespace wattdb::power
