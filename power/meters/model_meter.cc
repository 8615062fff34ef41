#include <algorithm>

#include "power/meter.h"

namespace wattdb::power {

namespace {

double Linear(double idle, double peak, double utilization) {
  return idle + (peak - idle) * std::clamp(utilization, 0.0, 1.0);
}

class ModelMeter : public Meter {
 public:
  explicit ModelMeter(HostProfile p) : p_(std::move(p)) {}
  const char* type() const override { return "model"; }
  Result<MeterReading> Read(const ComponentStatus& s) override {
    switch (s.state) {
      case PowerState::kOn:
        return MeterReading{Linear(p_.idle_watts, p_.peak_watts, s.cpu_utilization), {}};
      case PowerState::kSuspended:
        return MeterReading{p_.suspended_watts, {}};
      case PowerState::kOff:
        return MeterReading{p_.off_watts, {}};
      case PowerState::kUnknown:
        break;
    }
    return Status::Unavailable("power state unknown: cannot model the draw");
  }

 private:
  HostProfile p_;
};

class InfraModelMeter : public Meter {
 public:
  explicit InfraModelMeter(InfraConfig c) : c_(std::move(c)) {}
  const char* type() const override { return "model"; }
  Result<MeterReading> Read(const ComponentStatus& s) override {
    if (c_.peak_watts <= 0) return MeterReading{c_.idle_watts, {}};
    return MeterReading{Linear(c_.idle_watts, c_.peak_watts, s.cpu_utilization), {}};
  }

 private:
  InfraConfig c_;
};

}  // namespace

std::unique_ptr<Meter> MakeModelMeter(const HostProfile& profile) {
  return std::make_unique<ModelMeter>(profile);
}

std::unique_ptr<Meter> MakeInfraModelMeter(const InfraConfig& infra) {
  return std::make_unique<InfraModelMeter>(infra);
}

}  // namespace wattdb::power
