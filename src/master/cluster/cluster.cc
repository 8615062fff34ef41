#include "master/cluster/cluster.h"

#include "common/logging.h"

namespace wattdb::master {

Cluster::Cluster(const ClusterConfig& config, ClusterOptions opts, const Clock& clock)
    : config_(config), opts_(std::move(opts)), clock_(clock) {}

Cluster::~Cluster() { Stop(); }

Status Cluster::Start() {
  ASSIGN_OR_RETURN(catalog_, Catalog::Open(config_.data_dir + "/master"));
  ASSIGN_OR_RETURN(Timestamp ts, catalog_->NextTimestamp());
  ts_.Reset(ts);  // everything committed before this run has a smaller timestamp
  ASSIGN_OR_RETURN(net::ClusterKey key, net::ClusterKey::LoadOrCreate(config_.KeyPath()));
  // The node CPU a statement's calls cost counts toward its energy.
  registry_ =
      std::make_unique<NodeRegistry>(config_, clock_, std::move(key), &StatementCpuScope::AddNode);
  power_ = std::make_unique<NodePower>(config_, *registry_, clock_);
  power::DriverContext ctx;
  ctx.node_binary = opts_.node_binary;
  ctx.config_path = opts_.config_path;
  ctx.data_dir = config_.data_dir;
  ctx.os_request = [this](NodeId id, power::PowerAction a) -> Status {
    ASSIGN_OR_RETURN(auto client, registry_->Client(id));
    return RpcHostPower(*client, a == power::PowerAction::kSuspend);
  };
  RETURN_NOT_OK(power_->Init(ctx));
  monitor_ = std::make_unique<PowerMonitor>(config_, *registry_, *power_, clock_);
  RETURN_NOT_OK(monitor_->Init());
  follower_reads_ = std::make_unique<FollowerReads>(*catalog_, *registry_, clock_);
  txns_ = std::make_unique<TxnCoordinator>(config_, clock_, *catalog_, *registry_, ts_, latches_,
                                           *follower_reads_, [this] { WantSplits(); });
  Placement::Options popts;
  popts.balance = opts_.balance;
  popts.local = &local_segments_;
  popts.stopping = [this] { return Stopping(); };
  placement_ = std::make_unique<Placement>(config_, clock_, *catalog_, *registry_, *power_, ts_,
                                           latches_, std::move(popts));
  // No node's replication state survives this start: each segment keeps its leader alone
  // until upkeep seeds its followers again (docs/design/replication.md).
  placement_->ForgetAllReplicas();
  registry_->SetReplicaHooks(
      [this](NodeId n) { placement_->ForgetReplicasOf(n); },
      [this](SegmentId seg, NodeId leader, NodeId follower, const std::string& why) {
        return placement_->DropFollower(seg, leader, follower, why);
      });
  RETURN_NOT_OK(registry_->Start());
  if (opts_.manage_nodes) placement_->PowerOnAll();
  maintenance_ = std::thread([this] { MaintenanceLoop(); });
  monitor_->Start();
  if (opts_.manage_nodes) {
    supervisor_ = std::make_unique<NodeSupervisor>(config_, *registry_, *catalog_, *power_);
    supervisor_->Start();
  }
  return Status::OK();
}

void Cluster::Stop() {
  {
    MutexLock l(stop_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.SignalAll();
  if (supervisor_) supervisor_->Stop();
  if (monitor_) monitor_->Stop();
  if (maintenance_.joinable()) maintenance_.join();
  if (opts_.manage_nodes && power_) {
    for (const auto& n : config_.nodes) {
      MutexLock l(power_->mu());
      if (power_->Driver(n.id).Supports(power::PowerAction::kOff))
        (void)power_->Act(n.id, power::PowerAction::kOff);
    }
  }
  if (registry_) registry_->Stop();
}

bool Cluster::Stopping() {
  MutexLock l(stop_mu_);
  return stopping_;
}

void Cluster::WantSplits() {
  MutexLock l(stop_mu_);
  split_wanted_ = true;
  stop_cv_.SignalAll();
}

void Cluster::MaintainOnce() {
  txns_->Maintain();
  // Old versions no snapshot can see may go: tell every node the oldest snapshot in use.
  Timestamp horizon = ts_.GcHorizon();
  for (const auto& n : config_.nodes) {
    auto c = registry_->Client(n.id);
    if (c.ok()) (void)RpcGcHorizon(**c, horizon);
  }
  placement_->Maintain([this] { txns_->Maintain(/*confirm=*/false); });
}

void Cluster::MaintenanceLoop() {
  while (true) {
    {
      MutexLock l(stop_mu_);
      auto until = CondVar::Clock::now() + std::chrono::milliseconds(config_.telemetry_interval_ms);
      while (!stopping_ && !split_wanted_ && stop_cv_.WaitUntil(stop_mu_, until)) {
      }
      if (stopping_) break;
      split_wanted_ = false;
    }
    MaintainOnce();
  }
  txns_->ConfirmUnsyncedCommits();  // so that a clean stop leaves no decision behind
}

}  // namespace wattdb::master
