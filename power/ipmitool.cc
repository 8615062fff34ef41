#include "power/ipmitool.h"

#include <regex>
#include <thread>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "common/subprocess.h"

namespace wattdb::power {

namespace {

// Trims ipmitool's output to its first meaningful line for messages.
std::string FirstLine(const std::string& out) {
  size_t start = out.find_first_not_of(" \n\r\t");
  if (start == std::string::npos) return "(no output)";
  size_t end = out.find('\n', start);
  return out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

Result<std::string> RunIpmitool(const IpmiConfig& c, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      c.ipmitool, "-I",   "lanplus", "-C", "3", "-H", c.host, "-p", std::to_string(c.port),
      "-U",       c.user, "-E",      "-N", "1", "-R", "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string what = fmt::format("ipmitool {} (BMC {}:{})", fmt::join(args, " "), c.host, c.port);
  int backoff_ms = 200;
  Status last;
  for (int attempt = 0; attempt <= c.retries; attempt++) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      backoff_ms *= 2;
    }
    auto r = RunProcess(argv, c.timeout_ms, {{"IPMI_PASSWORD", c.password}});
    if (!r.ok()) {
      if (r.status().IsNotFound()) {
        return Status::NotFound(
            fmt::format("{}: '{}' not found (install the ipmitool package or set ipmi.ipmitool)",
                        what, c.ipmitool));
      }
      last = Status::TimedOut(fmt::format("{}: no answer within {} ms", what, c.timeout_ms));
      continue;
    }
    if (r->exit_code == 0) return r->output;
    const std::string& out = r->output;
    if (out.find("RAKP 2 HMAC is invalid") != std::string::npos ||
        out.find("Unauthorized name") != std::string::npos ||
        out.find("RAKP 2 message indicates an error : unauthorized name") != std::string::npos ||
        out.find("invalid authentication") != std::string::npos) {
      return Status::Sql(
          sqlstate::kInvalidPassword,
          fmt::format("{}: the BMC refused user '{}' or its password", what, c.user));
    }
    if (out.find("Unable to establish IPMI v2 / RMCP+ session") != std::string::npos) {
      last = Status::Unavailable(
          fmt::format("{}: no IPMI session (BMC unreachable, or wrong user or password)", what));
      continue;
    }
    if (out.find("Invalid command") != std::string::npos ||
        out.find("Invalid data field") != std::string::npos) {
      return Status::NotSupported(
          fmt::format("{}: the BMC does not support it: {}", what, FirstLine(out)));
    }
    last = Status::IOError(fmt::format("{}: exit {}: {}", what, r->exit_code, FirstLine(out)));
  }
  return last;
}

Result<double> ParseDcmiPowerReading(const std::string& output) {
  static const std::regex kReading(R"(Instantaneous power reading:\s*([0-9]+(\.[0-9]+)?)\s*Watts)");
  std::smatch m;
  if (!std::regex_search(output, m, kReading)) {
    return Status::Corruption(
        fmt::format("no power reading in the DCMI answer: {}", FirstLine(output)));
  }
  return std::stod(m[1].str());
}

}  // namespace wattdb::power
