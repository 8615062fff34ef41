// Telemetry sampling from /proc: CPU, memory, disk and network utilization of this node.
// Rates are computed between consecutive Sample() calls. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "common/clock.h"

namespace wattdb::node {

struct TelemetrySample {
  double cpu_percent = 0;       // this process, % of one core
  double host_cpu_percent = 0;  // whole machine, % of all cores
  uint64_t rss_bytes = 0;
  uint64_t mem_total_bytes = 0;
  uint64_t mem_available_bytes = 0;
  uint64_t disk_bytes = 0;   // bytes under the data directory
  double disk_read_bps = 0;  // this process
  double disk_write_bps = 0;
  double net_rx_bps = 0;  // network namespace of this process
  double net_tx_bps = 0;
};

class TelemetrySampler {
 public:
  TelemetrySampler(std::string data_dir, const Clock& clock);
  TelemetrySample Sample();

 private:
  std::string data_dir_;
  const Clock& clock_;  // borrowed; outlives the sampler
  int64_t last_us_ = 0;
  uint64_t last_proc_ticks_ = 0, last_host_busy_ = 0, last_host_total_ = 0;
  uint64_t last_read_ = 0, last_write_ = 0, last_rx_ = 0, last_tx_ = 0;
};

}  // namespace wattdb::node
