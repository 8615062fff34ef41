#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/logging.h"
#include "power/power_driver.h"

extern char** environ;

namespace wattdb::power {

std::string NodePidFile(const std::string& node_data_dir) { return node_data_dir + "/node.pid"; }

namespace {

// One-letter process state from /proc/<pid>/stat ('T' = stopped), or 0.
char ProcState(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(f, line);
  size_t p = line.rfind(')');
  return p == std::string::npos || p + 2 >= line.size() ? 0 : line[p + 2];
}

class LocalDriver : public PowerDriver {
 public:
  explicit LocalDriver(DriverContext o) : o_(std::move(o)) {}
  const char* name() const override { return "local"; }
  bool Supports(PowerAction) const override { return true; }

  std::string NodeDir(const NodeConfig& n) const { return fmt::format("{}/n{}", o_.data_dir, n.id); }

  // Pid of the running node process, or 0.
  pid_t RunningPid(const NodeConfig& n) const {
    std::ifstream f(NodePidFile(NodeDir(n)));
    pid_t pid = 0;
    if (!(f >> pid) || pid <= 0) return 0;
    waitpid(pid, nullptr, WNOHANG);  // reap it if it is our exited child
    if (kill(pid, 0) != 0) return 0;
    std::ifstream cmd(fmt::format("/proc/{}/cmdline", pid));
    std::string c((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    return c.find("wattdb-node") != std::string::npos ? pid : 0;
  }

  Result<PowerState> State(const NodeConfig& n) override {
    pid_t pid = RunningPid(n);
    if (!pid) return PowerState::kOff;
    return ProcState(pid) == 'T' ? PowerState::kSuspended : PowerState::kOn;
  }

  Status Suspend(const NodeConfig& n) override {
    pid_t pid = RunningPid(n);
    if (!pid) return Status::InvalidArgument(fmt::format("node {} is off", n.id));
    if (kill(pid, SIGSTOP) != 0) return Status::IOError(fmt::format("cannot stop pid {}: {}", pid, strerror(errno)));
    // kill() only queues the signal: suspended means every thread has stopped.
    for (int i = 0; i < 500 && ProcState(pid) != 'T'; i++) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (ProcState(pid) != 'T') return Status::TimedOut(fmt::format("node {} (pid {}) did not stop within 1 s", n.id, pid));
    Log("power")->info("suspend node={} driver=local pid={}", n.id, pid);
    return Status::OK();
  }

  Status PowerOn(const NodeConfig& n) override {
    if (pid_t pid = RunningPid(n)) {
      if (ProcState(pid) == 'T') {
        kill(pid, SIGCONT);
        Log("power")->info("resume node={} driver=local pid={}", n.id, pid);
      }
      return Status::OK();
    }
    std::error_code ec;
    std::filesystem::create_directories(NodeDir(n), ec);
    std::string log = fmt::format("{}/n{}.log", o_.data_dir, n.id);
    std::string id = std::to_string(n.id);
    std::vector<std::string> args = {o_.node_binary, "--id", id};
    if (!o_.config_path.empty()) {
      args.push_back("--config");
      args.push_back(o_.config_path);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    // The node inherits nothing else: above all not the master's listening sockets, which
    // would keep a restarted master from binding its ports.
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    // Own session: a Ctrl-C meant for the master does not reach the nodes; the master
    // powers them off itself. Default signal mask and dispositions for the child.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, o_.node_binary.c_str(), &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      return Status::IOError(fmt::format("cannot start {}: {}", o_.node_binary, strerror(rc)));
    }
    Log("power")->info("power on node={} driver=local pid={} log={}", n.id, pid, log);
    return Status::OK();
  }

  Status PowerOff(const NodeConfig& n) override {
    pid_t pid = RunningPid(n);
    if (!pid) return Status::OK();
    Log("power")->info("power off node={} driver=local pid={}", n.id, pid);
    kill(pid, SIGCONT);  // a frozen process cannot act on SIGTERM
    kill(pid, SIGTERM);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o_.stop_timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      waitpid(pid, nullptr, WNOHANG);
      if (kill(pid, 0) != 0) return Status::OK();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    Log("power")->warn("node did not stop in time, killing node={} pid={}", n.id, pid);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return Status::OK();
  }

 private:
  DriverContext o_;
};

}  // namespace

std::unique_ptr<PowerDriver> MakeLocalDriver(const DriverContext& ctx) { return std::make_unique<LocalDriver>(ctx); }

}  // namespace wattdb::power
