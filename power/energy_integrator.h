// EnergyIntegrator: one component's energy from its power readings. Between two good
// readings at most `max_gap_us` apart the energy is the trapezoid of their watts (or, for a
// meter with its own energy counter, the counter's difference). A failed reading, or a
// longer pause between good ones, is a gap: not integrated, but counted and timed, so a
// report can say how much of the period its joules cover. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>

namespace wattdb::power {

class EnergyIntegrator {
 public:
  explicit EnergyIntegrator(int64_t max_gap_us) : max_gap_us_(max_gap_us) {}

  // A good reading at `at_us` (monotonic); `counter_joules` from a meter's energy counter.
  void Add(int64_t at_us, double watts, std::optional<double> counter_joules = std::nullopt);
  // A reading that failed at `at_us`: the time since the last good one is a gap.
  void Fail(int64_t at_us);

  double joules() const { return joules_; }
  double watts() const { return watts_; }  // the newest good reading
  bool has_reading() const { return have_last_; }
  uint64_t gaps() const { return gaps_; }
  double gap_seconds() const { return static_cast<double>(gap_us_) / 1e6; }
  double covered_seconds() const { return static_cast<double>(covered_us_) / 1e6; }

 private:
  const int64_t max_gap_us_;
  bool have_last_ = false;
  bool in_gap_ = false;
  int64_t last_us_ = 0;
  double watts_ = 0;
  std::optional<double> last_counter_;
  double joules_ = 0;
  uint64_t gaps_ = 0;
  int64_t gap_us_ = 0, covered_us_ = 0;
};

}  // namespace wattdb::power
