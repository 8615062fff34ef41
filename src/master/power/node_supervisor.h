// NodeSupervisor: restarts nodes that crashed. Every `period_ms` it looks at each node the
// master manages: one that should be on (its admin state is neither off nor suspended), is
// not registered, and whose process is gone (its power driver observes the state and says
// off) is powered on again. Restarts of a
// node that keeps crashing back off exponentially (up to 30 s). A node that is alive but
// silent (frozen) is left alone: it may come back by itself.
// Thread-safe; Stop() (or destruction) joins the thread.
#pragma once

#include <functional>
#include <map>
#include <thread>

#include "common/config.h"
#include "common/mutex.h"
#include "master/catalog/catalog.h"
#include "master/nodes/node_registry.h"
#include "master/power/node_power.h"

namespace wattdb::master {

class NodeSupervisor {
 public:
  // The supervisor powers a node on only while holding power.mu(), as ALTER NODE ... POWER
  // does, so the two never race.
  NodeSupervisor(const ClusterConfig& config, NodeRegistry& registry, Catalog& catalog,
                 NodePower& power, int period_ms = 500);
  ~NodeSupervisor();

  void Start();
  void Stop();
  // One pass now (tests).
  void CheckOnce();
  uint64_t restarts() const;

 private:
  void Loop();
  // Restarts `n` if it is down and its driver sees it off. REQUIRES its power lock held.
  void RestartIfDown(const NodeConfig& n) REQUIRES(power_.mu());

  const ClusterConfig& config_;
  NodeRegistry& registry_;
  Catalog& catalog_;
  NodePower& power_;
  const int period_ms_;

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  struct Backoff {
    int64_t next_us = 0;  // no restart before this (steady clock)
    int delay_ms = 0;
  };
  std::map<NodeId, Backoff> backoff_ GUARDED_BY(mu_);
  uint64_t restarts_ GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace wattdb::master
