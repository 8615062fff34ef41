#include "power/power_driver.h"

namespace wattdb::power {

const char* PowerStateName(PowerState s) {
  switch (s) {
    case PowerState::kOff: return "off";
    case PowerState::kOn: return "on";
    case PowerState::kSuspended: return "suspended";
    case PowerState::kUnknown: return "unknown";
  }
  return "unknown";
}

const char* PowerActionName(PowerAction a) {
  switch (a) {
    case PowerAction::kOn: return "power on";
    case PowerAction::kOff: return "power off";
    case PowerAction::kSuspend: return "suspend";
  }
  return "?";
}

Status PowerDriver::Suspend(const NodeConfig& node) {
  return Status::NotSupported(fmt::format("the {} power driver of node {} cannot suspend", name(), node.id));
}

Result<std::unique_ptr<PowerDriver>> MakeDriver(const NodeConfig& node, const DriverContext& ctx) {
  if (node.power == "local") return MakeLocalDriver(ctx);
  return Status::InvalidArgument(fmt::format("node {}: unknown power driver '{}'", node.id, node.power));
}

}  // namespace wattdb::power
