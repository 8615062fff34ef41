// Running a helper program (ipmitool, ip) with a deadline: its stdout and stderr are
// captured together; past the deadline it is killed. Thread-safe.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace wattdb {

// How Spawn starts a program: stdin from /dev/null; stdout and stderr both to `output_fd`, or
// appended to `output_file`, or to /dev/null; no other descriptor inherited; default signal
// mask and dispositions; `extra_env` added to the environment.
struct SpawnOptions {
  std::string output_file;
  int output_fd = -1;
  bool new_session = false;  // setsid: a terminal's or the parent group's signals do not reach it
  bool new_group = false;    // its own process group (kill(-pid) reaches its helpers too)
  std::map<std::string, std::string> extra_env;
};

// Starts argv[0] (searched in PATH) and returns its pid. NotFound if there is no such program.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const SpawnOptions& options);

struct ProcessResult {
  int exit_code = 0;   // the exit status, or 128 + signal
  std::string output;  // stdout and stderr, interleaved, at most 1 MiB
};

// Runs argv[0] (searched in PATH) with `extra_env` added to the environment. NotFound if the
// program does not exist; TimedOut (the process killed) past `timeout_ms`.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, int timeout_ms,
                                 const std::map<std::string, std::string>& extra_env = {});

}  // namespace wattdb
