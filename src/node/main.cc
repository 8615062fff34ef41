// wattdb-node: serves this node's segments to the master.

#include <iostream>

#include <boost/program_options.hpp>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process.h"
#include "common/stack_guard.h"
#include "node/node.h"

namespace po = boost::program_options;
using namespace wattdb;

int main(int argc, char** argv) {
  SetDefaultThreadStackSize(kServerThreadStackBytes);
  po::options_description desc(
      "wattdb-node: a WattDB storage and execution node.\n"
      "Registers with the master named in the cluster config and serves its segments.\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")(
      "config,c", po::value<std::string>()->default_value(""),
      "cluster config (TOML); empty = the embedded local default")(
      "id", po::value<uint32_t>(), "this node's id (must appear in the config) [required]")(
      "data-dir", po::value<std::string>(), "storage directory (default <data_dir>/n<id>)")(
      "log-level", po::value<std::string>(), "trace|debug|info|warn|error (default from config)");
  po::variables_map vm;
  if (auto exit_code = ParseCommandLine("wattdb-node", argc, argv, desc, &vm)) return *exit_code;
  if (!vm.count("id")) {
    std::cerr << "wattdb-node: --id is required\n" << desc << "\n";
    return 2;
  }
  auto cfg = LoadConfig(vm["config"].as<std::string>());
  if (!cfg.ok()) {
    std::cerr << "wattdb-node: " << cfg.status().message() << "\n";
    return 2;
  }
  node::NodeProcessOptions opts;
  opts.id = vm["id"].as<uint32_t>();
  if (vm.count("data-dir")) opts.data_dir = vm["data-dir"].as<std::string>();
  node::Node n(*cfg, opts);
  if (Status s = n.Init(); !s.ok()) {
    std::cerr << "wattdb-node: " << s.message() << "\n";
    return 2;
  }
  std::string level = vm.count("log-level") ? vm["log-level"].as<std::string>() : cfg->log_level;
  if (!ConfigureLogging(level, fmt::format("n{}", opts.id))) {
    std::cerr << "wattdb-node: unknown log level " << level << "\n";
    return 2;
  }
  BlockTerminationSignals();
  if (Status s = n.Start(); !s.ok()) {
    Log("node")->error("cannot start: {}", s.ToString());
    return 1;
  }
  int sig = WaitForTerminationSignal();
  Log("node")->info("signal {} received, shutting down", sig);
  n.Shutdown();
  Log("node")->info("exiting");
  node::Node::Exit(0);
}
