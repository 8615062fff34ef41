// The energy controller's decisions with the inputs it saw and what came of them
// (`SELECT * FROM wattdb_energy_decisions`). Keeps the last kCapacity. Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace wattdb::master {

struct DecisionRecord {
  int64_t time_us = 0;            // wall clock
  std::string decision = "none";  // none | wake | sleep | reload | error
  std::string reason;
  std::string mode;
  int active_nodes = 0;
  double utilization = 0;           // demand / active capacity, now
  double window_utilization = 0;    // mean over the window
  double forecast_utilization = 0;  // horizon_s ahead, of the active capacity
  double scale_out_cpu = 0, scale_in_cpu = 0;
  double predicted_idle_s = 0;  // sleep decisions (and refusals)
  double break_even_s = 0;      // likewise
  std::string actions;          // what was done, "" if nothing
  double duration_ms = 0;
  std::string outcome;  // ok | the error | "" for none
};

class DecisionLog {
 public:
  static constexpr size_t kCapacity = 1000;
  void Add(DecisionRecord r);
  std::vector<DecisionRecord> Snapshot() const;
  // The last record, if any (decision "none" when empty).
  DecisionRecord Last() const;

 private:
  mutable Mutex mu_;
  std::deque<DecisionRecord> entries_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
