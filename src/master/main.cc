// wattdb-master: SQL front end and cluster controller.
#include <filesystem>
#include <iostream>
#include <variant>

#include <boost/program_options.hpp>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process.h"
#include "common/stack_guard.h"
#include "master/energy/energy_service.h"
#include "master/master.h"

namespace po = boost::program_options;
using namespace wattdb;

namespace {

// What the command line asks for: a master to run, or an exit code (help, a printed default,
// a bad flag or config).
struct Flags {
  ClusterConfig config;
  master::MasterOptions opts;
};

std::variant<Flags, int> ParseFlags(int argc, char** argv) {
  po::options_description desc(
      "wattdb-master: accepts PostgreSQL clients, plans queries, and controls the nodes of a\n"
      "WattDB cluster (placement, segment moves, drain, power).\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->default_value(""),
      "cluster config (TOML); empty = the embedded local default (3 nodes on loopback)")(
      "manage-nodes", po::bool_switch(),
      "power every node on at start and off at exit (local driver: start node processes)")(
      "node-binary", po::value<std::string>(),
      "wattdb-node executable for the local power driver "
      "(default: next to this binary)")("no-balance", po::bool_switch(),
                                        "do not spread split-off segments across nodes")(
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
  Flags f{std::move(*cfg), {}};
  master::ClusterOptions& c = f.opts.cluster;
  c.config_path = config_path.empty() ? "" : std::filesystem::absolute(config_path).string();
  c.manage_nodes = vm["manage-nodes"].as<bool>();
  c.balance = !vm["no-balance"].as<bool>();
  if (vm.count("policy")) f.opts.policy_path = vm["policy"].as<std::string>();
  if (vm.count("node-binary")) {
    c.node_binary = vm["node-binary"].as<std::string>();
  } else if (!f.config.node_binary.empty()) {
    c.node_binary = f.config.node_binary;
  } else {
    std::error_code ec;
    c.node_binary =
        (std::filesystem::read_symlink("/proc/self/exe", ec).parent_path() / "wattdb-node")
            .string();
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  SetDefaultThreadStackSize(kServerThreadStackBytes);
  auto parsed = ParseFlags(argc, argv);
  if (int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  Flags& f = std::get<Flags>(parsed);
  BlockTerminationSignals();
  master::Master m(f.config, std::move(f.opts));
  if (Status s = m.Init(); !s.ok()) {
    std::cerr << "wattdb-master: " << s.message() << "\n";
    return 2;
  }
  if (Status s = m.Start(); !s.ok()) {
    Log("master")->error("cannot start: {}", s.ToString());
    return 1;
  }
  Log("master")->info("ready: psql -h {} -p {} -U wattdb", f.config.master_host, f.config.pg_port);
  int sig;
  while ((sig = WaitForSignal()) == SIGHUP) {
    Log("master")->info("SIGHUP received, reloading the energy policy");
    m.ReloadPolicy();
  }
  Log("master")->info("signal {} received, shutting down", sig);
  m.Shutdown();
  Log("master")->info("master stopped");
  return 0;
}
