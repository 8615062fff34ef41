#include <gtest/gtest.h>

#include "common/config.h"

namespace wattdb {
namespace {

// The error must name the file, the line and the key.
void ExpectError(const std::string& toml, const std::string& line, const std::string& key) {
  auto c = ParseConfig(toml, "cluster.toml");
  ASSERT_FALSE(c.ok()) << toml;
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("cluster.toml:" + line), std::string::npos) << m;
  EXPECT_NE(m.find(key), std::string::npos) << m;
}

TEST(PowerConfig, DefaultsDescribeAtomNodesAndMeterEveryPart) {
  auto c = LoadConfig("");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->profiles.size(), 1u);
  const HostProfile& atom = c->Profile(c->nodes[0]);
  EXPECT_EQ(atom.name, "atom");
  EXPECT_GE(atom.idle_watts, 20);
  EXPECT_LE(atom.peak_watts, 30);
  EXPECT_DOUBLE_EQ(atom.suspended_watts, 2.5);
  ASSERT_EQ(c->infrastructure.size(), 2u);
  EXPECT_EQ(c->infrastructure[0].name, "master");
  EXPECT_EQ(c->infrastructure[1].name, "switch");
  EXPECT_DOUBLE_EQ(c->infrastructure[1].idle_watts, 20);
  // Node 1 is the master node (its watts are the master's); the others are metered by model.
  for (const auto& n : c->nodes) {
    EXPECT_EQ(n.power, n.id == 1 ? "master" : "local");
    EXPECT_EQ(n.meter.type, n.id == 1 ? "none" : "model");
  }
  EXPECT_EQ(c->hosts.mode, "loopback");
}

TEST(PowerConfig, ProfilesDriversAndMetersParse) {
  auto c = ParseConfig(R"(
[power]
meter_interval_ms = 250
metrics_port = 9187
[profile.xeon]
cpus = 8
cpu_period_ms = 50
idle_watts = 90
peak_watts = 220.5
suspended_watts = 6
resume_ms = 4000
boot_ms = 60000
[[infrastructure]]
name = "switch"
idle_watts = 35
[[node]]
id = 1
port = 7101
power = "ipmi"
profile = "xeon"
meter = "ipmi-dcmi"
ipmi = { host = "10.0.0.5", port = 6230, user = "root", password = "pw", retries = 4 }
[[node]]
id = 2
port = 7102
power = "wol"
meter = { type = "external", source = "tcp://127.0.0.1:7700" }
wol = { mac = "52:54:00:aa:bb:cc", broadcast = "127.255.255.255", port = 40009 }
)",
                       "cluster.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->meter_interval_ms, 250);
  EXPECT_EQ(c->metrics_port, 9187);
  ASSERT_EQ(c->profiles.size(), 2u);
  const HostProfile& x = c->Profile(c->nodes[0]);
  EXPECT_EQ(x.name, "xeon");
  EXPECT_DOUBLE_EQ(x.cpus, 8);
  EXPECT_DOUBLE_EQ(x.peak_watts, 220.5);
  EXPECT_EQ(x.boot_ms, 60000);
  EXPECT_EQ(x.cpu_period_ms, 50);
  EXPECT_EQ(c->Profile(c->nodes[1]).cpu_period_ms, 10) << "the default";
  EXPECT_EQ(c->Profile(c->nodes[1]).name, "atom");
  EXPECT_EQ(c->nodes[0].ipmi.host, "10.0.0.5");
  EXPECT_EQ(c->nodes[0].ipmi.port, 6230);
  EXPECT_EQ(c->nodes[0].ipmi.retries, 4);
  EXPECT_EQ(c->nodes[1].ipmi.host, "127.0.0.1") << "a BMC defaults to the node's host";
  EXPECT_EQ(c->nodes[1].meter.type, "external");
  EXPECT_EQ(c->nodes[1].meter.source, "tcp://127.0.0.1:7700");
  EXPECT_EQ(c->nodes[1].wol.port, 40009);
  ASSERT_EQ(c->infrastructure.size(), 1u);
  EXPECT_DOUBLE_EQ(c->infrastructure[0].idle_watts, 35);
}

TEST(PowerConfig, EmulatedHostsDeriveAddressesAndMacs) {
  auto c = ParseConfig(
      "[hosts]\nmode = \"emulated\"\nsubnet = \"10.99.1\"\n"
      "[[node]]\nid = 3\nport = 7103\npower = \"wol\"\n",
      "cluster.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes[0].host, "10.99.1.13");
  EXPECT_EQ(c->nodes[0].wol.mac, "52:54:00:57:00:03");
  EXPECT_EQ(c->nodes[0].wol.broadcast, "10.99.1.255");
  EXPECT_EQ(c->nodes[0].ipmi.host, "10.99.1.13");
}

TEST(PowerConfig, BadPowerConfigNamesFileLineAndKey) {
  const std::string node = "[[node]]\nid = 1\nport = 7101\n";
  ExpectError(node + "power = \"ipmi\"\nwattage = 3\n", "5", "wattage");
  ExpectError(node + "power = \"steam\"\n", "1", "power");
  ExpectError(node + "meter = \"geiger\"\n", "4", "meter");
  ExpectError(node + "meter = { type = \"external\" }\n", "4", "source");
  ExpectError(node + "profile = \"cray\"\n", "1", "profile");
  ExpectError(node + "wol = { mac = \"52:54:00\" }\n", "4", "mac");
  ExpectError(node + "ipmi = { port = 70000 }\n", "4", "port");
  ExpectError(node + "ipmi = { timeout = 5 }\n", "4", "timeout");
  ExpectError("[profile.atom]\nidle_watts = \"lots\"\n" + node, "2", "idle_watts");
  ExpectError("[profile.atom]\nidle_watts = 30\npeak_watts = 20\n" + node, "3", "peak_watts");
  ExpectError("[profile.atom]\nboot_ms = -1\n" + node, "2", "boot_ms");
  ExpectError("[profile.atom]\ncpu_period_ms = 0\n" + node, "2", "cpu_period_ms");
  ExpectError("[profile.atom]\nsleep_watts = 1\n" + node, "2", "sleep_watts");
  ExpectError("[power]\nmeter_interval_ms = 0\n" + node, "2", "meter_interval_ms");
  ExpectError("[[infrastructure]]\nname = \"ups\"\nmeter = \"ipmi-dcmi\"\n" + node, "3", "meter");
  ExpectError("[hosts]\nmode = \"virtual\"\n" + node, "2", "mode");
  ExpectError("[hosts]\nmode = \"emulated\"\n" + node + "power = \"local\"\n", "3", "power");
  ExpectError("[hosts]\nmode = \"emulated\"\n" + node + "power = \"master\"\n", "3",
              "master process");
}

TEST(PowerConfig, OneNodeMayLiveInTheMaster) {
  auto c = ParseConfig(
      "[[node]]\nid = 1\nport = 7101\npower = \"master\"\n[[node]]\nid = 2\nport = 7102\n",
      "cluster.toml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->nodes[0].power, "master");
  EXPECT_EQ(c->nodes[1].power, "local");
  ExpectError(
      "[[node]]\nid = 1\nport = 7101\npower = \"master\"\n[[node]]\nid = 2\nport = 7102\npower = "
      "\"master\"\n",
      "5", "node 1 already lives in the master");
}

}  // namespace
}  // namespace wattdb
