// Cluster: the master's view and control of the whole cluster. Owns the catalog, the node
// registry, the power drivers and monitor, and the master's two halves that act on the
// nodes: the transaction coordinator (coordinator.h: atomic multi-node writes, commit,
// recovery of in-doubt transactions) and the placement (placement.h: moves, splits, drains,
// power changes). Both share the timestamp oracle (timestamp_oracle.h) and the segment
// latches (segment_latches.h), and neither knows the other; a commit that grew a segment
// past its size wakes the maintenance, which runs both halves' upkeep. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "master/catalog/catalog.h"
#include "master/cluster/coordinator.h"
#include "master/cluster/follower_reads.h"
#include "master/cluster/placement.h"
#include "master/cluster/segment_latches.h"
#include "master/cluster/timestamp_oracle.h"
#include "master/cluster/transaction.h"
#include "master/nodes/node_registry.h"
#include "master/power/node_power.h"
#include "master/power/node_supervisor.h"
#include "master/power/power_monitor.h"
#include "master/power/statement_energy.h"
#include "master/stats/activity.h"
#include "master/stats/query_counters.h"
#include "rpc/exchange.h"

namespace wattdb::master {

struct ClusterOptions {
  std::string config_path;  // passed to locally started nodes
  std::string node_binary;
  bool manage_nodes = false;  // power nodes on at start and off at exit
  bool balance = true;        // spread split-off segments to the least loaded node
};

class Cluster {
 public:
  Cluster(const ClusterConfig& config, ClusterOptions opts, const Clock& clock = Clock::Real());
  ~Cluster();

  Status Start();
  void Stop();

  Catalog& catalog() { return *catalog_; }
  NodeRegistry& registry() { return *registry_; }
  // Transactions: begin, write, commit (REQUIRES Start succeeded, as for the next three).
  TxnCoordinator& txns() { return *txns_; }
  // Where segments live: moves, splits, drains, power.
  Placement& placement() { return *placement_; }
  // Which copy a follower read goes to (REQUIRES Start succeeded).
  FollowerReads& follower_reads() { return *follower_reads_; }
  NodePower& power() { return *power_; }
  PowerMonitor& monitor() { return *monitor_; }
  // The node this process hosts (power = "master"): set once it serves, cleared before it
  // stops (no statement runs then); null if none. Exchanges read its segments in-process.
  void set_local_segments(rpc::LocalSegments* s) { local_segments_.store(s); }
  rpc::LocalSegments* local_segments() const { return local_segments_.load(); }
  QueryCounters& queries() { return queries_; }
  Activity& activity() { return activity_; }  // pg_stat_activity
  StatementEnergyLog& energy_log() { return energy_log_; }
  // Crashed nodes restarted so far (0 without --manage-nodes).
  uint64_t node_restarts() const { return supervisor_ ? supervisor_->restarts() : 0; }
  const ClusterConfig& config() const { return config_; }

  // Commit timestamps and read snapshots.
  TimestampOracle& timestamps() { return ts_; }
  // Sessions connected to each database (DROP DATABASE refuses while any is).
  class SessionGuard {
   public:
    SessionGuard(Cluster& c, std::string db) : c_(c), db_(std::move(db)) {
      MutexLock l(c_.sessions_mu_);
      c_.sessions_[db_]++;
    }
    ~SessionGuard() {
      MutexLock l(c_.sessions_mu_);
      if (--c_.sessions_[db_] == 0) c_.sessions_.erase(db_);
    }

   private:
    Cluster& c_;
    std::string db_;
  };
  int SessionsOn(const std::string& db) {
    MutexLock l(sessions_mu_);
    auto it = sessions_.find(db);
    return it == sessions_.end() ? 0 : it->second;
  }

  // Runs one maintenance pass now (both halves' upkeep; split oversized segments, finish
  // logged moves, clean up dropped segments). Normally runs every telemetry interval.
  void MaintainOnce();

 private:
  void MaintenanceLoop();
  bool Stopping();
  // A commit grew a segment past segment_bytes: maintenance runs now.
  void WantSplits();

  const ClusterConfig& config_;  // borrowed; outlives the cluster
  ClusterOptions opts_;
  const Clock& clock_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<NodePower> power_;
  std::unique_ptr<PowerMonitor> monitor_;
  QueryCounters queries_;
  Activity activity_;
  StatementEnergyLog energy_log_;
  TimestampOracle ts_{[this] { return catalog_->NextTimestamp(); }};
  SegmentLatches latches_;
  std::unique_ptr<FollowerReads> follower_reads_;
  std::unique_ptr<TxnCoordinator> txns_;
  std::unique_ptr<Placement> placement_;

  Mutex sessions_mu_;
  std::map<std::string, int> sessions_ GUARDED_BY(sessions_mu_);
  std::unique_ptr<NodeSupervisor> supervisor_;  // with manage_nodes: restarts crashed nodes
  std::thread maintenance_;
  std::atomic<rpc::LocalSegments*> local_segments_{nullptr};
  Mutex stop_mu_;
  CondVar stop_cv_;  // wakes maintenance
  bool stopping_ GUARDED_BY(stop_mu_) = false;
  bool split_wanted_ GUARDED_BY(stop_mu_) = false;  // a commit reported an oversized segment
};

}  // namespace wattdb::master
