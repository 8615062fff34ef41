// An emulated host's BMC: an OpenIPMI ipmi_sim process with a LAN channel on the host's
// IPMI address, one admin user, chassis control handed to the host agent (`wattdb-host
// chassis`) and DCMI power readings from the agent's watts file (dcmi_plugin.c).
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

struct BmcFiles {
  std::string dir;           // holds lan.conf, bmc.emu and state/
  std::string host_dir;      // the agent's directory (agent.sock, watts)
  std::string agent_binary;  // wattdb-host
  std::string dcmi_plugin;   // wattdb_dcmi.so ("" = no DCMI)
};

// Writes the BMC's configuration for `node` and returns the ipmi_sim command line.
Result<std::vector<std::string>> WriteBmcConfig(const NodeConfig& node, const BmcFiles& files);

}  // namespace wattdb::power
