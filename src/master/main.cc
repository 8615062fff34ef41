// wattdb-master: SQL front end and cluster controller.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <boost/program_options.hpp>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process.h"
#include "common/subprocess.h"
#include "common/stack_guard.h"
#include "master/cluster/cluster.h"
#include "master/metrics/metrics_server.h"
#include "master/pgwire/pg_server.h"
#include "master/sql/scan_provider.h"
#include "node/node_server.h"

namespace po = boost::program_options;
using namespace wattdb;

int main(int argc, char** argv) {
  wattdb::SetDefaultThreadStackSize(wattdb::kServerThreadStackBytes);
  po::options_description desc(
      "wattdb-master: accepts PostgreSQL clients, plans queries, and controls the nodes of a\n"
      "WattDB cluster (placement, segment moves, drain, power).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->default_value(""),
      "cluster config (TOML); empty = the embedded local default (3 nodes on loopback)")(
      "manage-nodes", po::bool_switch(),
      "power every node on at start and off at exit (local driver: start node processes)")(
      "node-binary", po::value<std::string>(), "wattdb-node executable for the local power driver "
                                               "(default: next to this binary)")(
      "no-balance", po::bool_switch(), "do not spread split-off segments across nodes")(
      "policy", po::value<std::string>(),
      "energy-policy file (TOML; default: [master] energy_policy of the config, else the embedded "
      "dynamic policy; SIGHUP or ALTER SYSTEM RELOAD ENERGY POLICY re-reads it)")(
      "print-default-policy", po::bool_switch(), "print the embedded energy policy and exit")(
      "print-default-config", po::bool_switch(), "print the embedded default config and exit")(
      "log-level", po::value<std::string>(), "trace|debug|info|warn|error (default from config)");
  po::variables_map vm;
  if (auto exit_code = ParseCommandLine("wattdb-master", argc, argv, desc, &vm)) return *exit_code;
  if (vm["print-default-config"].as<bool>()) {
    std::cout << kDefaultConfigToml;
    return 0;
  }
  if (vm["print-default-policy"].as<bool>()) {
    std::cout << master::kDefaultPolicyToml;
    return 0;
  }
  std::string config_path = vm["config"].as<std::string>();
  auto cfg = LoadConfig(config_path);
  if (!cfg.ok()) {
    std::cerr << "wattdb-master: " << cfg.status().message() << "\n";
    return 2;
  }
  std::string level = vm.count("log-level") ? vm["log-level"].as<std::string>() : cfg->log_level;
  if (!ConfigureLogging(level, "master")) {
    std::cerr << "wattdb-master: unknown log level " << level << "\n";
    return 2;
  }
  BlockTerminationSignals();

  master::MasterOptions opts;
  opts.config_path = config_path.empty() ? "" : std::filesystem::absolute(config_path).string();
  opts.manage_nodes = vm["manage-nodes"].as<bool>();
  opts.balance = !vm["no-balance"].as<bool>();
  if (vm.count("policy")) opts.policy_path = vm["policy"].as<std::string>();
  if (std::string policy = opts.policy_path.empty() ? cfg->energy_policy : opts.policy_path; !policy.empty()) {
    auto p = master::LoadPolicy(policy, *cfg);  // checked before anything starts
    if (!p.ok()) {
      std::cerr << "wattdb-master: invalid energy policy: " << p.status().message() << "\n";
      return 2;
    }
  }
  if (vm.count("node-binary")) {
    opts.node_binary = vm["node-binary"].as<std::string>();
  } else if (!cfg->node_binary.empty()) {
    opts.node_binary = cfg->node_binary;
  } else {
    std::error_code ec;
    opts.node_binary = (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "wattdb-node").string();
  }
  // Emulated hosts are hardware to the master: wattdb-lab builds them (its processes leave
  // the master's process tree) and removes them when the master that built them stops.
  bool lab = opts.manage_nodes && cfg->hosts.mode == "emulated";
  std::string lab_cmd = (std::filesystem::path(opts.node_binary).parent_path() / "wattdb-lab").string();
  if (lab) {
    if (opts.config_path.empty()) {
      std::cerr << "wattdb-master: emulated hosts need a config file (--config)\n";
      return 2;
    }
    auto up = RunProcess({lab_cmd, "up", "--adopt", "--config", opts.config_path}, 60000);
    if (!up.ok() || up->exit_code != 0) {
      Log("master")->error("cannot bring up the emulated hosts: {}", up.ok() ? up->output : up.status().ToString());
      return 1;
    }
    Log("master")->info("{}", up->output.substr(0, up->output.find_last_not_of('\n') + 1));
    lab = up->output.find("already up") == std::string::npos;  // adopted ones stay up at exit
  }
  auto lab_down = [&] {
    if (lab) (void)RunProcess({lab_cmd, "down", "--config", opts.config_path}, 60000);
  };
  master::Cluster cluster(*cfg, opts);
  Status s = cluster.Start();
  if (!s.ok()) {
    Log("master")->error("cannot start: {}", s.ToString());
    cluster.Stop();
    lab_down();
    return 1;
  }
  master::RegisterSystemViews(cluster.catalog());
  // The master node (power = "master"): this process holds its segments and reads them
  // without a message; other nodes and the master's control calls reach it on its data port.
  std::unique_ptr<node::NodeServer> hosted;
  for (const auto& n : cfg->nodes) {
    if (!n.InMaster()) continue;
    hosted = std::make_unique<node::NodeServer>(node::NodeOptionsFromConfig(*cfg, n));
    s = hosted->Start();
    if (s.ok() && !cluster.registry().WaitUp(n.id, cfg->heartbeat_timeout_ms)) {
      s = Status::TimedOut(fmt::format("node {} did not register within {} ms", n.id, cfg->heartbeat_timeout_ms));
    }
    if (!s.ok()) {
      Log("master")->error("cannot start the node it hosts: {}", s.ToString());
      hosted->Stop();
      cluster.Stop();
      lab_down();
      return 1;
    }
    cluster.set_local_segments(hosted.get());
    if (auto client = cluster.registry().Client(n.id); client.ok()) {
      (*client)->SetInline([node = hosted.get()](net::Connection& c) { return node->ServeInline(c); });
    }
    Log("master")->info("hosting node {} (data port {})", n.id, hosted->port());
  }
  auto stop_hosted = [&] {
    cluster.set_local_segments(nullptr);
    if (hosted) hosted->Stop();
  };
  master::PgServer pg(cluster, cfg->master_host, cfg->pg_port);
  s = pg.Start();
  if (!s.ok()) {
    Log("master")->error("cannot start SQL listener: {}", s.ToString());
    cluster.Stop();
    stop_hosted();
    lab_down();
    return 1;
  }
  std::unique_ptr<master::MetricsServer> metrics;
  if (cfg->metrics_port != 0) {
    metrics = std::make_unique<master::MetricsServer>(cluster, cfg->master_host, cfg->metrics_port);
    s = metrics->Start();
    if (!s.ok()) {
      Log("master")->error("{}", s.ToString());
      pg.Stop();
      cluster.Stop();
      stop_hosted();
      lab_down();
      return 1;
    }
  }
  Log("master")->info("ready: psql -h {} -p {} -U wattdb", cfg->master_host, cfg->pg_port);
  int sig;
  while ((sig = WaitForSignal()) == SIGHUP) {
    Log("master")->info("SIGHUP received, reloading the energy policy");
    (void)cluster.energy().Reload();
  }
  Log("master")->info("signal {} received, shutting down", sig);
  if (metrics) metrics->Stop();
  pg.Stop();
  cluster.Stop();  // its last calls (commit confirmations) may go to the node it hosts
  stop_hosted();
  lab_down();
  Log("master")->info("master stopped");
  return 0;
}
