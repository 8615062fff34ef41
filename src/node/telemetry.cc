#include "node/telemetry.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace wattdb::node {

namespace {

uint64_t ProcTicks() {
  std::ifstream f("/proc/self/stat");
  std::string s;
  std::getline(f, s);
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; i++) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return utime + stime;
}

void HostCpu(uint64_t* busy, uint64_t* total) {
  std::ifstream f("/proc/stat");
  std::string cpu;
  uint64_t v[10] = {};
  f >> cpu;
  for (auto& x : v) f >> x;
  *total = 0;
  for (auto x : v) *total += x;
  *busy = *total - v[3] - v[4];  // minus idle and iowait
}

uint64_t KeyValue(const char* path, const std::string& key, uint64_t scale) {
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) == 0) {
      std::istringstream in(line.substr(key.size()));
      uint64_t v = 0;
      in >> v;
      return v * scale;
    }
  }
  return 0;
}

void NetBytes(uint64_t* rx, uint64_t* tx) {
  std::ifstream f("/proc/self/net/dev");
  std::string line;
  *rx = *tx = 0;
  while (std::getline(f, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream in(line.substr(colon + 1));
    uint64_t v[16] = {};
    for (auto& x : v) in >> x;
    *rx += v[0];
    *tx += v[8];
  }
}

uint64_t DirBytes(const std::string& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  }
  return total;
}

}  // namespace

TelemetrySampler::TelemetrySampler(std::string data_dir, const Clock& clock)
    : data_dir_(std::move(data_dir)), clock_(clock) {
  Sample();
}

TelemetrySample TelemetrySampler::Sample() {
  TelemetrySample s;
  int64_t now = clock_.NowMicros();
  double secs = last_us_ ? (now - last_us_) / 1e6 : 0;
  uint64_t ticks = ProcTicks();
  uint64_t busy, total;
  HostCpu(&busy, &total);
  uint64_t rd = KeyValue("/proc/self/io", "read_bytes:", 1);
  uint64_t wr = KeyValue("/proc/self/io", "write_bytes:", 1);
  uint64_t rx, tx;
  NetBytes(&rx, &tx);
  if (secs > 0) {
    double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
    s.cpu_percent = 100.0 * (ticks - last_proc_ticks_) / hz / secs;
    if (total > last_host_total_) {
      s.host_cpu_percent = 100.0 * (busy - last_host_busy_) / (total - last_host_total_);
    }
    s.disk_read_bps = (rd - last_read_) / secs;
    s.disk_write_bps = (wr - last_write_) / secs;
    s.net_rx_bps = (rx - last_rx_) / secs;
    s.net_tx_bps = (tx - last_tx_) / secs;
  }
  last_us_ = now;
  last_proc_ticks_ = ticks;
  last_host_busy_ = busy;
  last_host_total_ = total;
  last_read_ = rd;
  last_write_ = wr;
  last_rx_ = rx;
  last_tx_ = tx;
  s.rss_bytes = KeyValue("/proc/self/status", "VmRSS:", 1024);
  s.mem_total_bytes = KeyValue("/proc/meminfo", "MemTotal:", 1024);
  s.mem_available_bytes = KeyValue("/proc/meminfo", "MemAvailable:", 1024);
  s.disk_bytes = DirBytes(data_dir_);
  return s;
}

}  // namespace wattdb::node
