#include "power/lab/emulated_lab.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "common/subprocess.h"
#include "power/bmc/bmc.h"
#include "power/host/agent_client.h"
#include "power/ipmitool.h"

namespace wattdb::power {

namespace {

// Third octet of the subnet: short, unique interface names per lab.
std::string Octet(const std::string& subnet) { return subnet.substr(subnet.rfind('.') + 1); }

// Reaps `pid` if it is our exited child (the lab may run inside a long-lived process).
bool Alive(pid_t pid) {
  if (pid <= 0) return false;
  waitpid(pid, nullptr, WNOHANG);
  return kill(pid, 0) == 0;
}

}  // namespace

std::string EmulatedLab::NamespaceOf(NodeId id) const {
  return fmt::format("{}-h{}", config_.hosts.bridge, id);
}

std::string EmulatedLab::VethOf(NodeId id) const {
  return fmt::format("wv{}h{}", Octet(config_.hosts.subnet), id);
}

std::string EmulatedLab::HostDir(NodeId id) const { return fmt::format("{}/h{}", o_.dir, id); }

Status EmulatedLab::Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, 10000));
  if (r.exit_code != 0) {
    return Status::IOError(
        fmt::format("ip {}: {}", fmt::join(args, " "), r.output.substr(0, r.output.find('\n'))));
  }
  return Status::OK();
}

Status EmulatedLab::Up() {
  if (config_.hosts.mode != "emulated")
    return Status::InvalidArgument("the config's [hosts] mode is not \"emulated\"");
  if (geteuid() != 0) {
    return Status::Sql(sqlstate::kInsufficientPrivilege,
                       "emulated hosts need root (network namespaces, cgroups, ports 9 and 623)");
  }
  std::error_code ec;
  std::filesystem::create_directories(o_.dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", o_.dir, ec.message()));
  const std::string& br = config_.hosts.bridge;
  Status s = Ip({"link", "add", br, "type", "bridge"});
  if (!s.ok()) {
    return Status::IOError(fmt::format(
        "{} (is a lab on bridge {} up already? wattdb-lab down first)", s.message(), br));
  }
  RETURN_NOT_OK(Ip({"addr", "add", config_.hosts.subnet + ".1/24", "dev", br}));
  RETURN_NOT_OK(Ip({"link", "set", br, "up"}));
  std::ofstream pids(o_.dir + "/lab.pids", std::ios::trunc);
  for (const auto& n : config_.nodes) {
    std::string ns = NamespaceOf(n.id);
    std::string veth = VethOf(n.id);
    RETURN_NOT_OK(Ip({"netns", "add", ns}));
    // The bridge is ours, so a link of this name is a former lab's: a namespace outlives its
    // deletion until the kernel's cleanup has run, and its veth with it.
    (void)Ip({"link", "del", veth});
    RETURN_NOT_OK(Ip({"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns}));
    RETURN_NOT_OK(Ip({"link", "set", veth, "master", br}));
    RETURN_NOT_OK(Ip({"link", "set", veth, "up"}));
    RETURN_NOT_OK(Ip({"-n", ns, "link", "set", "eth0", "address", n.wol.mac}));
    RETURN_NOT_OK(Ip({"-n", ns, "addr", "add", n.host + "/24", "brd", "+", "dev", "eth0"}));
    RETURN_NOT_OK(Ip({"-n", ns, "link", "set", "eth0", "up"}));
    RETURN_NOT_OK(Ip({"-n", ns, "link", "set", "lo", "up"}));
    std::string hd = HostDir(n.id);
    std::filesystem::create_directories(hd, ec);
    SpawnOptions so;
    so.output_file = fmt::format("{}/h{}.log", o_.dir, n.id);
    so.new_session = true;
    ASSIGN_OR_RETURN(pid_t agent,
                     Spawn({o_.bin_dir + "/wattdb-host", "--netns", ns, "--config", o_.config_path,
                            "--id", std::to_string(n.id), "--dir", hd, "--cgroup", ns,
                            "--node-binary", o_.bin_dir + "/wattdb-node"},
                           so));
    pids << "agent " << n.id << " " << agent << "\n";
    {  // every emulated host has a BMC, whatever drives it
      BmcFiles f{fmt::format("{}/bmc{}", o_.dir, n.id), hd, o_.bin_dir + "/wattdb-host",
                 o_.bin_dir + "/wattdb_dcmi.so"};
      if (!std::filesystem::exists(f.dcmi_plugin)) f.dcmi_plugin.clear();
      ASSIGN_OR_RETURN(auto argv, WriteBmcConfig(n, f));
      argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
      so.output_file = fmt::format("{}/bmc{}.log", o_.dir, n.id);
      ASSIGN_OR_RETURN(pid_t bmc, Spawn(argv, so));
      pids << "bmc " << n.id << " " << bmc << "\n";
    }
    pids.flush();
  }
  // Ready: every agent answers, every BMC answers ipmitool.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (const auto& n : config_.nodes) {
    while (true) {
      auto st = HostAgentRequest(HostDir(n.id) + "/agent.sock", "status", 500);
      if (st.ok()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::TimedOut(fmt::format("host agent {} did not start: {} (see {}/h{}.log)",
                                            n.id, st.status().message(), o_.dir, n.id));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    IpmiConfig probe = n.ipmi;
    probe.retries = 0;
    probe.timeout_ms = 2000;
    while (true) {
      auto st = RunIpmitool(probe, {"chassis", "power", "status"});
      if (st.ok()) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::TimedOut(fmt::format("BMC of node {} did not answer: {} (see {}/bmc{}.log)",
                                            n.id, st.status().message(), o_.dir, n.id));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  Log("lab")->info("emulated lab up: bridge {} ({}.1), {} hosts, state in {}", br,
                   config_.hosts.subnet, config_.nodes.size(), o_.dir);
  return Status::OK();
}

Status EmulatedLab::Adopt() {
  for (const auto& n : config_.nodes) {
    auto st = HostAgentRequest(HostDir(n.id) + "/agent.sock", "status", 1000);
    if (!st.ok())
      return Status::NotFound(fmt::format("host agent {}: {}", n.id, st.status().message()));
  }
  Log("lab")->info("emulated lab already up: {} hosts answer, state in {}", config_.nodes.size(),
                   o_.dir);
  return Status::OK();
}

void EmulatedLab::Down() {
  std::vector<pid_t> agents, bmcs;
  std::ifstream in(o_.dir + "/lab.pids");
  std::string kind;
  NodeId id;
  pid_t pid;
  while (in >> kind >> id >> pid) (kind == "agent" ? agents : bmcs).push_back(pid);
  // Agents stop their nodes on SIGTERM; `ip netns exec` passes the signal on by exec'ing.
  for (pid_t p : agents) kill(p, SIGTERM);
  for (pid_t p : bmcs) kill(p, SIGTERM);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t p : agents) {
    while (Alive(p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (Alive(p)) kill(p, SIGKILL);
  }
  for (pid_t p : bmcs) {
    while (Alive(p) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (Alive(p)) kill(p, SIGKILL);
  }
  for (const auto& n : config_.nodes) {
    // Deleting one end of a veth deletes both at once; the namespace's own teardown is
    // asynchronous, and would leave the host's end to a next lab on this subnet for a while.
    (void)Ip({"link", "del", VethOf(n.id)});
    (void)Ip({"netns", "del", NamespaceOf(n.id)});
  }
  (void)Ip({"link", "del", config_.hosts.bridge});
  std::remove((o_.dir + "/lab.pids").c_str());
}

}  // namespace wattdb::power
