#include "power/ipmitool.h"
#include "power/meter.h"

namespace wattdb::power {

namespace {

class IpmiDcmiMeter : public Meter {
 public:
  explicit IpmiDcmiMeter(IpmiConfig c) : c_(std::move(c)) {
    c_.retries = 0;  // a missed reading is a gap; the next interval tries again
  }
  const char* type() const override { return "ipmi-dcmi"; }
  Result<MeterReading> Read(const ComponentStatus&) override {
    ASSIGN_OR_RETURN(std::string out, RunIpmitool(c_, {"dcmi", "power", "reading"}));
    ASSIGN_OR_RETURN(double w, ParseDcmiPowerReading(out));
    return MeterReading{w, {}};
  }

 private:
  IpmiConfig c_;
};

}  // namespace

std::unique_ptr<Meter> MakeIpmiDcmiMeter(const IpmiConfig& ipmi) {
  return std::make_unique<IpmiDcmiMeter>(ipmi);
}

}  // namespace wattdb::power
