// IPMI: the node's BMC switches its chassis power (ipmitool chassis power on|soft|off|status).
// Power off asks for a soft (ACPI) shutdown first and forces the power off when the host has
// not gone down within stop_timeout_ms. IPMI has no suspend.
#include <chrono>
#include <thread>

#include "common/logging.h"
#include "power/ipmitool.h"
#include "power/power_driver.h"

namespace wattdb::power {

namespace {

class IpmiDriver : public PowerDriver {
 public:
  explicit IpmiDriver(int stop_timeout_ms) : stop_timeout_ms_(stop_timeout_ms) {}
  const char* name() const override { return "ipmi"; }
  bool Supports(PowerAction a) const override { return a != PowerAction::kSuspend; }

  Status PowerOn(const NodeConfig& n) override {
    RETURN_NOT_OK(RunIpmitool(n.ipmi, {"chassis", "power", "on"}).status());
    Log("power")->info("power on node={} driver=ipmi bmc={}:{}", n.id, n.ipmi.host, n.ipmi.port);
    return Status::OK();
  }

  Status PowerOff(const NodeConfig& n) override {
    RETURN_NOT_OK(RunIpmitool(n.ipmi, {"chassis", "power", "soft"}).status());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(stop_timeout_ms_);
    while (std::chrono::steady_clock::now() < deadline) {
      auto st = State(n);
      if (st.ok() && *st == PowerState::kOff) {
        Log("power")->info("power off node={} driver=ipmi (soft)", n.id);
        return Status::OK();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Log("power")->warn("node {} did not shut down within {} ms; forcing power off through its BMC",
                       n.id, stop_timeout_ms_);
    return RunIpmitool(n.ipmi, {"chassis", "power", "off"}).status();
  }

  Result<PowerState> State(const NodeConfig& n) override {
    ASSIGN_OR_RETURN(std::string out, RunIpmitool(n.ipmi, {"chassis", "power", "status"}));
    if (out.find("Chassis Power is on") != std::string::npos) return PowerState::kOn;
    if (out.find("Chassis Power is off") != std::string::npos) return PowerState::kOff;
    return Status::Corruption(
        fmt::format("unexpected answer from BMC {}:{}: {}", n.ipmi.host, n.ipmi.port, out));
  }

 private:
  int stop_timeout_ms_;
};

}  // namespace

std::unique_ptr<PowerDriver> MakeIpmiDriver(const DriverContext& ctx) {
  return std::make_unique<IpmiDriver>(ctx.stop_timeout_ms);
}

}  // namespace wattdb::power
