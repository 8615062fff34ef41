#include "master/energy/statement_energy.h"

#include <sys/resource.h>

#include <algorithm>

#include "master/energy/power_monitor.h"
#include "master/cluster/node_registry.h"

namespace wattdb::master {

namespace {

thread_local std::map<NodeId, uint64_t>* tl_nodes = nullptr;

uint64_t ProcessCpuNanos() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
          ru.ru_stime.tv_usec) * 1000;
}

}  // namespace

StatementCpuScope::StatementCpuScope()
    : start_steady_us_(Clock::Real().NowMicros()),
      start_wall_us_(Clock::Real().WallMicros()),
      start_thread_ns_(ThreadCpuNanos()),
      start_process_ns_(ProcessCpuNanos()) {
  if (!tl_nodes) {
    tl_nodes = &nodes_;
    active_ = true;
  }
}

StatementCpuScope::~StatementCpuScope() {
  if (active_) tl_nodes = nullptr;
}

void StatementCpuScope::AddNode(NodeId node, uint64_t nanos) {
  if (tl_nodes) (*tl_nodes)[node] += nanos;
}

StatementEnergy StatementCpuScope::Finish(PowerMonitor& monitor, NodeRegistry& registry) const {
  StatementEnergy e;
  e.started_us = start_wall_us_;
  e.seconds = std::max(1e-6, static_cast<double>(Clock::Real().NowMicros() - start_steady_us_) / 1e6);
  double thread_s = static_cast<double>(ThreadCpuNanos() - start_thread_ns_) / 1e9;
  double process_s = static_cast<double>(ProcessCpuNanos() - start_process_ns_) / 1e9;
  std::map<NodeId, double> node_rate;  // CPU seconds per second, from telemetry
  for (const auto& n : registry.Snapshot()) node_rate[n.id] = n.up ? n.cpu_percent / 100.0 : 0;
  double stmt_cpu = thread_s, all_cpu = std::max(thread_s, process_s);
  std::vector<const ComponentPower*> infra;
  auto components = monitor.Snapshot();
  for (const auto& c : components) {
    if (c.node_id) {
      auto it = nodes_.find(c.node_id);
      if (it == nodes_.end() || it->second == 0) continue;
      double mine = static_cast<double>(it->second) / 1e9;
      double total = std::max(mine, node_rate[c.node_id] * e.seconds);
      stmt_cpu += mine;
      all_cpu += total;
      if (!c.meter_ok) {
        e.unmetered++;
        continue;
      }
      e.node_joules += c.watts * e.seconds * (mine / total);
    } else if (c.component == "master") {
      if (!c.meter_ok) {
        e.unmetered++;
        continue;
      }
      double share = process_s > 0 ? std::min(1.0, thread_s / process_s) : 1.0;
      e.master_joules += c.watts * e.seconds * share;
    } else {
      infra.push_back(&c);
    }
  }
  double share = all_cpu > 0 ? std::min(1.0, stmt_cpu / all_cpu) : 0;
  for (const ComponentPower* c : infra) {
    if (!c->meter_ok) {
      e.unmetered++;
      continue;
    }
    e.infra_joules += c->watts * e.seconds * share;
  }
  e.joules = e.master_joules + e.node_joules + e.infra_joules;
  e.cpu_ms = stmt_cpu * 1000;
  return e;
}

void StatementEnergyLog::Add(StatementEnergy e) {
  std::lock_guard<std::mutex> l(mu_);
  entries_.push_back(std::move(e));
  while (entries_.size() > capacity_) entries_.pop_front();
}

std::vector<StatementEnergy> StatementEnergyLog::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  return {entries_.begin(), entries_.end()};
}

}  // namespace wattdb::master
