#include "master/energy/forecaster.h"

#include <algorithm>
#include <cmath>

namespace wattdb::master {

void Forecaster::Observe(double t, double u) {
  if (samples_++ == 0) {
    level_ = u;
    slope_ = 0;
    last_t_ = t;
    return;
  }
  double dt = std::max(1e-3, t - last_t_);
  last_t_ = t;
  // The weights are per second: samples every 0.2 s smooth as much per second as samples
  // every 2 s (a sample's weight grows with the time it stands for).
  double a = 1 - std::pow(1 - alpha_, dt), b = 1 - std::pow(1 - beta_, dt);
  if (kind_ != "holt") {
    level_ += a * (u - level_);
    return;
  }
  double predicted = level_ + slope_ * dt;
  double level = a * u + (1 - a) * predicted;
  slope_ = b * ((level - level_) / dt) + (1 - b) * slope_;
  level_ = level;
}

double Forecaster::Forecast(double horizon_s) const {
  if (kind_ != "holt") return level_;
  return std::max(0.0, level_ + slope_ * horizon_s);
}

}  // namespace wattdb::master
