// Parsing of the power parts of the cluster config: [power], [profile.NAME],
// [[infrastructure]], [hosts] and each node's driver and meter keys. Errors name the file,
// line and key. Used by config.cc (and CheckKeys by the energy-policy parser).
#pragma once

#include <initializer_list>
#include <string>

#include <toml++/toml.h>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::config_internal {

// Fails naming the first key of `t` not in `known` (file, line, key).
Status CheckKeys(const toml::table& t, std::initializer_list<const char*> known,
                 const std::string& where, const std::string& source);

// [power], [profile.*], [[infrastructure]] and [hosts] into `c`.
Status ParsePowerSections(const toml::table& root, const std::string& source, ClusterConfig* c);

// A [[node]]'s profile, meter, ipmi and wol keys; `host_given` says whether it set `host`.
Status ParseNodePower(const toml::table& t, const std::string& source, NodeConfig* n);

// Checks drivers, meters and profiles against the whole config and fills in what emulated
// hosts derive (addresses, MACs, BMC addresses). Call after all nodes are parsed.
Status FinishPowerConfig(const toml::table& root, const std::string& source, ClusterConfig* c);

}  // namespace wattdb::config_internal
