// Load forecasting for the energy controller: utilisation samples (0..1, at irregular times)
// in, the expected utilisation `horizon_s` ahead out, so the cluster wakes nodes before a
// rising load arrives rather than after it.
//   ewma: level += a × (sample − level); forecast = level.
//   holt: Holt's linear trend: level and slope (per second) smoothed with a and b;
//         forecast = level + slope × horizon (never below 0).
// alpha and beta are weights per second: a sample dt seconds after the previous one weighs
// a = 1 − (1 − alpha)^dt (likewise b), so the smoothing does not depend on the sampling rate.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace wattdb::master {

class Forecaster {
 public:
  Forecaster(std::string kind, double alpha, double beta)
      : kind_(std::move(kind)), alpha_(alpha), beta_(beta) {}
  void Observe(double t_s, double utilization);
  double Forecast(double horizon_s) const;
  double level() const { return level_; }
  double slope() const { return slope_; }  // per second (holt)
  bool ready() const { return samples_ > 0; }

 private:
  std::string kind_;
  double alpha_, beta_;
  double level_ = 0, slope_ = 0, last_t_ = 0;
  uint64_t samples_ = 0;
};

}  // namespace wattdb::master
