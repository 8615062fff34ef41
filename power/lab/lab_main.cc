// wattdb-lab: builds and removes the emulated hardware of a cluster whose config says
// [hosts] mode = "emulated" (power/lab/emulated_lab.h). Needs root.
//   wattdb-lab up --config F [--dir D] [--adopt]   bridge, namespaces, host agents, BMCs (hosts
//   off) wattdb-lab down --config F [--dir D]   stops them all and removes the namespaces
#include <filesystem>
#include <iostream>

#include "common/cli.h"
#include "common/config.h"
#include "common/logging.h"
#include "power/lab/emulated_lab.h"

using namespace wattdb;

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  po::options_description desc(
      "wattdb-lab up|down: the emulated hosts of a cluster (network namespaces on a bridge, host "
      "agents,\n"
      "IPMI BMCs) for a config with [hosts] mode = \"emulated\". Needs root.\n\nOptions");
  desc.add_options()("help,h", "show this help")("action", po::value<std::string>(), "up or down")(
      "config", po::value<std::string>()->required(), "cluster config file")(
      "dir", po::value<std::string>(), "lab directory (default: <data_dir>/lab)")(
      "adopt", "up: succeed without change if this lab is up already");
  po::positional_options_description pos;
  pos.add("action", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "wattdb-lab: " << e.what() << "\n" << desc << "\n";
    return 2;
  }
  std::string action = vm.count("action") ? vm["action"].as<std::string>() : "";
  if (action != "up" && action != "down") {
    std::cerr << "wattdb-lab: say up or down\n" << desc << "\n";
    return 2;
  }
  std::string path = std::filesystem::absolute(vm["config"].as<std::string>()).string();
  auto cfg = LoadConfig(path);
  if (!cfg.ok()) {
    std::cerr << "wattdb-lab: " << cfg.status().message() << "\n";
    return 2;
  }
  ConfigureLogging("info", "lab");
  power::LabOptions o;
  o.config_path = path;
  o.dir = std::filesystem::absolute(vm.count("dir") ? vm["dir"].as<std::string>()
                                                    : cfg->data_dir + "/lab")
              .string();
  o.bin_dir = std::filesystem::canonical("/proc/self/exe").parent_path().string();
  power::EmulatedLab lab(*cfg, o);
  if (action == "down") {
    lab.Down();
    std::cout << "emulated hosts removed\n";
    return 0;
  }
  if (vm.count("adopt") && lab.Adopt().ok()) {
    std::cout << "emulated hosts already up; state and logs in " << o.dir << "\n";
    return 0;
  }
  Status s = lab.Up();
  if (!s.ok()) {
    std::cerr << "wattdb-lab: " << s.message() << "\n";
    lab.Down();
    return 1;
  }
  std::cout << "emulated hosts up (all off); state and logs in " << o.dir << "\n";
  return 0;
}
