// ipmitool, the way WattDB talks to a node's BMC: IPMI v2.0 over LAN (lanplus, cipher
// suite 3), the password passed in the environment (never on the command line), a deadline
// per call, and retries with doubling backoff for failures that may pass (timeouts, no
// session). Failures come back as plain messages: ipmitool missing, BMC unreachable, wrong
// credentials, command refused.
#pragma once

#include <string>
#include <vector>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::power {

Result<std::string> RunIpmitool(const IpmiConfig& ipmi, const std::vector<std::string>& args);

// "Instantaneous power reading:   45 Watts" -> 45; Corruption if absent.
Result<double> ParseDcmiPowerReading(const std::string& output);

}  // namespace wattdb::power
