// wattdb-host: the agent of one emulated host (power/host/host_agent.h), and its two clients:
//   wattdb-host --config F --id N --dir D [--cgroup NAME] [--on]   run the agent
//   wattdb-host ctl --dir D status|on|off|soft|suspend             one control request
//   wattdb-host chassis --dir D get power | set power 0|1 | set shutdown 1
//       ipmi_sim's chassis_control hook (prints power:0|1 for get)
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "common/process.h"
#include "power/host/agent_client.h"
#include "power/host/host_agent.h"

using namespace wattdb;
namespace asio = net::asio;

namespace {

int Client(const std::string& mode, int argc, char** argv) {
  std::string dir;
  std::vector<std::string> rest;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else {
      rest.push_back(a);
    }
  }
  if (dir.empty() || rest.empty()) {
    std::cerr << "usage: wattdb-host " << mode << " --dir DIR REQUEST...\n";
    return 2;
  }
  std::string req = rest[0];
  if (mode == "chassis") {
    // ipmi_sim: "<host name> get power" / "<host name> set power 1" / "set shutdown 1"
    if (!rest.empty() && rest[0] != "get" && rest[0] != "set") rest.erase(rest.begin());
    if (rest.size() >= 2 && rest[0] == "get") {
      auto st = power::HostAgentRequest(dir + "/agent.sock", "status");
      for (size_t i = 1; i < rest.size(); i++) {
        if (rest[i] == "power") {
          std::cout << "power:" << (st.ok() && *st != "off" ? 1 : 0) << "\n";
        } else if (rest[i] == "boot") {
          std::cout << "boot:default\n";
        } else {
          std::cout << "Invalid parameter: " << rest[i] << "\n";
          return 1;
        }
      }
      return 0;
    }
    if (rest.size() >= 3 && rest[0] == "set") {
      for (size_t i = 1; i + 1 < rest.size(); i += 2) {
        const std::string& p = rest[i];
        const std::string& v = rest[i + 1];
        std::string r;
        if (p == "power")
          r = v == "1" ? "on" : "off";
        else if (p == "shutdown" || p == "graceful_shutdown")
          r = v == "1" ? "soft" : "";
        if (r.empty()) continue;  // reset, boot, identify: nothing to emulate
        auto res = power::HostAgentRequest(dir + "/agent.sock", r);
        if (!res.ok() || *res != "ok") {
          std::cout << (res.ok() ? *res : res.status().message()) << "\n";
          return 1;
        }
      }
      return 0;
    }
    std::cout << "Unknown operation\n";
    return 1;
  }
  auto res = power::HostAgentRequest(dir + "/agent.sock", req);
  if (!res.ok()) {
    std::cerr << "wattdb-host: " << res.status().message() << "\n";
    return 1;
  }
  std::cout << *res << "\n";
  return res->rfind("error", 0) == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "ctl" || std::string(argv[1]) == "chassis")) {
    return Client(argv[1], argc, argv);
  }
  namespace po = boost::program_options;
  po::options_description desc(
      "wattdb-host: the agent of one emulated host (its firmware, NIC and power states).\n"
      "Also: wattdb-host ctl --dir DIR status|on|off|soft|suspend\n"
      "      wattdb-host chassis --dir DIR get power | set power 0|1   (ipmi_sim "
      "chassis_control)\n\n"
      "Options");
  desc.add_options()("help,h", "show this help")("config", po::value<std::string>(),
                                                 "cluster config file")(
      "id", po::value<uint32_t>()->required(), "node id of this host")(
      "dir", po::value<std::string>()->required(), "host directory (control socket, watts file)")(
      "node-binary", po::value<std::string>(),
      "wattdb-node executable (default: beside wattdb-host)")(
      "cgroup", po::value<std::string>()->default_value(""),
      "cgroup name for the CPU cap and freezer (\"\" = none)")(
      "netns", po::value<std::string>(), "network namespace to join first (/run/netns/NAME)")(
      "on", "power the host on at start")(
      "log-level", po::value<std::string>()->default_value("info"), "log level");
  po::variables_map vm;
  if (auto rc = ParseCommandLine("wattdb-host", argc, argv, desc, &vm)) return *rc;
  if (vm.count("netns")) {
    // Joined here rather than through `ip netns exec`, which remounts /sys and so hides the
    // cgroup hierarchies the host's CPU cap and freezer live in.
    std::string path = "/run/netns/" + vm["netns"].as<std::string>();
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      std::cerr << "wattdb-host: cannot join network namespace " << path << ": " << strerror(errno)
                << "\n";
      return 1;
    }
    close(fd);
  }
  std::string config_path = vm.count("config") ? vm["config"].as<std::string>() : "";
  auto cfg = LoadConfig(config_path);
  if (!cfg.ok()) {
    std::cerr << "wattdb-host: " << cfg.status().message() << "\n";
    return 2;
  }
  uint32_t id = vm["id"].as<uint32_t>();
  if (!ConfigureLogging(vm["log-level"].as<std::string>(), fmt::format("h{}", id))) {
    std::cerr << "wattdb-host: unknown log level\n";
    return 2;
  }
  power::HostAgentOptions o;
  o.config = *cfg;
  o.config_path = config_path.empty() ? "" : std::filesystem::absolute(config_path).string();
  o.id = id;
  o.dir = vm["dir"].as<std::string>();
  o.cgroup = vm["cgroup"].as<std::string>();
  o.start_on = vm.count("on") > 0;
  o.node_binary =
      vm.count("node-binary")
          ? vm["node-binary"].as<std::string>()
          : (std::filesystem::canonical("/proc/self/exe").parent_path() / "wattdb-node").string();
  signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  power::HostAgent agent(o, io);
  Status s = agent.Start();
  if (!s.ok()) {
    Log("host")->error("cannot start: {}", s.ToString());
    return 1;
  }
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code&, int sig) {
    Log("host")->info("signal {}: shutting down the host", sig);
    agent.Shutdown();
    io.stop();
  });
  io.run();
  return 0;
}
