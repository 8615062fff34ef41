// HostAgent: the firmware, NIC and OS power hooks of one emulated host. It owns the host's
// node process and plays the ACPI states around it:
//   off --wake--> booting (boot_ms) --> on      (the node process is started)
//   on --suspend--> suspended                   (the host's cgroup frozen: memory kept)
//   suspended --wake--> resuming (resume_ms) --> on   (thawed; SIGCONT tells the node)
//   on --off--> off (SIGKILL) ; on --soft--> off (SIGTERM, SIGKILL after 5 s)
// Wake sources: a Wake-on-LAN magic packet for the host's MAC on its UDP port, or "on" on the
// control socket (ipmi_sim's chassis control runs `wattdb-host chassis`, which sends it).
// The control socket (<dir>/agent.sock, one request line, one reply line) also serves the
// node's own OS requests (suspend, soft off). A node that dies while on is restarted after
// 1 s, as an init system would. Every 500 ms the agent writes the host's modelled watts to
// <dir>/watts (read by the BMC's DCMI plugin). Single-threaded on its io_context.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/config.h"
#include "common/status.h"
#include "net/stream.h"
#include "power/host/cgroup.h"
#include "power/magic_packet.h"

namespace wattdb::power {

struct HostAgentOptions {
  ClusterConfig config;
  std::string config_path;  // passed to the node
  NodeId id = 0;
  std::string dir;  // the host's directory: agent.sock, watts, agent.pid
  std::string node_binary;
  std::string cgroup;  // cgroup name ("" = no CPU cap and no freezer: SIGSTOP/SIGCONT)
  bool start_on = false;
};

class HostAgent {
 public:
  HostAgent(HostAgentOptions opts, net::asio::io_context& io);
  ~HostAgent();

  Status Start();
  // Stops the node (SIGTERM, then SIGKILL after 2 s), removes the cgroup and the socket.
  void Shutdown();
  // Runs one control request ("status", "on", "off", "soft", "suspend"); returns the reply.
  std::string Command(const std::string& request);

 private:
  enum class State { kOff, kBooting, kOn, kSuspended, kResuming };
  static const char* StateName(State s);

  void Wake(const std::string& why);
  void Suspend(std::string* error);
  void Stop(bool soft);
  void StartNode();
  void Tick();  // reaps the node, restarts it, writes watts
  void AcceptControl();
  void ReceiveWol();
  double Watts();

  HostAgentOptions o_;
  const NodeConfig* node_;
  HostProfile profile_;
  Mac mac_{};
  net::asio::io_context& io_;
  net::asio::local::stream_protocol::acceptor control_;
  net::asio::ip::udp::socket wol_;
  net::asio::steady_timer tick_, delay_, kill_timer_;
  std::string wol_buf_;
  net::asio::ip::udp::endpoint wol_from_;
  HostCgroup cgroup_;
  State state_ = State::kOff;
  pid_t pid_ = 0;
  bool stopping_ = false;      // a soft or hard off is under way: the exit is expected
  bool wake_pending_ = false;  // a wake came while stopping: boot once off
  int64_t restart_at_ms_ = 0;  // a crashed node restarts at this time (0 = none pending)
  uint64_t last_cpu_ns_ = 0;
  int64_t last_cpu_at_ms_ = 0;
  double util_ = 0;
};

}  // namespace wattdb::power
