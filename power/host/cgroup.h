// HostCgroup: the CPU cap and the freezer of one emulated host. Uses cgroup v2 (cpu.max,
// cgroup.freeze) where the cpu controller is enabled, else the v1 hierarchies (cpu quota,
// cpuacct usage, freezer state). Without permission for either, Create fails and the host
// runs uncapped (callers log it). Not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace wattdb::power {

class HostCgroup {
 public:
  // Creates <root>/wattdb/<name> in each needed hierarchy, CPU capped at `cpus` over every
  // `period_ms` (longer if the quota would be below the kernel's 1 ms minimum).
  static Result<HostCgroup> Create(const std::string& name, double cpus, int period_ms);
  HostCgroup() = default;

  // For a child between fork and exec: moves the calling process in (async-signal-safe).
  void JoinFromChild() const;
  Status Freeze();  // returns once every task is frozen (or fails after 2 s)
  Status Thaw();
  // CPU time used by the tasks, nanoseconds.
  Result<uint64_t> CpuNanos() const;
  // Removes the cgroups (they must be empty).
  void Remove();
  bool valid() const { return !procs_files_.empty(); }
  // The created directories, the CPU hierarchy's first.
  const std::vector<std::string>& dirs() const { return dirs_; }
  std::string description() const;

 private:
  bool v2_ = false;
  std::vector<std::string> dirs_;         // created directories (removed in reverse)
  std::vector<std::string> procs_files_;  // cgroup.procs of each hierarchy to join
  std::string freeze_file_, usage_file_;
  double cpus_ = 0;
  int64_t period_us_ = 0;
};

}  // namespace wattdb::power
