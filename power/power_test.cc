#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "net/stream.h"
#include "power/energy_integrator.h"
#include "power/host/cgroup.h"
#include "power/ipmitool.h"
#include "power/meter.h"

namespace wattdb::power {
namespace {

constexpr double kPi = 3.14159265358979323846;

std::string ReadWord(const std::string& path) {
  std::ifstream f(path);
  std::string w;
  std::getline(f, w);
  return w;
}

// "quota period" of a host cgroup, microseconds (cgroup v2's cpu.max, or v1's two files).
std::string CpuCap(const HostCgroup& g) {
  const std::string& d = g.dirs().front();
  if (std::filesystem::exists(d + "/cpu.max")) return ReadWord(d + "/cpu.max");
  return ReadWord(d + "/cpu.cfs_quota_us") + " " + ReadWord(d + "/cpu.cfs_period_us");
}

std::string TempDir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / fmt::format("wattdb-power-{}-{}", name, getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
}

// Polls `pred` for up to 5 s (the meter's follower thread runs on its own).
template <typename F>
bool Eventually(F pred) {
  for (int i = 0; i < 500; i++) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(EnergyIntegrator, JoulesMatchTheIntegralOfAScriptedMeterWithinOnePercent) {
  // 10 minutes of a load that swings between 50 and 150 W every minute and ramps up, read
  // once a second with jitter: the integral is known in closed form.
  auto watts = [](double t) { return 100 + 50 * std::sin(2 * kPi * t / 60) + 0.05 * t; };
  auto exact = [](double t) {
    return 100 * t - 50 * 60 / (2 * kPi) * (std::cos(2 * kPi * t / 60) - 1) + 0.025 * t * t;
  };
  EnergyIntegrator e(5'000'000);
  int64_t t_us = 0;
  uint64_t seed = 42;
  while (t_us <= 600'000'000) {
    e.Add(t_us, watts(t_us / 1e6));
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    t_us += 900'000 + static_cast<int64_t>(seed >> 44) % 200'000;  // 0.9-1.1 s apart
  }
  double covered = e.covered_seconds();
  double want = exact(covered);
  EXPECT_NEAR(e.joules(), want, want * 0.01) << "covered " << covered << " s";
  EXPECT_EQ(e.gaps(), 0u);
  EXPECT_GT(covered, 599);
}

TEST(EnergyIntegrator, GapsAreLeftOutAndCounted) {
  EnergyIntegrator e(2'000'000);
  e.Add(0, 100);
  e.Add(1'000'000, 100);  // 100 J
  e.Fail(2'000'000);
  e.Fail(3'000'000);
  e.Add(4'000'000, 100);   // gap 1..4 s: not integrated
  e.Add(5'000'000, 100);   // 100 J
  e.Add(15'000'000, 100);  // silent 10 s (> max gap): not integrated
  e.Add(16'000'000, 300);  // 200 J
  EXPECT_DOUBLE_EQ(e.joules(), 400);
  EXPECT_EQ(e.gaps(), 2u);
  EXPECT_DOUBLE_EQ(e.gap_seconds(), 13);
  EXPECT_DOUBLE_EQ(e.covered_seconds(), 3);
  EXPECT_DOUBLE_EQ(e.watts(), 300);
}

TEST(EnergyIntegrator, CounterDifferencesBeatTrapezoids) {
  EnergyIntegrator e(5'000'000);
  e.Add(0, 10, 1000.0);
  e.Add(1'000'000, 10, 1042.0);  // the counter saw a burst the watts missed
  EXPECT_DOUBLE_EQ(e.joules(), 42);
}

TEST(Meters, ModelFollowsStateAndCpu) {
  HostProfile p;
  p.idle_watts = 20;
  p.peak_watts = 30;
  p.suspended_watts = 2.5;
  p.off_watts = 0.5;
  auto m = MakeModelMeter(p);
  EXPECT_DOUBLE_EQ(m->Read({PowerState::kOn, 0})->watts, 20);
  EXPECT_DOUBLE_EQ(m->Read({PowerState::kOn, 0.5})->watts, 25);
  EXPECT_DOUBLE_EQ(m->Read({PowerState::kOn, 3})->watts, 30) << "utilisation is capped at 1";
  EXPECT_DOUBLE_EQ(m->Read({PowerState::kSuspended, 0})->watts, 2.5);
  EXPECT_DOUBLE_EQ(m->Read({PowerState::kOff, 0})->watts, 0.5);
  EXPECT_FALSE(m->Read({PowerState::kUnknown, 0}).ok());
  InfraConfig sw{"switch", {}, 20, 0};
  EXPECT_DOUBLE_EQ(MakeInfraModelMeter(sw)->Read({PowerState::kOn, 1})->watts, 20);
}

TEST(Meters, RaplCountsAcrossTheWrap) {
  std::string dir = TempDir("rapl");
  WriteFile(dir + "/max_energy_range_uj", "1000000000\n");  // wraps at 1000 J
  WriteFile(dir + "/energy_uj", "999000000\n");
  auto m = MakeRaplMeter(dir);
  auto r0 = m->Read({});
  ASSERT_TRUE(r0.ok()) << r0.status().ToString();
  ASSERT_TRUE(r0->joules.has_value());
  double j0 = *r0->joules;
  WriteFile(dir + "/energy_uj", "4000000\n");  // +1 J to the wrap, +4 J after it
  auto r1 = m->Read({});
  ASSERT_TRUE(r1.ok());
  EXPECT_NEAR(*r1->joules - j0, 5.0, 1e-6);
  EXPECT_GT(r1->watts, 0);
  WriteFile(dir + "/energy_uj", "garbage\n");
  EXPECT_FALSE(m->Read({}).ok());
  auto missing = MakeRaplMeter(dir + "/nope");
  EXPECT_FALSE(missing->Read({}).ok());
  std::filesystem::remove_all(dir);
}

TEST(Meters, ExternalFileFollowsTheNewestSampleAndFlagsGarbageAndSilence) {
  std::string dir = TempDir("ext");
  std::string path = dir + "/meter.log";
  WriteFile(path, "# lab meter\n1700000000.0 41.5\n");
  MeterConfig c;
  c.type = "external";
  c.source = path;
  c.stale_ms = 400;
  auto m = MakeExternalMeter(c);
  ASSERT_TRUE(Eventually([&] {
    auto r = m->Read({});
    return r.ok() && r->watts == 41.5;
  }));
  {
    std::ofstream f(path, std::ios::app);
    f << "not a sample\n1700000001.0,43.25\n";
  }
  ASSERT_TRUE(Eventually([&] {
    auto r = m->Read({});
    return r.ok() && r->watts == 43.25;
  }));
  // The logger stops: the reading goes stale and says why.
  ASSERT_TRUE(Eventually([&] { return !m->Read({}).ok(); }));
  auto r = m->Read({});
  EXPECT_NE(r.status().message().find("no sample"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("not a sample"), std::string::npos) << r.status().message();
  std::filesystem::remove_all(dir);
}

TEST(Meters, ExternalTcpStream) {
  namespace asio = net::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io,
                                   asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  uint16_t port = acceptor.local_endpoint().port();
  MeterConfig c;
  c.type = "external";
  c.source = fmt::format("tcp://127.0.0.1:{}", port);
  c.stale_ms = 5000;
  auto m = MakeExternalMeter(c);
  asio::ip::tcp::socket peer(io);
  acceptor.accept(peer);  // the meter connects at once
  std::string lines = "1700000000 12.5\n1700000000.5 13";
  asio::write(peer, asio::buffer(lines));
  ASSERT_TRUE(Eventually([&] {
    auto r = m->Read({});
    return r.ok() && r->watts == 12.5;
  }));
  asio::write(peer, asio::buffer(std::string(".75\n")));
  ASSERT_TRUE(Eventually([&] {
    auto r = m->Read({});
    return r.ok() && r->watts == 13.75;
  }));
  auto unreachable = MakeExternalMeter(MeterConfig{"external", "tcp://127.0.0.1:1", 5000});
  ASSERT_TRUE(Eventually([&] {
    return unreachable->Read({}).status().message().find("connect") != std::string::npos;
  }));
}

TEST(Ipmitool, ParsesDcmiAndNamesAMissingTool) {
  auto w = ParseDcmiPowerReading(
      "    Instantaneous power reading:                    45 Watts\n    Minimum during sampling "
      "period:"
      "                  3 Watts\n");
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(*w, 45);
  EXPECT_FALSE(ParseDcmiPowerReading("Invalid command").ok());
  IpmiConfig c;
  c.host = "127.0.0.1";
  c.ipmitool = "/nonexistent/ipmitool";
  auto r = RunIpmitool(c, {"chassis", "power", "status"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsNotFound());
  EXPECT_NE(r.status().message().find("not found"), std::string::npos) << r.status().message();
}

// An emulated host's CPU cap holds in every window of its profile's period; a cap too small for
// the kernel's 1 ms minimum quota gets a longer period instead of failing.
TEST(HostCgroup, CapsTheCpuInEveryPeriodAndKeepsTheQuotaAtTheKernelsMinimum) {
  if (geteuid() != 0) GTEST_SKIP() << "cgroups need root";
  auto half = HostCgroup::Create(fmt::format("test_cap_{}", getpid()), 0.5, 10);
  if (!half.ok()) GTEST_SKIP() << "no cgroup CPU controller here: " << half.status().ToString();
  EXPECT_EQ(CpuCap(*half), "5000 10000");
  half->Remove();
  auto tiny = HostCgroup::Create(fmt::format("test_cap_{}", getpid()), 0.05, 10);
  ASSERT_TRUE(tiny.ok()) << tiny.status().ToString();
  EXPECT_EQ(CpuCap(*tiny), "1000 20001");
  tiny->Remove();
}

}  // namespace
}  // namespace wattdb::power
