// MetricsServer: a Prometheus text endpoint (GET /metrics, exposition format 0.0.4) on the
// master: power and energy per component, node power and link states, segments, and query
// counters, so the usual dashboards work. Boost.Beast over Asio, one thread; every read and
// write of a scrape has a 10 s deadline. Thread-safe start/stop.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "common/status.h"

namespace wattdb::master {

class Cluster;

class MetricsServer {
 public:
  MetricsServer(Cluster& cluster, std::string host, uint16_t port);
  ~MetricsServer();
  Status Start();
  void Stop();
  uint16_t port() const { return port_; }

  // The exposition text (also used by tests).
  static std::string Render(Cluster& cluster);

 private:
  struct Impl;
  Cluster& cluster_;
  std::string host_;
  uint16_t port_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wattdb::master
