#include "master/power/statement_energy.h"

#include <algorithm>

#include "master/power/power_monitor.h"

namespace wattdb::master {

namespace {

thread_local SmallFlatMap<NodeId, uint64_t>* tl_nodes = nullptr;
thread_local uint64_t* tl_other_threads = nullptr;

}  // namespace

StatementCpuScope::StatementCpuScope(CpuCarry* carry)
    : carry_(carry),
      start_steady_us_(Clock::Real().NowMicros()),
      start_wall_us_(Clock::Real().WallMicros()) {
  bool carried = carry && carry->thread_ns > 0 && carry->thread == std::this_thread::get_id();
  start_thread_ns_ = carried ? carry->thread_ns : ThreadCpuNanos();
  if (!tl_nodes) {
    tl_nodes = &nodes_;
    tl_other_threads = &other_threads_ns_;
    active_ = true;
  }
}

StatementCpuScope::~StatementCpuScope() {
  if (active_) {
    tl_nodes = nullptr;
    tl_other_threads = nullptr;
  }
}

void StatementCpuScope::AddNode(NodeId node, uint64_t nanos) {
  if (tl_nodes) (*tl_nodes)[node] += nanos;
}

void StatementCpuScope::AddOtherThreads(uint64_t nanos) {
  if (tl_other_threads) *tl_other_threads += nanos;
}

StatementEnergy StatementCpuScope::Finish(const PowerMonitor& monitor) const {
  return Finish(*monitor.Rates());
}

StatementEnergy StatementCpuScope::Finish(const EnergyRates& rates) const {
  StatementEnergy e;
  e.started_us = start_wall_us_;
  e.seconds =
      std::max(1e-6, static_cast<double>(Clock::Real().NowMicros() - start_steady_us_) / 1e6);
  double thread_s = 0;
  if (pass_on_ && active_) {
    *carry_ =
        CpuCarry{std::this_thread::get_id(), start_thread_ns_};  // the next statement starts here
  } else {
    uint64_t now_ns = ThreadCpuNanos();
    thread_s = static_cast<double>(now_ns - start_thread_ns_) / 1e9;
    if (carry_ && active_) *carry_ = CpuCarry{std::this_thread::get_id(), now_ns};
  }
  thread_s += static_cast<double>(other_threads_ns_) / 1e9;
  double process_s = std::max(thread_s, rates.master_cpu_rate * e.seconds);
  double stmt_cpu = thread_s, all_cpu = process_s;
  SmallVector<const ComponentRate*, 8> infra;
  for (const ComponentRate& c : rates.components) {
    if (c.node_id) {
      auto it = nodes_.find(c.node_id);
      if (it == nodes_.end() || it->second == 0) continue;
      double mine = static_cast<double>(it->second) / 1e9;
      double total = std::max(mine, c.cpu_rate * e.seconds);
      stmt_cpu += mine;
      all_cpu += total;
      if (!c.meter_ok) {
        e.unmetered++;
        continue;
      }
      e.node_joules += c.watts * e.seconds * (mine / total);
    } else if (c.master) {
      if (!c.meter_ok) {
        e.unmetered++;
        continue;
      }
      e.master_joules += c.watts * e.seconds * (process_s > 0 ? thread_s / process_s : 1.0);
    } else {
      infra.push_back(&c);
    }
  }
  double share = all_cpu > 0 ? std::min(1.0, stmt_cpu / all_cpu) : 0;
  for (const ComponentRate* c : infra) {
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
  MutexLock l(mu_);
  entries_.push_back(std::move(e));
  while (entries_.size() > capacity_) entries_.pop_front();
}

std::vector<StatementEnergy> StatementEnergyLog::Snapshot() const {
  MutexLock l(mu_);
  return {entries_.begin(), entries_.end()};
}

}  // namespace wattdb::master
