#include "master/energy/forecaster.h"

#include <algorithm>

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
  if (kind_ != "holt") {
    level_ += alpha_ * (u - level_);
    return;
  }
  double predicted = level_ + slope_ * dt;
  double level = alpha_ * u + (1 - alpha_) * predicted;
  slope_ = beta_ * ((level - level_) / dt) + (1 - beta_) * slope_;
  level_ = level;
}

double Forecaster::Forecast(double horizon_s) const {
  if (kind_ != "holt") return level_;
  return std::max(0.0, level_ + slope_ * horizon_s);
}

}  // namespace wattdb::master
