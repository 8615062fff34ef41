#include "power/energy_integrator.h"

namespace wattdb::power {

void EnergyIntegrator::Add(int64_t at_us, double watts, std::optional<double> counter) {
  if (have_last_ && at_us > last_us_) {
    int64_t dt = at_us - last_us_;
    if (!in_gap_ && dt <= max_gap_us_) {
      if (counter && last_counter_ && *counter >= *last_counter_) {
        joules_ += *counter - *last_counter_;
      } else {
        joules_ += (watts_ + watts) / 2 * static_cast<double>(dt) / 1e6;
      }
      covered_us_ += dt;
    } else {
      if (!in_gap_) gaps_++;
      gap_us_ += dt;
    }
  }
  in_gap_ = false;
  have_last_ = true;
  last_us_ = at_us;
  watts_ = watts;
  last_counter_ = counter;
}

void EnergyIntegrator::Fail(int64_t at_us) {
  if (!have_last_) return;
  if (!in_gap_) gaps_++;
  in_gap_ = true;
  // The gap runs from the last good reading to the next one; Add() times it.
}

}  // namespace wattdb::power
