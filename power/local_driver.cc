#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/logging.h"
#include "common/subprocess.h"
#include "power/power_driver.h"

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

  std::string NodeDir(const NodeConfig& n) const {
    return fmt::format("{}/n{}", o_.data_dir, n.id);
  }

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
    if (kill(pid, SIGSTOP) != 0)
      return Status::IOError(fmt::format("cannot stop pid {}: {}", pid, strerror(errno)));
    // kill() only queues the signal: suspended means every thread has stopped.
    for (int i = 0; i < 500 && ProcState(pid) != 'T'; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (ProcState(pid) != 'T')
      return Status::TimedOut(fmt::format("node {} (pid {}) did not stop within 1 s", n.id, pid));
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
    // Own session: a Ctrl-C meant for the master does not reach the nodes; the master
    // powers them off itself.
    SpawnOptions so;
    so.output_file = log;
    so.new_session = true;
    auto spawned = Spawn(NodeCommandLine(o_.node_binary, n.id, o_.config_path), so);
    if (!spawned.ok())
      return Status::IOError(
          fmt::format("cannot start {}: {}", o_.node_binary, spawned.status().message()));
    pid_t pid = *spawned;
    Log("power")->info("power on node={} driver=local pid={} log={}", n.id, pid, log);
    return Status::OK();
  }

  Status PowerOff(const NodeConfig& n) override {
    pid_t pid = RunningPid(n);
    if (!pid) return Status::OK();
    Log("power")->info("power off node={} driver=local pid={}", n.id, pid);
    kill(pid, SIGCONT);  // a frozen process cannot act on SIGTERM
    kill(pid, SIGTERM);
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(o_.stop_timeout_ms);
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

std::unique_ptr<PowerDriver> MakeLocalDriver(const DriverContext& ctx) {
  return std::make_unique<LocalDriver>(ctx);
}

}  // namespace wattdb::power
