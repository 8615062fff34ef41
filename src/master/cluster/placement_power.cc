// Placement's power operations: drain marks, power off, suspend, power on (placement.h).
#include <algorithm>
#include <set>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/placement.h"

namespace wattdb::master {

Status Placement::SetDraining(NodeId node, bool draining) {
  MutexLock admin(admin_mu_);
  NodeAdminState now = catalog_.GetNodeState(node);
  NodeAdminState from = draining ? NodeAdminState::kActive : NodeAdminState::kDraining;
  if (now != from) {
    return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                       fmt::format("node {} is {}, not {}", node, NodeAdminStateName(now),
                                   NodeAdminStateName(from)));
  }
  return catalog_.SetNodeState(node,
                               draining ? NodeAdminState::kDraining : NodeAdminState::kActive);
}

Status Placement::PowerOff(NodeId node) { return PowerDown(node, power::PowerAction::kOff); }

Status Placement::Suspend(NodeId node) { return PowerDown(node, power::PowerAction::kSuspend); }

Status Placement::PowerDown(NodeId node, power::PowerAction action) {
  const NodeConfig* nc = config_.FindNode(node);
  if (!nc)
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", node));
  MutexLock power(power_.mu());
  power::PowerDriver& driver = power_.Driver(node);
  if (nc->InMaster()) {
    return Status::Sql(
        sqlstate::kFeatureNotSupported,
        fmt::format("node {} lives in the master process: it cannot {} while the master runs", node,
                    power::PowerActionName(action)));
  }
  if (!driver.Supports(action)) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       fmt::format("node {}'s power driver '{}' cannot {}", node, driver.name(),
                                   power::PowerActionName(action)));
  }
  bool suspend = action == power::PowerAction::kSuspend;
  NodeAdminState before = catalog_.GetNodeState(node);
  {
    // Marked under the admin lock, so that no move can pick the node meanwhile.
    MutexLock admin(admin_mu_);
    size_t owned = catalog_.SegmentsOnNode(node).size();
    if (owned > 0) {
      return Status::Sql(
          sqlstate::kObjectNotInPrerequisiteState,
          fmt::format("node {} still owns {} segment(s); run ALTER NODE {} DRAIN first", node,
                      owned, node));
    }
    if (suspend && before == NodeAdminState::kOff) {
      return Status::Sql(sqlstate::kObjectNotInPrerequisiteState,
                         fmt::format("node {} is off; it cannot be suspended", node));
    }
    // Its copies leave their sets first: a leader shipping to a sleeping node would wait for
    // it until its deadline on every commit. They sleep (the leaders keep what they miss, to
    // catch them up on waking), or, if the policy keeps nothing, are dropped.
    for (const SegmentEntry& e : catalog_.AllSegments()) {
      if (std::count(e.followers.begin(), e.followers.end(), node))
        RETURN_NOT_OK(SleepFollower(e.id, node));
    }
    RETURN_NOT_OK(
        catalog_.SetNodeState(node, suspend ? NodeAdminState::kSuspended : NodeAdminState::kOff));
  }
  Status s = power_.Act(node, action);
  if (!s.ok()) {
    // Nothing happened (or we cannot tell): the node keeps its former admin state, so the
    // supervisor and the placement see it as before.
    (void)catalog_.SetNodeState(node, before);
    return s;
  }
  if (suspend) {
    registry_.MarkAsleep(node);
  } else {
    registry_.WaitDown(node, 10000);
  }
  Log("master")->info("node {} id={} driver={}", suspend ? "suspended" : "powered off", node,
                      driver.name());
  return Status::OK();
}

bool Placement::AwaitRegistration(const NodeConfig& n, int wait_ms) {
  power::PowerDriver& driver = power_.Driver(n.id);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (!registry_.WaitUp(n.id, 1000)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (Stopping()) return false;  // the master is shutting down: do not hold it up
    // A magic packet is one unacknowledged datagram (and a fresh link may drop it): send it
    // again while the node is silent.
    if (!driver.ObservesState()) (void)driver.PowerOn(n);
  }
  return true;
}

Status Placement::PowerOn(NodeId node) {
  const NodeConfig* nc = config_.FindNode(node);
  if (!nc)
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", node));
  MutexLock power(power_.mu());
  NodeAdminState before = catalog_.GetNodeState(node);
  RETURN_NOT_OK(power_.Act(node, power::PowerAction::kOn));
  // Firmware and OS (emulated hosts wait the profile's latencies), then the node's own start.
  const HostProfile& p = config_.Profile(*nc);
  int wait_ms =
      (before == NodeAdminState::kSuspended ? p.resume_ms : p.boot_ms) + config_.wake_timeout_ms;
  power::PowerDriver& driver = power_.Driver(node);
  if (!AwaitRegistration(*nc, wait_ms)) {
    std::string why = fmt::format("node {} was powered on ({}) but did not register within {} ms",
                                  node, driver.name(), wait_ms);
    power_.RecordFailure(node, why);
    return Status(Status::Code::kUnavailable, why, sqlstate::kCannotConnectNow);
  }
  RETURN_NOT_OK(catalog_.SetNodeState(node, NodeAdminState::kActive));
  int caught = CatchUpAsleep(node);
  Log("master")->info("node powered on id={} driver={} copies_caught_up={}", node,
                      power_.Driver(node).name(), caught);
  return Status::OK();
}

void Placement::PowerOnAll() {
  auto sleeping = [this](NodeId id) {
    NodeAdminState s = catalog_.GetNodeState(id);
    return s == NodeAdminState::kOff || s == NodeAdminState::kSuspended;
  };
  std::set<NodeId> failed;
  for (const auto& n : config_.nodes) {
    // The node this process hosts starts once the master serves (master/master.cc).
    if (sleeping(n.id) || n.InMaster()) continue;
    MutexLock l(power_.mu());
    // A node that cannot be powered on (BMC unreachable, ...) is reported; the rest serve.
    Status on = power_.Act(n.id, power::PowerAction::kOn);
    if (!on.ok()) {
      Log("master")->error("cannot power on node {}: {}", n.id, on.ToString());
      failed.insert(n.id);
    }
  }
  for (const auto& n : config_.nodes) {
    if (sleeping(n.id) || failed.count(n.id) || n.InMaster()) continue;
    int wait_ms = config_.Profile(n).boot_ms + config_.wake_timeout_ms;
    if (!AwaitRegistration(n, wait_ms)) {
      power_.RecordFailure(
          n.id, fmt::format("node {} did not register within {} ms of power on; see {}/n{}.log",
                            n.id, wait_ms, config_.data_dir, n.id));
    }
  }
}

}  // namespace wattdb::master
