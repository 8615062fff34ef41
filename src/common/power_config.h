// Power configuration: host profiles (watts and transition latencies), how each node is
// switched (power driver) and metered (meter), the always-on infrastructure, and emulated
// hosts. Parsed from the cluster config (config_power.cc); defaults describe the Atom D510
// nodes of the WattDB paper.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wattdb {

// A class of host: its power draw per state and how long its transitions take.
struct HostProfile {
  std::string name = "atom";
  double cpus = 1.0;  // CPU capacity; an emulated host's cgroup quota (in CPUs)
  // An emulated host's cap holds over every such period: cpus × period of CPU time in each
  // (a long period lets a burst shorter than it run on more cores than the host has).
  int cpu_period_ms = 10;
  double idle_watts = 22.0;      // on, CPU idle
  double peak_watts = 26.0;      // on, CPU saturated (linear in between)
  double suspended_watts = 2.5;  // S3, suspend-to-RAM
  double off_watts = 0.5;        // S5, soft off (BMC and NIC on auxiliary power)
  int resume_ms = 2000;  // S3 -> serving, firmware and OS part (emulated hosts wait this long)
  int boot_ms = 20000;   // S5 -> process start, firmware and OS part
};

// IPMI (the `ipmi` driver and the `ipmi-dcmi` meter): the node's BMC, reached with ipmitool.
struct IpmiConfig {
  std::string host;  // "" = the node's host
  uint16_t port = 623;
  std::string user = "admin";
  std::string password;
  std::string ipmitool = "ipmitool";
  int timeout_ms = 5000;  // per ipmitool call
  int retries = 2;        // more attempts after a failed call, with doubling backoff
};

// Wake-on-LAN (the `wol` driver): where the magic packet goes.
struct WolConfig {
  std::string mac;  // "" = emulated hosts derive one from the node id
  std::string broadcast = "255.255.255.255";
  uint16_t port = 9;
  std::string interface;  // bind the sending socket to this interface ("" = any)
};

// How a component's power is measured.
struct MeterConfig {
  std::string type = "model";  // model | ipmi-dcmi | rapl | external | none
  // rapl: the powercap zone directory (holding energy_uj and max_energy_range_uj);
  // external: "tcp://host:port" or a file path; one sample per line: "<unix seconds> <watts>".
  std::string source;
  int stale_ms = 5000;  // a meter silent this long is flagged and its gap not integrated
};

// Always-on infrastructure metered on its own (the master's host, the network switch).
struct InfraConfig {
  std::string name;
  MeterConfig meter;
  double idle_watts = 0;  // model meter: constant, or linear in CPU up to peak_watts
  double peak_watts = 0;  // 0 = constant idle_watts
};

// Emulated hosts: each node in its own network namespace on a bridge, CPU capped by a cgroup,
// with a host agent playing its NIC and firmware (power/host_agent).
struct HostsConfig {
  std::string mode = "loopback";    // loopback | emulated
  std::string subnet = "10.213.0";  // /24 prefix: master .1, node n at .(10+n)
  std::string bridge = "wdb-br0";   // bridge in the root namespace (the master's side)
};

}  // namespace wattdb
