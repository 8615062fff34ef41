// Wake-on-LAN: power on = a magic packet to the node's MAC; suspend and power off go the OS
// way (a request to the node, which asks its host); the state is not observable from here.
#include "common/logging.h"
#include "power/magic_packet.h"
#include "power/power_driver.h"

namespace wattdb::power {

namespace {

class WolDriver : public PowerDriver {
 public:
  explicit WolDriver(OsPowerRequest os) : os_(std::move(os)) {}
  const char* name() const override { return "wol"; }
  bool Supports(PowerAction a) const override { return a == PowerAction::kOn || os_ != nullptr; }
  bool ObservesState() const override { return false; }

  Status PowerOn(const NodeConfig& n) override {
    RETURN_NOT_OK(SendMagicPacket(n.wol));
    Log("power")->info("power on node={} driver=wol: magic packet for {} to {}:{}", n.id, n.wol.mac,
                       n.wol.broadcast, n.wol.port);
    return Status::OK();
  }
  Status PowerOff(const NodeConfig& n) override { return Os(n, PowerAction::kOff); }
  Status Suspend(const NodeConfig& n) override { return Os(n, PowerAction::kSuspend); }
  Result<PowerState> State(const NodeConfig&) override { return PowerState::kUnknown; }

 private:
  Status Os(const NodeConfig& n, PowerAction a) {
    if (!os_) return Status::NotSupported("wol cannot power down a node by itself");
    RETURN_NOT_OK(os_(n.id, a));
    Log("power")->info("{} node={} driver=wol: asked the node's OS", PowerActionName(a), n.id);
    return Status::OK();
  }
  OsPowerRequest os_;
};

}  // namespace

std::unique_ptr<PowerDriver> MakeWolDriver(const DriverContext& ctx) {
  return std::make_unique<WolDriver>(ctx.os_request);
}

}  // namespace wattdb::power
