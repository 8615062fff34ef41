#include <chrono>
#include <fstream>

#include "power/meter.h"

namespace wattdb::power {

namespace {

Result<uint64_t> ReadCounter(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Status::IOError(fmt::format("cannot read {}", path));
  uint64_t v = 0;
  if (!(f >> v)) return Status::Corruption(fmt::format("{} does not hold a number", path));
  return v;
}

// Linux powercap: energy_uj counts microjoules and wraps to 0 after max_energy_range_uj.
class RaplMeter : public Meter {
 public:
  explicit RaplMeter(std::string dir) : dir_(std::move(dir)) {}
  const char* type() const override { return "rapl"; }

  Result<MeterReading> Read(const ComponentStatus&) override {
    if (range_ == 0) {
      ASSIGN_OR_RETURN(range_, ReadCounter(dir_ + "/max_energy_range_uj"));
      if (range_ == 0) return Status::Corruption(dir_ + "/max_energy_range_uj is 0");
    }
    ASSIGN_OR_RETURN(uint64_t uj, ReadCounter(dir_ + "/energy_uj"));
    auto now = std::chrono::steady_clock::now();
    double watts = 0;
    if (have_last_) {
      // One wrap at most between readings (at 100 W, a 2^32 uJ range lasts 43 s).
      uint64_t delta = uj >= last_uj_ ? uj - last_uj_ : range_ - last_uj_ + uj;
      total_uj_ += delta;
      double secs = std::chrono::duration<double>(now - last_at_).count();
      if (secs > 0) watts = static_cast<double>(delta) / 1e6 / secs;
    }
    have_last_ = true;
    last_uj_ = uj;
    last_at_ = now;
    return MeterReading{watts, static_cast<double>(total_uj_) / 1e6};
  }

 private:
  std::string dir_;
  uint64_t range_ = 0;
  bool have_last_ = false;
  uint64_t last_uj_ = 0, total_uj_ = 0;
  std::chrono::steady_clock::time_point last_at_;
};

}  // namespace

std::unique_ptr<Meter> MakeRaplMeter(const std::string& zone_dir) {
  return std::make_unique<RaplMeter>(zone_dir);
}

}  // namespace wattdb::power
