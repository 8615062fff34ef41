#include "common/config_power.h"

#include <cstdio>
#include <set>

#include <fmt/format.h>

namespace wattdb::config_internal {

namespace {

int64_t Line(const toml::node& n) { return n.source().begin.line; }

Status Bad(const std::string& source, const toml::node& n, const std::string& where,
           const std::string& key, const std::string& what) {
  return Status::InvalidArgument(
      fmt::format("{}:{}: {} key '{}' {}", source, Line(n), where, key, what));
}

// Reads `key` of `t` into `out` if present. Integers are accepted where floats are expected.
template <typename T>
Status Read(const toml::table& t, const char* key, T* out, const std::string& where,
            const std::string& source) {
  const toml::node* n = t.get(key);
  if (!n) return Status::OK();
  if constexpr (std::is_same_v<T, double>) {
    if (auto i = n->value_exact<int64_t>()) {
      *out = static_cast<double>(*i);
      return Status::OK();
    }
  }
  auto v = n->value_exact<T>();
  if (!v) return Bad(source, *n, where, key, "has the wrong type");
  *out = *v;
  return Status::OK();
}

Status ReadInt(const toml::table& t, const char* key, int* out, int64_t lo, int64_t hi,
               const std::string& where, const std::string& source) {
  int64_t v = *out;
  RETURN_NOT_OK(Read(t, key, &v, where, source));
  if (v < lo || v > hi)
    return Bad(source, *t.get(key), where, key, fmt::format("must be in {}..{}", lo, hi));
  *out = static_cast<int>(v);
  return Status::OK();
}

Status ReadPort(const toml::table& t, const char* key, uint16_t* out, const std::string& where,
                const std::string& source) {
  int v = *out;
  RETURN_NOT_OK(ReadInt(t, key, &v, 1, 65535, where, source));
  *out = static_cast<uint16_t>(v);
  return Status::OK();
}

Status ReadWatts(const toml::table& t, const char* key, double* out, const std::string& where,
                 const std::string& source) {
  RETURN_NOT_OK(Read(t, key, out, where, source));
  if (t.get(key) && !(*out >= 0 && *out <= 100000)) {
    return Bad(source, *t.get(key), where, key, "must be in 0..100000 watts");
  }
  return Status::OK();
}

Status ParseMeter(const toml::table& parent, const std::string& where, const std::string& source,
                  MeterConfig* m) {
  const toml::node* n = parent.get("meter");
  if (!n) return Status::OK();
  if (auto s = n->value_exact<std::string>()) {
    m->type = *s;
  } else if (auto* t = n->as_table()) {
    RETURN_NOT_OK(CheckKeys(*t, {"type", "source", "stale_ms"}, where + " meter", source));
    RETURN_NOT_OK(Read(*t, "type", &m->type, where + " meter", source));
    RETURN_NOT_OK(Read(*t, "source", &m->source, where + " meter", source));
    RETURN_NOT_OK(ReadInt(*t, "stale_ms", &m->stale_ms, 100, 3600000, where + " meter", source));
  } else {
    return Bad(source, *n, where, "meter",
               "must be a meter type or a table { type = ..., source = ... }");
  }
  static const std::set<std::string> kTypes = {"model", "ipmi-dcmi", "rapl", "external", "none"};
  if (!kTypes.count(m->type)) {
    return Bad(
        source, *n, where, "meter",
        fmt::format("names unknown meter '{}' (known: model, ipmi-dcmi, rapl, external, none)",
                    m->type));
  }
  if (m->type == "rapl" && m->source.empty()) m->source = "/sys/class/powercap/intel-rapl:0";
  if (m->type == "external" && m->source.empty()) {
    return Bad(source, *n, where, "meter",
               "of type external needs a source (tcp://host:port or a file)");
  }
  return Status::OK();
}

bool ValidMac(const std::string& mac) {
  unsigned b[6];
  char tail;
  return mac.size() == 17 && std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1],
                                         &b[2], &b[3], &b[4], &b[5], &tail) == 6;
}

}  // namespace

Status CheckKeys(const toml::table& t, std::initializer_list<const char*> known,
                 const std::string& where, const std::string& source) {
  for (const auto& [k, v] : t) {
    bool ok = false;
    for (const char* n : known) ok = ok || k.str() == n;
    if (!ok) {
      std::string list;
      for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
      return Status::InvalidArgument(fmt::format("{}:{}: {} has unknown key '{}' (known: {})",
                                                 source, Line(v), where, k.str(), list));
    }
  }
  return Status::OK();
}

namespace {

// One [profile.NAME] table.
Result<HostProfile> ParseProfile(std::string_view name, const toml::node& node,
                                 const std::string& source) {
  auto* t = node.as_table();
  std::string where = fmt::format("[profile.{}]", name);
  if (!t)
    return Status::InvalidArgument(
        fmt::format("{}:{}: {} must be a table", source, Line(node), where));
  RETURN_NOT_OK(CheckKeys(*t,
                          {"cpus", "cpu_period_ms", "idle_watts", "peak_watts", "suspended_watts",
                           "off_watts", "resume_ms", "boot_ms"},
                          where, source));
  HostProfile p;
  p.name = std::string(name);
  RETURN_NOT_OK(Read(*t, "cpus", &p.cpus, where, source));
  if (!(p.cpus >= 0.01 && p.cpus <= 1024))
    return Bad(source, *t->get("cpus"), where, "cpus", "must be in 0.01..1024");
  for (auto [key, field] :
       {std::pair{"idle_watts", &p.idle_watts}, std::pair{"peak_watts", &p.peak_watts},
        std::pair{"suspended_watts", &p.suspended_watts}, std::pair{"off_watts", &p.off_watts}}) {
    RETURN_NOT_OK(ReadWatts(*t, key, field, where, source));
  }
  if (p.peak_watts < p.idle_watts) {
    const toml::node* at = t->get("peak_watts") ? t->get("peak_watts") : t->get("idle_watts");
    return Status::InvalidArgument(
        fmt::format("{}:{}: {} key 'peak_watts' ({}) is below idle_watts ({})", source,
                    Line(at ? *at : *t), where, p.peak_watts, p.idle_watts));
  }
  RETURN_NOT_OK(ReadInt(*t, "cpu_period_ms", &p.cpu_period_ms, 1, 1000, where, source));
  RETURN_NOT_OK(ReadInt(*t, "resume_ms", &p.resume_ms, 0, 600000, where, source));
  RETURN_NOT_OK(ReadInt(*t, "boot_ms", &p.boot_ms, 0, 3600000, where, source));
  return p;
}

// One [[infrastructure]] entry; `names` holds the names taken so far.
Result<InfraConfig> ParseInfrastructure(const toml::node& el, const std::string& source,
                                        std::set<std::string>* names) {
  auto* t = el.as_table();
  if (!t)
    return Status::InvalidArgument(
        fmt::format("{}:{}: [[infrastructure]] entries must be tables", source, Line(el)));
  RETURN_NOT_OK(
      CheckKeys(*t, {"name", "meter", "idle_watts", "peak_watts"}, "[[infrastructure]]", source));
  InfraConfig inf;
  RETURN_NOT_OK(Read(*t, "name", &inf.name, "[[infrastructure]]", source));
  if (inf.name.empty() || !names->insert(inf.name).second) {
    return Status::InvalidArgument(
        fmt::format("{}:{}: [[infrastructure]] needs a unique name", source, Line(*t)));
  }
  std::string where = fmt::format("[[infrastructure]] '{}'", inf.name);
  RETURN_NOT_OK(ParseMeter(*t, where, source, &inf.meter));
  if (inf.meter.type == "ipmi-dcmi") {
    return Bad(source, *t->get("meter"), where, "meter",
               "ipmi-dcmi meters belong to nodes (their BMC)");
  }
  RETURN_NOT_OK(ReadWatts(*t, "idle_watts", &inf.idle_watts, where, source));
  RETURN_NOT_OK(ReadWatts(*t, "peak_watts", &inf.peak_watts, where, source));
  return inf;
}

// [hosts]: loopback or emulated hosts, their subnet and bridge.
Status ParseHosts(const toml::table& t, const std::string& source, ClusterConfig* c) {
  RETURN_NOT_OK(CheckKeys(t, {"mode", "subnet", "bridge"}, "[hosts]", source));
  RETURN_NOT_OK(Read(t, "mode", &c->hosts.mode, "[hosts]", source));
  RETURN_NOT_OK(Read(t, "subnet", &c->hosts.subnet, "[hosts]", source));
  RETURN_NOT_OK(Read(t, "bridge", &c->hosts.bridge, "[hosts]", source));
  if (c->hosts.mode != "loopback" && c->hosts.mode != "emulated") {
    return Bad(source, *t.get("mode"), "[hosts]", "mode", "must be \"loopback\" or \"emulated\"");
  }
  unsigned a, b, cc;
  char tail;
  if (std::sscanf(c->hosts.subnet.c_str(), "%u.%u.%u%c", &a, &b, &cc, &tail) != 3 || a > 255 ||
      b > 255 || cc > 255) {
    return Status::InvalidArgument(
        fmt::format("{}: [hosts] subnet '{}' must be a /24 prefix such as \"10.213.0\"", source,
                    c->hosts.subnet));
  }
  if (c->hosts.bridge.empty() || c->hosts.bridge.size() > 15) {
    return Status::InvalidArgument(
        fmt::format("{}: [hosts] bridge must be 1..15 characters", source));
  }
  return Status::OK();
}

}  // namespace

Status ParsePowerSections(const toml::table& root, const std::string& source, ClusterConfig* c) {
  c->profiles = {HostProfile{}};  // "atom"
  if (auto* t = root["power"].as_table()) {
    RETURN_NOT_OK(
        CheckKeys(*t, {"meter_interval_ms", "metrics_port", "wake_timeout_ms"}, "[power]", source));
    RETURN_NOT_OK(
        ReadInt(*t, "wake_timeout_ms", &c->wake_timeout_ms, 100, 3600000, "[power]", source));
    RETURN_NOT_OK(
        ReadInt(*t, "meter_interval_ms", &c->meter_interval_ms, 10, 600000, "[power]", source));
    int port = c->metrics_port;
    RETURN_NOT_OK(ReadInt(*t, "metrics_port", &port, 0, 65535, "[power]", source));
    c->metrics_port = static_cast<uint16_t>(port);
  }
  if (const toml::node* pn = root.get("profile")) {
    auto* profiles = pn->as_table();
    if (!profiles) return Bad(source, *pn, "", "profile", "must hold tables [profile.NAME]");
    for (const auto& [name, node] : *profiles) {
      ASSIGN_OR_RETURN(HostProfile p, ParseProfile(name.str(), node, source));
      std::erase_if(c->profiles, [&](const HostProfile& q) { return q.name == p.name; });
      c->profiles.push_back(p);
    }
  }
  if (const toml::node* in = root.get("infrastructure")) {
    auto* arr = in->as_array();
    if (!arr)
      return Bad(source, *in, "", "infrastructure",
                 "must be an array of tables [[infrastructure]]");
    std::set<std::string> names;
    for (auto& el : *arr) {
      ASSIGN_OR_RETURN(InfraConfig inf, ParseInfrastructure(el, source, &names));
      c->infrastructure.push_back(inf);
    }
  } else {
    InfraConfig master{"master", {}, 22.0, 26.0};
    InfraConfig sw{"switch", {}, 20.0, 0};
    c->infrastructure = {master, sw};
  }
  if (auto* t = root["hosts"].as_table()) RETURN_NOT_OK(ParseHosts(*t, source, c));
  return Status::OK();
}

Status ParseNodePower(const toml::table& t, const std::string& source, NodeConfig* n) {
  std::string where = "[[node]]";
  RETURN_NOT_OK(Read(t, "profile", &n->profile, where, source));
  RETURN_NOT_OK(Read(t, "os_suspend", &n->os_suspend_command, where, source));
  RETURN_NOT_OK(Read(t, "os_poweroff", &n->os_poweroff_command, where, source));
  RETURN_NOT_OK(ParseMeter(t, where, source, &n->meter));
  if (const toml::node* in = t.get("ipmi")) {
    auto* it = in->as_table();
    if (!it) return Bad(source, *in, where, "ipmi", "must be a table");
    std::string w = where + " ipmi";
    RETURN_NOT_OK(CheckKeys(
        *it, {"host", "port", "user", "password", "ipmitool", "timeout_ms", "retries"}, w, source));
    RETURN_NOT_OK(Read(*it, "host", &n->ipmi.host, w, source));
    RETURN_NOT_OK(ReadPort(*it, "port", &n->ipmi.port, w, source));
    RETURN_NOT_OK(Read(*it, "user", &n->ipmi.user, w, source));
    RETURN_NOT_OK(Read(*it, "password", &n->ipmi.password, w, source));
    RETURN_NOT_OK(Read(*it, "ipmitool", &n->ipmi.ipmitool, w, source));
    RETURN_NOT_OK(ReadInt(*it, "timeout_ms", &n->ipmi.timeout_ms, 100, 600000, w, source));
    RETURN_NOT_OK(ReadInt(*it, "retries", &n->ipmi.retries, 0, 10, w, source));
  }
  if (const toml::node* wn = t.get("wol")) {
    auto* wt = wn->as_table();
    if (!wt) return Bad(source, *wn, where, "wol", "must be a table");
    std::string w = where + " wol";
    RETURN_NOT_OK(CheckKeys(*wt, {"mac", "broadcast", "port", "interface"}, w, source));
    RETURN_NOT_OK(Read(*wt, "mac", &n->wol.mac, w, source));
    RETURN_NOT_OK(Read(*wt, "broadcast", &n->wol.broadcast, w, source));
    RETURN_NOT_OK(ReadPort(*wt, "port", &n->wol.port, w, source));
    RETURN_NOT_OK(Read(*wt, "interface", &n->wol.interface, w, source));
    if (!n->wol.mac.empty() && !ValidMac(n->wol.mac)) {
      return Bad(source, *wt->get("mac"), w, "mac",
                 fmt::format("'{}' is not a MAC address (aa:bb:cc:dd:ee:ff)", n->wol.mac));
    }
  }
  return Status::OK();
}

Status FinishPowerConfig(const toml::table& root, const std::string& source, ClusterConfig* c) {
  bool emulated = c->hosts.mode == "emulated";
  auto* arr = root["node"].as_array();
  for (size_t i = 0; i < c->nodes.size(); i++) {
    NodeConfig& n = c->nodes[i];
    const toml::table* t = arr ? (*arr)[i].as_table() : nullptr;
    int64_t line = t ? Line(*t) : 0;
    auto err = [&](const std::string& what) {
      return Status::InvalidArgument(fmt::format("{}:{}: node {}: {}", source, line, n.id, what));
    };
    bool known_profile = false;
    for (const auto& p : c->profiles) known_profile = known_profile || p.name == n.profile;
    if (!known_profile)
      return err(fmt::format("key 'profile' names unknown profile '{}'", n.profile));
    if (n.power != "local" && n.power != "ipmi" && n.power != "wol" && n.power != "master") {
      return err(fmt::format(
          "key 'power' names unknown power driver '{}' (known: local, ipmi, wol, master)",
          n.power));
    }
    if (n.InMaster()) {
      // The master node of the paper: the master process holds this node's segments itself.
      for (size_t j = 0; j < i; j++) {
        if (c->nodes[j].InMaster())
          return err(fmt::format("node {} already lives in the master", c->nodes[j].id));
      }
      if (emulated)
        return err(
            "key 'power' = \"master\" puts the node in the master process, not on an emulated "
            "host");
      // Its watts are the master host's ([[infrastructure]] "master"), unless a meter is named.
      if (!t || !t->get("meter")) n.meter.type = "none";
    }
    if (emulated) {
      if (n.id > 240) return err("emulated hosts need node ids in 1..240");
      if (n.power == "local") {
        return err(
            "key 'power' = \"local\" runs loopback processes; emulated hosts are powered through "
            "ipmi or wol");
      }
      if (!t || !t->get("host")) n.host = fmt::format("{}.{}", c->hosts.subnet, 10 + n.id);
      if (n.wol.mac.empty()) n.wol.mac = fmt::format("52:54:00:57:00:{:02x}", n.id);
      // Every emulated host has a BMC on the lab's private bridge; its default password.
      if (n.ipmi.password.empty()) n.ipmi.password = "wattdb";
      if (!t || !t->get("wol") || !(*t->get("wol")->as_table()).get("broadcast")) {
        n.wol.broadcast = c->hosts.subnet + ".255";
      }
    }
    if (n.ipmi.host.empty()) n.ipmi.host = n.host;
    if (n.power == "wol" && n.wol.mac.empty()) return err("the wol driver needs wol.mac");
  }
  return Status::OK();
}

}  // namespace wattdb::config_internal
