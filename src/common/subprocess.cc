#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

extern char** environ;

namespace wattdb {

namespace {
constexpr size_t kMaxOutput = 1 << 20;

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
}  // namespace

Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& o) {
  if (argv.empty()) return Status::InvalidArgument("no program to run");
  std::vector<std::string> env_store;
  for (char** e = environ; *e; e++) {
    std::string kv = *e;
    if (!o.extra_env.count(kv.substr(0, kv.find('=')))) env_store.push_back(kv);
  }
  for (const auto& [k, v] : o.extra_env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& kv : env_store) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_store = argv;
  for (auto& a : argv_store) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (o.output_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, o.output_fd, 1);
  } else {
    const char* out = o.output_file.empty() ? "/dev/null" : o.output_file.c_str();
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // Nothing else is inherited: above all no listening socket of the parent, which would keep
  // a restarted parent from binding its ports.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (o.new_session)
    flags |= POSIX_SPAWN_SETSID;
  else if (o.new_group)
    flags |= POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc == ENOENT) return Status::NotFound(fmt::format("{}: program not found", argv[0]));
  if (rc != 0) return Status::IOError(fmt::format("cannot run {}: {}", argv[0], strerror(rc)));
  return pid;
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, int timeout_ms,
                                 const std::map<std::string, std::string>& extra_env) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::IOError(fmt::format("pipe: {}", strerror(errno)));
  SpawnOptions o;
  o.output_fd = fds[1];
  o.new_group = true;
  o.extra_env = extra_env;
  auto spawned = Spawn(argv, o);
  close(fds[1]);
  if (!spawned.ok()) {
    close(fds[0]);
    return spawned.status();
  }
  pid_t pid = *spawned;
  ProcessResult out;
  bool timed_out = false;
  char buf[4096];
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    ssize_t got = read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // every writer closed: the program (and its children) are done with it
    if (out.output.size() < kMaxOutput) out.output.append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  int status = 0;
  while (!timed_out) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      out.exit_code = ExitCode(status);
      return out;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(-pid, SIGKILL);  // its own process group: helpers it started go too
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return Status::TimedOut(fmt::format("{} did not finish within {} ms", argv[0], timeout_ms));
}

}  // namespace wattdb
