// Node: the parts of a wattdb-node process and their lifecycle, as Master is for the master.
// Init() checks that the config names this node as a process of its own; Start() serves its
// segments and registers with the master, and takes SIGCONT (a host resumed from suspend) on a
// thread of its own; Shutdown() stops the server.
//
// A node stops within 2 s of being asked (power drivers and operators count on it): what it
// acknowledged is in RocksDB's write-ahead log already, so Shutdown arms a watchdog that ends
// the process, logs flushed, if the clean stop takes over 1.8 s or a second SIGINT/SIGTERM
// comes. Not thread-safe: one thread (main) drives it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/config.h"
#include "common/status.h"

namespace wattdb::node {

class NodeServer;
struct NodeOptions;

struct NodeProcessOptions {
  NodeId id = 0;
  std::string data_dir;  // "" = <data_dir>/n<id> of the config
};

class Node {
 public:
  // `config` must outlive the node.
  Node(const ClusterConfig& config, NodeProcessOptions opts);
  ~Node();

  // InvalidArgument if the id is not in the config or the node lives in the master process.
  // REQUIRES: called once, before Start.
  Status Init();
  // Starts the server. REQUIRES: Init() succeeded; the calling thread blocks SIGCONT and the
  // termination signals (BlockTerminationSignals), so that the threads started here inherit
  // the mask and the signals come to the threads that wait for them.
  Status Start();
  // Stops the server (idempotent), with the watchdog armed.
  void Shutdown();

  // Ends the process with its logs flushed, once, from whichever thread comes first (the
  // main thread after a clean stop, or the watchdog); the other waits until the process is
  // gone. Returning from main instead would run static destructors, spdlog's among them, while
  // the watchdog may be flushing the logs.
  [[noreturn]] static void Exit(int code);

 private:
  const ClusterConfig& config_;  // borrowed
  NodeProcessOptions opts_;
  std::unique_ptr<NodeOptions> server_opts_;  // from Init
  std::unique_ptr<NodeServer> server_;        // from Start
  bool started_ = false;
};

}  // namespace wattdb::node
