#include "master/power/power_monitor.h"

#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include "common/logging.h"

namespace wattdb::master {

PowerMonitor::PowerMonitor(const ClusterConfig& config, NodeRegistry& registry, NodePower& power,
                           const Clock& clock)
    : config_(config), registry_(registry), power_(power), clock_(clock) {}

PowerMonitor::~PowerMonitor() { Stop(); }

Status PowerMonitor::Init() {
  // A reading may be late by one interval before its gap is left out.
  int64_t max_gap_us = int64_t{config_.meter_interval_ms} * 3000;
  for (const auto& n : config_.nodes) {
    auto c =
        std::make_unique<Component>(Component{{}, nullptr, power::EnergyIntegrator(max_gap_us)});
    ASSIGN_OR_RETURN(c->meter, power::MakeNodeMeter(n, config_.Profile(n)));
    c->info.component = fmt::format("node {}", n.id);
    c->info.node_id = n.id;
    c->info.meter = n.meter.type;
    c->cpus = config_.Profile(n).cpus;
    components_.push_back(std::move(c));
  }
  for (const auto& inf : config_.infrastructure) {
    auto c =
        std::make_unique<Component>(Component{{}, nullptr, power::EnergyIntegrator(max_gap_us)});
    ASSIGN_OR_RETURN(c->meter, power::MakeInfraMeter(inf));
    c->info.component = inf.name;
    c->info.meter = inf.meter.type;
    c->cpus = std::max(1u, std::thread::hardware_concurrency());
    components_.push_back(std::move(c));
  }
  return Status::OK();
}

void PowerMonitor::Every(const std::function<void()>& f) {
  while (true) {
    f();
    MutexLock l(stop_mu_);
    auto until = CondVar::DeadlineIn(std::chrono::milliseconds(config_.meter_interval_ms));
    while (!stopping_ && stop_cv_.WaitUntil(stop_mu_, until)) {
    }
    if (stopping_) return;
  }
}

void PowerMonitor::Start() {
  threads_.emplace_back([this] {
    Every([this] {
      power_.Refresh();
      SampleMasterCpu();
    });
  });
  for (auto& c : components_) {
    Component* comp = c.get();
    threads_.emplace_back([this, comp] {
      Every([this, comp] {
        std::map<NodeId, NodeInfo> live;
        if (comp->info.node_id) {
          for (auto& n : registry_.Snapshot()) live[n.id] = n;
        }
        Sample(*comp, live);
      });
    });
  }
}

void PowerMonitor::Stop() {
  {
    MutexLock l(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.SignalAll();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void PowerMonitor::SampleMasterCpu() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  int64_t cpu = int64_t{ru.ru_utime.tv_sec + ru.ru_stime.tv_sec} * 1000000 + ru.ru_utime.tv_usec +
                ru.ru_stime.tv_usec;
  int64_t now = clock_.NowMicros();
  double util = 0;
  if (last_cpu_at_us_ && now > last_cpu_at_us_) {
    util = static_cast<double>(cpu - last_cpu_us_) / static_cast<double>(now - last_cpu_at_us_);
  }
  last_cpu_us_ = cpu;
  last_cpu_at_us_ = now;
  MutexLock l(mu_);
  master_cpu_rate_ = util;
  PublishRatesLocked();
}

void PowerMonitor::SampleOnce() {
  power_.Refresh();
  SampleMasterCpu();
  std::map<NodeId, NodeInfo> live;
  for (auto& n : registry_.Snapshot()) live[n.id] = n;
  for (auto& c : components_) Sample(*c, live);
}

void PowerMonitor::Sample(Component& c, const std::map<NodeId, NodeInfo>& live) {
  power::ComponentStatus st;
  double cpu_rate = 0;
  if (c.info.node_id) {
    st.state = power_.State(c.info.node_id);
    auto it = live.find(c.info.node_id);
    cpu_rate = it != live.end() && it->second.up ? it->second.cpu_percent / 100.0 : 0;
  } else {
    st.state = power::PowerState::kOn;
    if (c.info.component == "master") {
      MutexLock l(mu_);
      cpu_rate = master_cpu_rate_;
    }
  }
  st.cpu_utilization = cpu_rate / c.cpus;
  Result<power::MeterReading> r = Status::NotSupported("not metered");
  if (c.meter) r = c.meter->Read(st);
  int64_t now = clock_.NowMicros();
  MutexLock l(mu_);
  c.info.state = power::PowerStateName(st.state);
  c.cpu_rate = cpu_rate;
  if (!c.meter) return PublishRatesLocked();
  c.info.readings++;
  if (r.ok()) {
    c.energy.Add(now, r->watts, r->joules);
    if (!c.info.meter_ok && !c.info.meter_error.empty()) {
      Log("power")->info("meter of {} reads again", c.info.component);
    }
    c.info.meter_ok = true;
    c.info.meter_error.clear();
  } else {
    c.energy.Fail(now);
    if (c.info.meter_error != r.status().message()) {
      Log("power")->warn("meter of {} ({}) failed: {}", c.info.component, c.info.meter,
                         r.status().message());
    }
    c.info.meter_ok = false;
    c.info.meter_error = r.status().message();
  }
  c.info.watts = c.energy.watts();
  c.info.joules = c.energy.joules();
  c.info.gaps = c.energy.gaps();
  c.info.gap_seconds = c.energy.gap_seconds();
  c.info.covered_seconds = c.energy.covered_seconds();
  PublishRatesLocked();
}

void PowerMonitor::PublishRatesLocked() {
  auto rates = std::make_shared<EnergyRates>();
  rates->master_cpu_rate = master_cpu_rate_;
  rates->components.reserve(components_.size());
  for (const auto& c : components_) {
    rates->components.push_back(
        ComponentRate{c->info.node_id, !c->info.node_id && c->info.component == "master",
                      c->meter && c->info.meter_ok, c->info.watts, c->cpu_rate});
  }
  rates_ = std::move(rates);
}

std::shared_ptr<const EnergyRates> PowerMonitor::Rates() const {
  MutexLock l(mu_);
  return rates_;
}

std::vector<ComponentPower> PowerMonitor::Snapshot() {
  MutexLock l(mu_);
  std::vector<ComponentPower> out;
  for (auto& c : components_) out.push_back(c->info);
  return out;
}

}  // namespace wattdb::master
