// wattdb-node: serves this node's segments to the master.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <mutex>
#include <thread>

#include <boost/program_options.hpp>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process.h"
#include "common/stack_guard.h"
#include "node/node_server.h"

namespace po = boost::program_options;
using namespace wattdb;

namespace {

// Ends the process once, with its logs flushed, from whichever thread comes first: the main
// thread after a clean stop, or the watchdog below. The other waits on the lock until the
// process is gone. (Returning from main would run static destructors, spdlog's among them,
// while the watchdog may be flushing the logs: AddressSanitizer caught the double free.)
[[noreturn]] void ExitNow() {
  static std::mutex mu;
  mu.lock();
  spdlog::shutdown();
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  wattdb::SetDefaultThreadStackSize(wattdb::kServerThreadStackBytes);
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
  uint32_t id = vm["id"].as<uint32_t>();
  const NodeConfig* self = cfg->FindNode(id);
  if (!self) {
    std::cerr << "wattdb-node: node id " << id << " is not in the config\n";
    return 2;
  }
  if (self->InMaster()) {
    std::cerr << "wattdb-node: node " << id
              << " lives in the master process (power = \"master\")\n";
    return 2;
  }
  std::string level = vm.count("log-level") ? vm["log-level"].as<std::string>() : cfg->log_level;
  if (!ConfigureLogging(level, fmt::format("n{}", id))) {
    std::cerr << "wattdb-node: unknown log level " << level << "\n";
    return 2;
  }
  BlockTerminationSignals();
  // SIGCONT (a resume from suspend) is taken by a thread of its own, below.
  sigset_t cont;
  sigemptyset(&cont);
  sigaddset(&cont, SIGCONT);
  pthread_sigmask(SIG_BLOCK, &cont, nullptr);

  node::NodeOptions opts = node::NodeOptionsFromConfig(*cfg, *self);
  if (vm.count("data-dir")) opts.data_dir = vm["data-dir"].as<std::string>();
  node::NodeServer server(opts);
  Status s = server.Start();
  if (!s.ok()) {
    Log("node")->error("cannot start: {}", s.ToString());
    return 1;
  }
  static std::atomic<node::NodeServer*> resumable{&server};
  std::thread([cont] {
    int sig = 0;
    while (sigwait(&cont, &sig) == 0) {
      if (node::NodeServer* s = resumable.load()) s->Resumed();
    }
  }).detach();
  int sig = WaitForTerminationSignal();
  Log("node")->info("signal {} received, shutting down", sig);
  // A node stops within 2 s of SIGTERM (power drivers and operators count on it). What it
  // acknowledged is in RocksDB's write-ahead log already, so exiting without a clean close
  // loses nothing; a second signal also ends it at once.
  std::thread([] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    timespec ts{1, 800'000'000};
    int again = sigtimedwait(&s, nullptr, &ts);
    Log("node")->warn("{}; exiting now",
                      again > 0 ? "second signal" : "clean shutdown took over 1.8 s");
    ExitNow();
  }).detach();
  resumable = nullptr;
  server.Stop();
  Log("node")->info("exiting");
  ExitNow();
}
