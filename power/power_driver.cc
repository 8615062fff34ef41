#include "power/power_driver.h"

namespace wattdb::power {

const char* PowerStateName(PowerState s) {
  switch (s) {
    case PowerState::kOff:
      return "off";
    case PowerState::kOn:
      return "on";
    case PowerState::kSuspended:
      return "suspended";
    case PowerState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

const char* PowerActionName(PowerAction a) {
  switch (a) {
    case PowerAction::kOn:
      return "power on";
    case PowerAction::kOff:
      return "power off";
    case PowerAction::kSuspend:
      return "suspend";
  }
  return "?";
}

std::vector<std::string> NodeCommandLine(const std::string& binary, NodeId id,
                                         const std::string& config_path) {
  std::vector<std::string> args = {binary, "--id", std::to_string(id)};
  if (!config_path.empty()) {
    args.push_back("--config");
    args.push_back(config_path);
  }
  return args;
}

namespace {

class MasterDriver : public PowerDriver {
 public:
  const char* name() const override { return "master"; }
  bool Supports(PowerAction a) const override { return a == PowerAction::kOn; }
  Status PowerOn(const NodeConfig&) override { return Status::OK(); }  // on with the master
  Status PowerOff(const NodeConfig& node) override {
    return Status::NotSupported(
        fmt::format("node {} lives in the master process: it is on while the master is", node.id));
  }
  Result<PowerState> State(const NodeConfig&) override { return PowerState::kOn; }
};

}  // namespace

std::unique_ptr<PowerDriver> MakeMasterDriver() { return std::make_unique<MasterDriver>(); }

Status PowerDriver::Suspend(const NodeConfig& node) {
  return Status::NotSupported(
      fmt::format("the {} power driver of node {} cannot suspend", name(), node.id));
}

Result<std::unique_ptr<PowerDriver>> MakeDriver(const NodeConfig& node, const DriverContext& ctx) {
  if (node.power == "local") return MakeLocalDriver(ctx);
  if (node.power == "wol") return MakeWolDriver(ctx);
  if (node.power == "ipmi") return MakeIpmiDriver(ctx);
  if (node.power == "master") return MakeMasterDriver();
  return Status::InvalidArgument(
      fmt::format("node {}: unknown power driver '{}'", node.id, node.power));
}

}  // namespace wattdb::power
