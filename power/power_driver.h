// PowerDriver: how the master switches a node on and off. Implementations: `local` (a node
// is a process on this machine); IPMI and Wake-on-LAN drivers plug in behind the same
// interface. Drivers are thread-safe.
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

enum class PowerState { kOff, kOn };

class PowerDriver {
 public:
  virtual ~PowerDriver() = default;
  virtual const char* name() const = 0;
  // Starts the node. Returns once the start has been issued, not when the node serves.
  virtual Status PowerOn(const NodeConfig& node) = 0;
  // Stops the node and returns when it is off (or fails after a timeout).
  virtual Status PowerOff(const NodeConfig& node) = 0;
  virtual Result<PowerState> State(const NodeConfig& node) = 0;
};

struct LocalDriverOptions {
  std::string node_binary;   // path of wattdb-node
  std::string config_path;   // passed to the node as --config ("" = embedded default)
  std::string data_dir;      // cluster data dir; node n uses <data_dir>/n<id>
  int stop_timeout_ms = 30000;
};

// Local processes: power on = spawn `wattdb-node --id N` detached (own session, output to
// <data_dir>/n<id>.log); power off = SIGTERM, wait, SIGKILL after the timeout. A node's pid
// comes from the pid file it writes (<data_dir>/n<id>/node.pid), so nodes started by anyone
// (a previous master, a test harness) are managed alike.
std::unique_ptr<PowerDriver> MakeLocalDriver(LocalDriverOptions opts);

// Path of the pid file a node writes in its data directory.
std::string NodePidFile(const std::string& node_data_dir);

}  // namespace wattdb::power
