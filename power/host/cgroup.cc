#include "power/host/cgroup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

namespace wattdb::power {

namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";
constexpr int64_t kMinQuotaUs = 1000;  // the kernel refuses less

Status WriteTo(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  if (!f) return Status::IOError(fmt::format("cannot open {}", path));
  f << value;
  f.flush();
  if (!f) return Status::IOError(fmt::format("cannot write '{}' to {}", value, path));
  return Status::OK();
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s;
}

Status MakeDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create cgroup {}: {}", dir, ec.message()));
  return Status::OK();
}

}  // namespace

Result<HostCgroup> HostCgroup::Create(const std::string& name, double cpus, int period_ms) {
  HostCgroup g;
  g.cpus_ = cpus;
  int64_t period =
      std::max<int64_t>(int64_t{period_ms} * 1000, static_cast<int64_t>(kMinQuotaUs / cpus) + 1);
  int64_t quota = std::max<int64_t>(kMinQuotaUs, static_cast<int64_t>(cpus * period));
  g.period_us_ = period;
  std::string controllers = ReadAll(fmt::format("{}/cgroup.controllers", kRoot));
  if (controllers.find("cpu") != std::string::npos) {
    g.v2_ = true;
    std::string dir = fmt::format("{}/wattdb/{}", kRoot, name);
    RETURN_NOT_OK(WriteTo(fmt::format("{}/cgroup.subtree_control", kRoot), "+cpu"));
    RETURN_NOT_OK(MakeDir(fmt::format("{}/wattdb", kRoot)));
    RETURN_NOT_OK(WriteTo(fmt::format("{}/wattdb/cgroup.subtree_control", kRoot), "+cpu"));
    RETURN_NOT_OK(MakeDir(dir));
    g.dirs_.push_back(dir);
    RETURN_NOT_OK(WriteTo(dir + "/cpu.max", fmt::format("{} {}", quota, period)));
    g.procs_files_.push_back(dir + "/cgroup.procs");
    g.freeze_file_ = dir + "/cgroup.freeze";
    g.usage_file_ = dir + "/cpu.stat";
    return g;
  }
  for (const char* h : {"cpu", "cpuacct", "freezer"}) {
    std::string dir = fmt::format("{}/{}/wattdb/{}", kRoot, h, name);
    // cpu and cpuacct may be one hierarchy (symlinks): create and join it once.
    std::string real = std::filesystem::weakly_canonical(fmt::format("{}/{}", kRoot, h)).string();
    bool seen = false;
    for (const auto& d : g.dirs_) seen = seen || d.rfind(real + "/", 0) == 0;
    std::string rdir = fmt::format("{}/wattdb/{}", real, name);
    if (!seen) {
      RETURN_NOT_OK(MakeDir(rdir));
      g.dirs_.push_back(rdir);
      g.procs_files_.push_back(rdir + "/cgroup.procs");
    }
    if (std::string(h) == "cpu") {
      RETURN_NOT_OK(WriteTo(rdir + "/cpu.cfs_period_us", std::to_string(period)));
      RETURN_NOT_OK(WriteTo(rdir + "/cpu.cfs_quota_us", std::to_string(quota)));
    } else if (std::string(h) == "cpuacct") {
      g.usage_file_ = rdir + "/cpuacct.usage";
    } else {
      g.freeze_file_ = rdir + "/freezer.state";
    }
  }
  return g;
}

void HostCgroup::JoinFromChild() const {
  char pid[32];
  int n = snprintf(pid, sizeof(pid), "%d", static_cast<int>(getpid()));
  for (const auto& f : procs_files_) {
    int fd = open(f.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (write(fd, pid, static_cast<size_t>(n)) < 0) {
      // runs uncapped; the parent reported how the cgroup was set up
    }
    close(fd);
  }
}

Status HostCgroup::Freeze() {
  if (freeze_file_.empty()) return Status::NotSupported("no freezer");
  RETURN_NOT_OK(WriteTo(freeze_file_, v2_ ? "1" : "FROZEN"));
  for (int i = 0; i < 200; i++) {
    std::string s =
        ReadAll(v2_ ? std::filesystem::path(freeze_file_).parent_path().string() + "/cgroup.events"
                    : freeze_file_);
    if (v2_ ? s.find("frozen 1") != std::string::npos : s.rfind("FROZEN", 0) == 0)
      return Status::OK();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return Status::TimedOut("the host's tasks did not freeze within 2 s");
}

Status HostCgroup::Thaw() {
  if (freeze_file_.empty()) return Status::NotSupported("no freezer");
  return WriteTo(freeze_file_, v2_ ? "0" : "THAWED");
}

Result<uint64_t> HostCgroup::CpuNanos() const {
  std::string s = ReadAll(usage_file_);
  if (v2_) {
    size_t p = s.find("usage_usec ");
    if (p == std::string::npos) return Status::IOError("no usage_usec in " + usage_file_);
    return std::stoull(s.substr(p + 11)) * 1000;
  }
  if (s.empty()) return Status::IOError("cannot read " + usage_file_);
  return std::stoull(s);
}

void HostCgroup::Remove() {
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) rmdir(it->c_str());
  dirs_.clear();
  procs_files_.clear();
}

std::string HostCgroup::description() const {
  return fmt::format("cgroup {} ({}, {:.2f} CPU per {} ms)", dirs_.empty() ? "-" : dirs_.front(),
                     v2_ ? "v2" : "v1", cpus_, period_us_ / 1000.0);
}

}  // namespace wattdb::power
