// A request to a host agent's control socket (power/host/host_agent.h): one line out, one
// line back, within `timeout_ms`.
#pragma once

#include <string>

#include "common/status.h"

namespace wattdb::power {

Result<std::string> HostAgentRequest(const std::string& socket_path, const std::string& request,
                                     int timeout_ms = 3000);

}  // namespace wattdb::power
