#include "master/power/node_supervisor.h"

#include <chrono>

#include "common/logging.h"

namespace wattdb::master {

namespace {
int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

NodeSupervisor::NodeSupervisor(const ClusterConfig& config, NodeRegistry& registry,
                               Catalog& catalog, NodePower& power, int period_ms)
    : config_(config),
      registry_(registry),
      catalog_(catalog),
      power_(power),
      period_ms_(period_ms) {}

NodeSupervisor::~NodeSupervisor() { Stop(); }

void NodeSupervisor::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void NodeSupervisor::Stop() {
  {
    MutexLock l(mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

uint64_t NodeSupervisor::restarts() const {
  MutexLock l(mu_);
  return restarts_;
}

void NodeSupervisor::Loop() {
  while (true) {
    {
      MutexLock l(mu_);
      auto until = CondVar::Clock::now() + std::chrono::milliseconds(period_ms_);
      while (!stopping_ && cv_.WaitUntil(mu_, until)) {
      }
      if (stopping_) return;
    }
    CheckOnce();
  }
}

void NodeSupervisor::CheckOnce() {
  for (const auto& n : config_.nodes) {
    if (registry_.IsUp(n.id)) {
      MutexLock l(mu_);
      auto it = backoff_.find(n.id);
      // Up for a while: forget earlier crashes.
      if (it != backoff_.end() && NowUs() > it->second.next_us + 60'000'000) backoff_.erase(it);
      continue;
    }
    {
      MutexLock l(mu_);
      if (stopping_) return;
      if (NowUs() < backoff_[n.id].next_us) continue;
    }
    if (!power_.mu().TryLock()) continue;  // an ALTER NODE ... POWER is in progress
    RestartIfDown(n);
    power_.mu().Unlock();
  }
}

void NodeSupervisor::RestartIfDown(const NodeConfig& n) {
  NodeAdminState admin = catalog_.GetNodeState(n.id);
  if (admin == NodeAdminState::kOff || admin == NodeAdminState::kSuspended || registry_.IsUp(n.id))
    return;
  power::PowerDriver& driver = power_.Driver(n.id);
  if (!driver.ObservesState()) return;  // its host restarts it (wol hosts: the host agent)
  auto state = driver.State(n);
  if (!state.ok() || *state != power::PowerState::kOff) return;  // alive (maybe frozen) or unknown
  Status s = power_.Act(n.id, power::PowerAction::kOn, "restart");
  MutexLock l(mu_);
  Backoff& b = backoff_[n.id];
  b.delay_ms = b.delay_ms == 0 ? 1000 : std::min(b.delay_ms * 2, 30000);
  b.next_us = NowUs() + int64_t{b.delay_ms} * 1000;
  restarts_++;
  Log("master")->warn(
      "node n{} is not running; restarted it ({}); next restart no sooner than in {} ms", n.id,
      s.ToString(), b.delay_ms);
}

}  // namespace wattdb::master
