#include "node/node.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "common/logging.h"
#include "node/node_server.h"

namespace wattdb::node {

namespace {

// The server a SIGCONT resumes; null once it stops.
std::atomic<NodeServer*> resumable{nullptr};

// Takes SIGCONT (blocked in every thread) and tells the server its host resumed.
void WatchResumes() {
  sigset_t cont;
  sigemptyset(&cont);
  sigaddset(&cont, SIGCONT);
  int sig = 0;
  while (sigwait(&cont, &sig) == 0) {
    if (NodeServer* s = resumable.load()) s->Resumed();
  }
}

// Ends the process if a second termination signal comes or the clean stop takes over 1.8 s.
void ArmShutdownWatchdog() {
  std::thread([] {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    timespec ts{1, 800'000'000};
    int again = sigtimedwait(&s, nullptr, &ts);
    Log("node")->warn("{}; exiting now",
                      again > 0 ? "second signal" : "clean shutdown took over 1.8 s");
    Node::Exit(0);
  }).detach();
}

}  // namespace

Node::Node(const ClusterConfig& config, NodeProcessOptions opts)
    : config_(config), opts_(std::move(opts)) {}

Node::~Node() { Shutdown(); }

Status Node::Init() {
  const NodeConfig* self = config_.FindNode(opts_.id);
  if (!self)
    return Status::InvalidArgument(fmt::format("node id {} is not in the config", opts_.id));
  if (self->InMaster()) {
    return Status::InvalidArgument(
        fmt::format("node {} lives in the master process (power = \"master\")", opts_.id));
  }
  server_opts_ = std::make_unique<NodeOptions>(NodeOptionsFromConfig(config_, *self));
  if (!opts_.data_dir.empty()) server_opts_->data_dir = opts_.data_dir;
  return Status::OK();
}

Status Node::Start() {
  // SIGCONT is taken by a thread of its own; blocked here so that every thread inherits it.
  sigset_t cont;
  sigemptyset(&cont);
  sigaddset(&cont, SIGCONT);
  pthread_sigmask(SIG_BLOCK, &cont, nullptr);
  // Built here, not in Init: its threads must inherit the blocked signals.
  server_ = std::make_unique<NodeServer>(*server_opts_);
  RETURN_NOT_OK(server_->Start());
  started_ = true;
  resumable = server_.get();
  std::thread(WatchResumes).detach();
  return Status::OK();
}

void Node::Shutdown() {
  if (!started_) return;
  started_ = false;
  ArmShutdownWatchdog();
  resumable = nullptr;
  server_->Stop();
}

void Node::Exit(int code) {
  static std::mutex mu;
  mu.lock();
  spdlog::shutdown();
  _exit(code);
}

}  // namespace wattdb::node
