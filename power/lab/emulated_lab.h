// EmulatedLab: the hardware of an emulated cluster ([hosts] mode = "emulated"), built on one
// machine from real mechanisms: a bridge in the root namespace (the master's side, address
// <subnet>.1) and, per node, a network namespace with its own interface, IP and MAC on the
// bridge, a host agent (wattdb-host: power states, Wake-on-LAN, CPU cap) and a BMC
// (ipmi_sim) on the host's IPMI address, whatever driver the master uses. Hosts start off.
// Up() needs root (namespaces, cgroups, port 9 and 623). Down() undoes all of it, also
// after a crash (it works from the config and the lab directory alone).
#pragma once

#include <string>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

struct LabOptions {
  std::string config_path;  // absolute; agents and nodes read it
  std::string dir;          // lab state: agents' directories, BMC files, logs, pid file
  std::string bin_dir;      // wattdb-host, wattdb-node and wattdb_dcmi.so
};

class EmulatedLab {
 public:
  EmulatedLab(const ClusterConfig& config, LabOptions opts)
      : config_(config), o_(std::move(opts)) {}

  Status Up();
  // OK if this lab is up already (its agents answer): a restarted master keeps its hosts.
  Status Adopt();
  // Best effort: stops agents (and their nodes) and BMCs, deletes namespaces and the bridge.
  void Down();

  std::string NamespaceOf(NodeId id) const;
  // The host's end of node `id`'s veth pair, on the bridge.
  std::string VethOf(NodeId id) const;
  std::string HostDir(NodeId id) const;

 private:
  Status Ip(const std::vector<std::string>& args);
  const ClusterConfig& config_;
  LabOptions o_;
};

}  // namespace wattdb::power
