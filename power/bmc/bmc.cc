#include "power/bmc/bmc.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

namespace wattdb::power {

namespace {

Status Write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  f.close();
  if (!f) return Status::IOError(fmt::format("cannot write {}", path));
  return Status::OK();
}

// ipmi_sim's config language quotes strings with double quotes and has no escapes.
Status CheckQuotable(const std::string& what, const std::string& s) {
  if (s.find_first_of("\"\n\\") != std::string::npos) {
    return Status::InvalidArgument(
        fmt::format("{} must not contain quotes, backslashes or newlines", what));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<std::string>> WriteBmcConfig(const NodeConfig& n, const BmcFiles& f) {
  RETURN_NOT_OK(CheckQuotable("ipmi.user", n.ipmi.user));
  RETURN_NOT_OK(CheckQuotable("ipmi.password", n.ipmi.password));
  RETURN_NOT_OK(CheckQuotable("the BMC directory", f.dir));
  if (n.ipmi.user.empty() || n.ipmi.user.size() > 16 || n.ipmi.password.size() > 20) {
    return Status::InvalidArgument("IPMI users have 1..16 characters and passwords at most 20");
  }
  std::error_code ec;
  std::filesystem::create_directories(f.dir + "/state", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", f.dir, ec.message()));
  std::string lan = fmt::format(
      "name \"node{id}\"\n"
      "set_working_mc 0x20\n"
      "  startlan 1\n"
      "    addr {host} {port}\n"
      "    priv_limit admin\n"
      "    allowed_auths_callback none md2 md5 straight\n"
      "    allowed_auths_user none md2 md5 straight\n"
      "    allowed_auths_operator none md2 md5 straight\n"
      "    allowed_auths_admin none md2 md5 straight\n"
      "    guid a123456789abcdefa123456789ab{id:04x}\n"
      "  endlan\n"
      "{dcmi}"
      "  chassis_control \"{agent} chassis --dir {host_dir}\"\n"
      "  user 2 true \"{user}\" \"{password}\" admin 10 none md2 md5 straight\n",
      fmt::arg("id", n.id), fmt::arg("host", n.ipmi.host), fmt::arg("port", n.ipmi.port),
      fmt::arg("dcmi", f.dcmi_plugin.empty() ? std::string()
                                             : fmt::format("  loadlib \"{}\" \"{}/watts\"\n",
                                                           f.dcmi_plugin, f.host_dir)),
      fmt::arg("agent", f.agent_binary), fmt::arg("host_dir", f.host_dir),
      fmt::arg("user", n.ipmi.user), fmt::arg("password", n.ipmi.password));
  RETURN_NOT_OK(Write(f.dir + "/lan.conf", lan));
  RETURN_NOT_OK(Write(f.dir + "/bmc.emu",
                      "mc_setbmc 0x20\n"
                      "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\n"
                      "sel_enable 0x20 1000 0x0a\n"
                      "mc_enable 0x20\n"));
  return std::vector<std::string>{"ipmi_sim",         "-c", f.dir + "/lan.conf", "-f",
                                  f.dir + "/bmc.emu", "-s", f.dir + "/state",    "-n"};
}

}  // namespace wattdb::power
