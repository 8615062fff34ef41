// EnergyService: the energy controller at work in the master. A thread steps the controller
// every telemetry interval against the cluster (ClusterPlane); the policy comes from a file
// (wattdb-master --policy, or [master] energy_policy) or the embedded default, and is
// reloaded on SIGHUP and `ALTER SYSTEM RELOAD ENERGY POLICY`. Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "master/energy/controller.h"
#include "master/energy/policy.h"

namespace wattdb::master {

class Cluster;

// The policy a cluster without a policy file runs: dynamic, down to one active node.
extern const char* const kDefaultPolicyToml;

class EnergyService {
 public:
  // `policy_path` "" = the embedded default.
  EnergyService(Cluster& cluster, std::string policy_path);
  ~EnergyService();

  // Loads the policy; an invalid one is an error (the master refuses to start).
  Status Init();
  void Start();
  void Stop();
  // Re-reads the policy file. An invalid new policy is rejected (the old one stays in force)
  // and the reason recorded in the decisions; the error is returned too.
  Status Reload();

  EnergyPolicy policy() const { return controller_->policy(); }
  DecisionLog& decisions() { return controller_->log(); }
  const std::string& policy_path() const { return path_; }

 private:
  class ClusterPlane;
  void Loop();
  Result<EnergyPolicy> Load() const;

  Cluster& cluster_;
  const std::string path_;
  std::unique_ptr<ClusterPlane> plane_;
  std::unique_ptr<EnergyController> controller_;
  std::thread thread_;
  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace wattdb::master
