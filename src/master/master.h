// Master: the parts of a wattdb-master process and their lifecycle. Init() builds them and
// checks what can be checked before anything runs (the energy policy); Start() brings them up
// in order, Shutdown() takes them down in reverse, whichever of them started:
//
//   emulated hosts (wattdb-lab)  ->  cluster (catalog, nodes, transactions, placement)
//   ->  energy service  ->  the node this process hosts  ->  SQL listener  ->  /metrics
//
// The cluster's last calls (commit confirmations) may go to the hosted node, so the node stops
// after it. Not thread-safe: one thread (main) drives it; ReloadPolicy may run on it between
// Start and Shutdown.
#pragma once

#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "master/cluster/cluster.h"

namespace wattdb {
namespace node {
class NodeServer;
}  // namespace node

namespace master {

class EnergyService;
class MetricsServer;
class PgServer;

struct MasterOptions {
  ClusterOptions cluster;
  // Energy-policy file ("" = the config's energy_policy, else the embedded default).
  std::string policy_path;
};

class Master {
 public:
  // `config` must outlive the master.
  Master(const ClusterConfig& config, MasterOptions opts);
  ~Master();

  // Builds the parts. An invalid energy policy is an error here, before any host or node is
  // powered. REQUIRES: called once, before Start.
  Status Init();
  // Starts every part in order; on an error, stops what had started and returns it.
  Status Start();
  // Re-reads the energy-policy file (SIGHUP); an invalid one is logged and the old one stays.
  void ReloadPolicy();
  // Stops every part that started, in reverse order. Idempotent.
  void Shutdown();

 private:
  Status StartLab();
  void StopLab();
  Status StartHostedNode();

  const ClusterConfig& config_;  // borrowed; outlives the master
  MasterOptions opts_;
  std::string lab_command_;
  bool lab_up_ = false;  // emulated hosts this master brought up (to take down at exit)
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<EnergyService> energy_;
  std::unique_ptr<node::NodeServer> hosted_;
  std::unique_ptr<PgServer> pg_;
  std::unique_ptr<MetricsServer> metrics_;
};

}  // namespace master
}  // namespace wattdb
