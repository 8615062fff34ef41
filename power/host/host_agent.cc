#include "power/host/host_agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/logging.h"
#include "power/power_driver.h"

namespace wattdb::power {

namespace asio = net::asio;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// CPU time of one process (all threads), nanoseconds; 0 if unreadable.
uint64_t ProcCpuNanos(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string line;
  std::getline(f, line);
  size_t p = line.rfind(')');
  if (p == std::string::npos) return 0;
  std::istringstream in(line.substr(p + 2));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; i++) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return (utime + stime) * (1000000000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK)));
}

}  // namespace

const char* HostAgent::StateName(State s) {
  switch (s) {
    case State::kOff:
      return "off";
    case State::kBooting:
      return "booting";
    case State::kOn:
      return "on";
    case State::kSuspended:
      return "suspended";
    case State::kResuming:
      return "resuming";
  }
  return "?";
}

HostAgent::HostAgent(HostAgentOptions opts, asio::io_context& io)
    : o_(std::move(opts)),
      node_(o_.config.FindNode(o_.id)),
      io_(io),
      control_(io),
      wol_(io),
      tick_(io),
      delay_(io),
      kill_timer_(io) {}

HostAgent::~HostAgent() { Shutdown(); }

Status HostAgent::Start() {
  if (!node_) return Status::InvalidArgument(fmt::format("node {} is not in the config", o_.id));
  profile_ = o_.config.Profile(*node_);
  if (node_->wol.mac.empty())
    return Status::InvalidArgument(fmt::format("node {} has no wol.mac", o_.id));
  ASSIGN_OR_RETURN(mac_, ParseMac(node_->wol.mac));
  std::error_code fec;
  std::filesystem::create_directories(o_.dir, fec);
  if (fec) return Status::IOError(fmt::format("cannot create {}: {}", o_.dir, fec.message()));
  if (!o_.cgroup.empty()) {
    auto cg = HostCgroup::Create(o_.cgroup, profile_.cpus, profile_.cpu_period_ms);
    if (!cg.ok()) return Status::IOError(fmt::format("host cgroup: {}", cg.status().message()));
    cgroup_ = std::move(*cg);
    Log("host")->info("node {}: {}", o_.id, cgroup_.description());
  }
  boost::system::error_code ec;
  std::string sock = o_.dir + "/agent.sock";
  ::unlink(sock.c_str());
  control_.open(asio::local::stream_protocol(), ec);
  if (!ec) control_.bind(asio::local::stream_protocol::endpoint(sock), ec);
  if (!ec) control_.listen(16, ec);
  if (ec) return Status::IOError(fmt::format("control socket {}: {}", sock, ec.message()));
  ::chmod(sock.c_str(), 0600);
  wol_.open(asio::ip::udp::v4(), ec);
  if (!ec) wol_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) wol_.bind(asio::ip::udp::endpoint(asio::ip::address_v4::any(), node_->wol.port), ec);
  if (ec)
    return Status::IOError(fmt::format("Wake-on-LAN port {}: {}", node_->wol.port, ec.message()));
  fcntl(wol_.native_handle(), F_SETFD, FD_CLOEXEC);
  fcntl(control_.native_handle(), F_SETFD, FD_CLOEXEC);
  AcceptControl();
  ReceiveWol();
  Log("host")->info("host agent for node {} ready: mac={} wol port={} control={} state=off", o_.id,
                    node_->wol.mac, node_->wol.port, sock);
  if (o_.start_on) Wake("started on");
  Tick();
  return Status::OK();
}

void HostAgent::Shutdown() {
  if (pid_ > 0) {
    if (cgroup_.valid()) (void)cgroup_.Thaw();
    kill(pid_, SIGCONT);
    kill(pid_, SIGTERM);
    for (int i = 0; i < 200 && waitpid(pid_, nullptr, WNOHANG) == 0; i++) usleep(10000);
    if (waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    pid_ = 0;
  }
  boost::system::error_code ec;
  control_.close(ec);
  wol_.close(ec);
  tick_.cancel();
  delay_.cancel();
  kill_timer_.cancel();
  cgroup_.Remove();
  ::unlink((o_.dir + "/agent.sock").c_str());
  state_ = State::kOff;
}

std::string HostAgent::Command(const std::string& req) {
  if (req == "status") return stopping_ && pid_ > 0 ? "stopping" : StateName(state_);
  if (req == "on") {
    Wake("power on request");
    return "ok";
  }
  if (req == "off" || req == "soft") {
    Stop(req == "soft");
    return "ok";
  }
  if (req == "suspend") {
    std::string err;
    Suspend(&err);
    return err.empty() ? "ok" : "error: " + err;
  }
  return "error: unknown request '" + req + "' (status, on, off, soft, suspend)";
}

void HostAgent::Wake(const std::string& why) {
  if (stopping_) {
    wake_pending_ = true;  // shutting down: power on again once it is off
    Log("host")->info("node {}: wake ({}) while shutting down: will boot once off", o_.id, why);
    return;
  }
  if (state_ == State::kOff) {
    state_ = State::kBooting;
    Log("host")->info("node {}: waking from off ({}); boot takes {} ms", o_.id, why,
                      profile_.boot_ms);
    delay_.expires_after(std::chrono::milliseconds(profile_.boot_ms));
    delay_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || state_ != State::kBooting) return;
      StartNode();
    });
  } else if (state_ == State::kSuspended) {
    state_ = State::kResuming;
    Log("host")->info("node {}: resuming ({}); takes {} ms", o_.id, why, profile_.resume_ms);
    delay_.expires_after(std::chrono::milliseconds(profile_.resume_ms));
    delay_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || state_ != State::kResuming) return;
      if (cgroup_.valid()) {
        Status t = cgroup_.Thaw();
        if (!t.ok()) Log("host")->warn("node {}: thaw failed: {}", o_.id, t.ToString());
      }
      // SIGCONT continues a SIGSTOPped node and, in any case, tells it that it resumed.
      if (pid_ > 0) kill(pid_, SIGCONT);
      state_ = State::kOn;
      Log("host")->info("node {}: on (resumed)", o_.id);
    });
  }
}

void HostAgent::Suspend(std::string* error) {
  if (state_ != State::kOn || pid_ <= 0) {
    *error = fmt::format("cannot suspend a host that is {}", StateName(state_));
    return;
  }
  Status s = cgroup_.valid() ? cgroup_.Freeze() : Status::NotSupported("no cgroup");
  if (!s.ok()) {
    if (cgroup_.valid())
      Log("host")->warn("node {}: freezer failed ({}); stopping the process", o_.id, s.message());
    kill(pid_, SIGSTOP);
  }
  state_ = State::kSuspended;
  Log("host")->info("node {}: suspended", o_.id);
}

void HostAgent::Stop(bool soft) {
  delay_.cancel();
  restart_at_ms_ = 0;
  wake_pending_ = false;
  if (pid_ <= 0) {
    state_ = State::kOff;
    return;
  }
  stopping_ = true;
  if (cgroup_.valid()) (void)cgroup_.Thaw();
  kill(pid_, SIGCONT);
  if (!soft) {
    kill(pid_, SIGKILL);
    Log("host")->info("node {}: power off (hard)", o_.id);
    return;
  }
  kill(pid_, SIGTERM);
  Log("host")->info("node {}: soft off: SIGTERM to the node", o_.id);
  pid_t pid = pid_;
  kill_timer_.expires_after(std::chrono::seconds(5));
  kill_timer_.async_wait([this, pid](const boost::system::error_code& ec) {
    if (!ec && pid_ == pid) kill(pid, SIGKILL);
  });
}

void HostAgent::StartNode() {
  std::string log = fmt::format("{}/n{}.log", o_.config.data_dir, o_.id);
  std::string env = "WATTDB_HOST_AGENT=" + o_.dir + "/agent.sock";
  std::vector<std::string> args = NodeCommandLine(o_.node_binary, o_.id, o_.config_path);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::error_code fec;
  std::filesystem::create_directories(fmt::format("{}/n{}", o_.config.data_dir, o_.id), fec);
  pid_t pid = fork();
  if (pid == 0) {
    cgroup_.JoinFromChild();
    setsid();
    int in = open("/dev/null", O_RDONLY);
    int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0) dup2(in, 0);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    closefrom(3);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    putenv(env.data());
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) {
    Log("host")->error("node {}: fork failed: {}", o_.id, strerror(errno));
    state_ = State::kOff;
    return;
  }
  pid_ = pid;
  stopping_ = false;
  state_ = State::kOn;
  last_cpu_ns_ = 0;
  last_cpu_at_ms_ = 0;
  Log("host")->info("node {}: on (booted) pid={} log={}", o_.id, pid, log);
}

void HostAgent::Tick() {
  if (pid_ > 0) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = 0;
      kill_timer_.cancel();
      if (stopping_ || state_ != State::kOn) {
        state_ = State::kOff;
        Log("host")->info("node {}: off", o_.id);
        stopping_ = false;
        if (wake_pending_) {
          wake_pending_ = false;
          Wake("wake received while shutting down");
        }
      } else {
        Log("host")->warn("node {}: the node process exited (status {}); restarting it in 1 s",
                          o_.id, status);
        restart_at_ms_ = NowMs() + 1000;
      }
      stopping_ = false;
    }
  }
  if (restart_at_ms_ && NowMs() >= restart_at_ms_ && state_ == State::kOn && pid_ == 0) {
    restart_at_ms_ = 0;
    StartNode();
  }
  // CPU utilisation of the host over the last tick, for the watts model.
  if (pid_ > 0 && state_ == State::kOn) {
    uint64_t ns = 0;
    if (cgroup_.valid()) {
      auto r = cgroup_.CpuNanos();
      if (r.ok()) ns = *r;
    } else {
      ns = ProcCpuNanos(pid_);
    }
    int64_t now = NowMs();
    if (last_cpu_at_ms_ && now > last_cpu_at_ms_ && ns >= last_cpu_ns_) {
      util_ = static_cast<double>(ns - last_cpu_ns_) / 1e6 /
              static_cast<double>(now - last_cpu_at_ms_) / profile_.cpus;
    }
    last_cpu_ns_ = ns;
    last_cpu_at_ms_ = now;
  } else {
    util_ = 0;
  }
  {
    std::string tmp = o_.dir + "/watts.tmp";
    std::ofstream f(tmp, std::ios::trunc);
    f << fmt::format("{:.2f}\n", Watts());
    f.close();
    std::error_code rec;
    std::filesystem::rename(tmp, o_.dir + "/watts", rec);
  }
  tick_.expires_after(std::chrono::milliseconds(500));
  tick_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec) Tick();
  });
}

double HostAgent::Watts() {
  switch (state_) {
    case State::kOff:
      return profile_.off_watts;
    case State::kSuspended:
      return profile_.suspended_watts;
    case State::kBooting:
    case State::kResuming:
      return profile_.idle_watts;
    case State::kOn:
      return profile_.idle_watts +
             (profile_.peak_watts - profile_.idle_watts) * std::clamp(util_, 0.0, 1.0);
  }
  return 0;
}

void HostAgent::AcceptControl() {
  control_.async_accept(
      [this](const boost::system::error_code& ec, asio::local::stream_protocol::socket s) {
        if (ec == asio::error::operation_aborted) return;
        if (!ec) {
          auto sock = std::make_shared<asio::local::stream_protocol::socket>(std::move(s));
          auto buf = std::make_shared<std::string>();
          auto timer = std::make_shared<asio::steady_timer>(io_, std::chrono::seconds(2));
          timer->async_wait([sock](const boost::system::error_code& e) {
            if (!e) sock->close();  // a client that sends no request line within 2 s
          });
          asio::async_read_until(
              *sock, asio::dynamic_buffer(*buf, 256), '\n',
              [this, sock, buf, timer](const boost::system::error_code& e, size_t n) {
                timer->cancel();
                if (e) return;
                std::string req = buf->substr(0, n - 1);
                auto reply = std::make_shared<std::string>(Command(req) + "\n");
                asio::async_write(*sock, asio::buffer(*reply),
                                  [sock, reply](const boost::system::error_code&, size_t) {});
              });
        }
        AcceptControl();
      });
}

void HostAgent::ReceiveWol() {
  wol_buf_.resize(1500);
  wol_.async_receive_from(asio::buffer(wol_buf_), wol_from_,
                          [this](const boost::system::error_code& ec, size_t n) {
                            if (ec == asio::error::operation_aborted) return;
                            if (!ec && IsMagicPacketFor(wol_buf_.substr(0, n), mac_)) {
                              Log("host")->info("node {}: magic packet from {}", o_.id,
                                                wol_from_.address().to_string());
                              Wake("Wake-on-LAN");
                            }
                            ReceiveWol();
                          });
}

}  // namespace wattdb::power
