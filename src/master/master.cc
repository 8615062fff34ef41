#include "master/master.h"

#include <filesystem>

#include "common/logging.h"
#include "common/subprocess.h"
#include "master/energy/energy_service.h"
#include "master/metrics/metrics_server.h"
#include "master/pgwire/pg_server.h"
#include "master/sql/scan_provider.h"
#include "master/sql/system_views.h"
#include "node/node_server.h"

namespace wattdb::master {

namespace {
constexpr int kLabTimeoutMs = 60000;  // wattdb-lab up / down
}  // namespace

Master::Master(const ClusterConfig& config, MasterOptions opts)
    : config_(config), opts_(std::move(opts)) {}

Master::~Master() { Shutdown(); }

Status Master::Init() {
  const ClusterOptions& c = opts_.cluster;
  if (c.manage_nodes && config_.hosts.mode == "emulated" && c.config_path.empty()) {
    return Status::InvalidArgument("emulated hosts need a config file (--config)");
  }
  lab_command_ = (std::filesystem::path(c.node_binary).parent_path() / "wattdb-lab").string();
  cluster_ = std::make_unique<Cluster>(config_, c);
  std::string policy = opts_.policy_path.empty() ? config_.energy_policy : opts_.policy_path;
  energy_ = std::make_unique<EnergyService>(*cluster_, policy);
  RETURN_NOT_OK_PREPEND(energy_->Init(), "invalid energy policy");
  return Status::OK();
}

Status Master::StartLab() {
  // Emulated hosts are hardware to the master: wattdb-lab builds them (its processes leave the
  // master's process tree) and removes them when the master that built them stops.
  if (!opts_.cluster.manage_nodes || config_.hosts.mode != "emulated") return Status::OK();
  auto up = RunProcess({lab_command_, "up", "--adopt", "--config", opts_.cluster.config_path},
                       kLabTimeoutMs);
  if (!up.ok() || up->exit_code != 0) {
    return Status::IOError(fmt::format("cannot bring up the emulated hosts: {}",
                                       up.ok() ? up->output : up.status().ToString()));
  }
  Log("master")->info("{}", up->output.substr(0, up->output.find_last_not_of('\n') + 1));
  lab_up_ = up->output.find("already up") == std::string::npos;  // adopted ones stay up at exit
  return Status::OK();
}

void Master::StopLab() {
  if (!lab_up_) return;
  lab_up_ = false;
  (void)RunProcess({lab_command_, "down", "--config", opts_.cluster.config_path}, kLabTimeoutMs);
}

// The master node (power = "master"): this process holds its segments and reads them without
// a message; other nodes and the master's control calls reach it on its data port.
Status Master::StartHostedNode() {
  for (const auto& n : config_.nodes) {
    if (!n.InMaster()) continue;
    hosted_ = std::make_unique<node::NodeServer>(node::NodeOptionsFromConfig(config_, n));
    RETURN_NOT_OK_PREPEND(hosted_->Start(), "cannot start the node it hosts");
    if (!cluster_->registry().WaitUp(n.id, config_.heartbeat_timeout_ms)) {
      return Status::TimedOut(
          fmt::format("cannot start the node it hosts: node {} did not register within {} ms", n.id,
                      config_.heartbeat_timeout_ms));
    }
    cluster_->set_local_segments(hosted_.get());
    if (auto client = cluster_->registry().Client(n.id); client.ok()) {
      (*client)->SetInline(
          [node = hosted_.get()](net::Connection& c) { return node->ServeInline(c); });
    }
    Log("master")->info("hosting node {} (data port {})", n.id, hosted_->port());
  }
  return Status::OK();
}

Status Master::Start() {
  Status s = [&]() -> Status {
    RETURN_NOT_OK(StartLab());
    RETURN_NOT_OK(cluster_->Start());
    energy_->Start();
    RegisterSystemViews(cluster_->catalog());
    RETURN_NOT_OK(StartHostedNode());
    pg_ = std::make_unique<PgServer>(*cluster_, *energy_, config_.master_host, config_.pg_port);
    RETURN_NOT_OK_PREPEND(pg_->Start(), "cannot start SQL listener");
    if (config_.metrics_port != 0) {
      metrics_ =
          std::make_unique<MetricsServer>(*cluster_, config_.master_host, config_.metrics_port);
      RETURN_NOT_OK(metrics_->Start());
    }
    return Status::OK();
  }();
  if (!s.ok()) Shutdown();
  return s;
}

void Master::ReloadPolicy() {
  if (energy_) (void)energy_->Reload();
}

void Master::Shutdown() {
  if (metrics_) metrics_->Stop();
  if (pg_) pg_->Stop();
  if (energy_) energy_->Stop();
  if (cluster_)
    cluster_->Stop();  // its last calls (commit confirmations) may go to the hosted node
  if (cluster_) cluster_->set_local_segments(nullptr);
  if (hosted_) hosted_->Stop();
  StopLab();
}

}  // namespace wattdb::master
