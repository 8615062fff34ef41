#include "master/energy/policy.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <toml++/toml.h>

#include "common/config_power.h"

namespace wattdb::master {

namespace {

Status Bad(const std::string& source, const toml::node& n, const std::string& key,
           const std::string& what) {
  return Status::InvalidArgument(
      fmt::format("{}:{}: key '{}' {}", source, n.source().begin.line, key, what));
}

Status Number(const toml::table& t, const char* key, double lo, double hi, double* out,
              const std::string& source) {
  const toml::node* n = t.get(key);
  if (!n) return Status::OK();
  double v;
  if (auto i = n->value_exact<int64_t>()) {
    v = static_cast<double>(*i);
  } else if (auto d = n->value_exact<double>()) {
    v = *d;
  } else {
    return Bad(source, *n, key, "must be a number");
  }
  if (!(v >= lo && v <= hi)) return Bad(source, *n, key, fmt::format("must be in {}..{}", lo, hi));
  *out = v;
  return Status::OK();
}

Status Text(const toml::table& t, const char* key, std::initializer_list<const char*> allowed,
            std::string* out, const std::string& source) {
  const toml::node* n = t.get(key);
  if (!n) return Status::OK();
  auto v = n->value_exact<std::string>();
  std::string list;
  for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  if (!v) return Bad(source, *n, key, fmt::format("must be one of {}", list));
  for (const char* a : allowed) {
    if (*v == a) {
      *out = *v;
      return Status::OK();
    }
  }
  return Bad(source, *n, key, fmt::format("is '{}'; it must be one of {}", *v, list));
}

}  // namespace

const char* PolicyModeName(EnergyPolicy::Mode m) {
  switch (m) {
    case EnergyPolicy::Mode::kStatic:
      return "static";
    case EnergyPolicy::Mode::kDynamic:
      return "dynamic";
    case EnergyPolicy::Mode::kManual:
      return "manual";
  }
  return "?";
}

Result<EnergyPolicy> ParsePolicy(const std::string& text, const std::string& source,
                                 const ClusterConfig& cluster) {
  toml::table t;
  try {
    t = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", source, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  RETURN_NOT_OK(config_internal::CheckKeys(
      t,
      {"mode", "scale_out_cpu", "scale_in_cpu", "hysteresis", "window_s", "cooldown_s",
       "min_active_nodes", "max_active_nodes", "pinned", "standby", "migration_mb_s", "forecaster",
       "alpha", "beta", "horizon_s", "down_s", "latency_target_ms", "min_live_replicas",
       "sleep_log_mb"},
      "the policy", source));
  EnergyPolicy p;
  p.source = source;
  std::string mode = "dynamic";
  RETURN_NOT_OK(Text(t, "mode", {"static", "dynamic", "manual"}, &mode, source));
  p.mode = mode == "static"   ? EnergyPolicy::Mode::kStatic
           : mode == "manual" ? EnergyPolicy::Mode::kManual
                              : EnergyPolicy::Mode::kDynamic;
  RETURN_NOT_OK(Number(t, "scale_out_cpu", 0.01, 1, &p.scale_out_cpu, source));
  RETURN_NOT_OK(Number(t, "scale_in_cpu", 0, 1, &p.scale_in_cpu, source));
  RETURN_NOT_OK(Number(t, "hysteresis", 0, 0.5, &p.hysteresis, source));
  RETURN_NOT_OK(Number(t, "window_s", 1, 86400, &p.window_s, source));
  RETURN_NOT_OK(Number(t, "cooldown_s", 0, 86400, &p.cooldown_s, source));
  RETURN_NOT_OK(Number(t, "migration_mb_s", 0, 1e6, &p.migration_mb_s, source));
  RETURN_NOT_OK(Number(t, "alpha", 0.01, 1, &p.alpha, source));
  RETURN_NOT_OK(Number(t, "beta", 0, 1, &p.beta, source));
  RETURN_NOT_OK(Number(t, "horizon_s", 0, 3600, &p.horizon_s, source));
  RETURN_NOT_OK(Number(t, "down_s", 0, 3600, &p.down_s, source));
  RETURN_NOT_OK(Number(t, "latency_target_ms", 0, 3.6e6, &p.latency_target_ms, source));
  RETURN_NOT_OK(Number(t, "sleep_log_mb", 0, 65536, &p.sleep_log_mb, source));
  double live = p.min_live_replicas;
  RETURN_NOT_OK(Number(t, "min_live_replicas", 1, 7, &live, source));
  if (live != std::floor(live))
    return Bad(source, *t.get("min_live_replicas"), "min_live_replicas", "must be a whole number");
  p.min_live_replicas = static_cast<int>(live);
  RETURN_NOT_OK(Text(t, "standby", {"suspend", "off"}, &p.standby, source));
  RETURN_NOT_OK(Text(t, "forecaster", {"holt", "ewma"}, &p.forecaster, source));
  int nodes = static_cast<int>(cluster.nodes.size());
  double min = p.min_active_nodes, max = p.max_active_nodes;
  RETURN_NOT_OK(Number(t, "min_active_nodes", 0, nodes, &min, source));
  RETURN_NOT_OK(Number(t, "max_active_nodes", 0, nodes, &max, source));
  if (min != std::floor(min))
    return Bad(source, *t.get("min_active_nodes"), "min_active_nodes", "must be a whole number");
  if (max != std::floor(max))
    return Bad(source, *t.get("max_active_nodes"), "max_active_nodes", "must be a whole number");
  p.min_active_nodes = static_cast<int>(min);
  p.max_active_nodes = static_cast<int>(max);
  int effective_max = p.max_active_nodes == 0 ? nodes : p.max_active_nodes;
  if (p.min_active_nodes > effective_max) {
    const toml::node* at =
        t.get("min_active_nodes") ? t.get("min_active_nodes") : t.get("max_active_nodes");
    return Bad(source, *at,
               at == t.get("min_active_nodes") ? "min_active_nodes" : "max_active_nodes",
               fmt::format("makes min_active_nodes ({}) exceed max_active_nodes ({})",
                           p.min_active_nodes, effective_max));
  }
  if (p.scale_in_cpu >= p.scale_out_cpu) {
    const toml::node* at = t.get("scale_in_cpu") ? t.get("scale_in_cpu") : t.get("scale_out_cpu");
    return Bad(source, *at, at == t.get("scale_in_cpu") ? "scale_in_cpu" : "scale_out_cpu",
               fmt::format("makes scale_in_cpu ({}) not below scale_out_cpu ({})", p.scale_in_cpu,
                           p.scale_out_cpu));
  }
  if (p.scale_in_cpu + p.hysteresis >= p.scale_out_cpu - p.hysteresis && t.get("hysteresis")) {
    return Bad(source, *t.get("hysteresis"), "hysteresis",
               "closes the gap between scale_in_cpu and scale_out_cpu");
  }
  if (const toml::node* pn = t.get("pinned")) {
    auto* arr = pn->as_array();
    if (!arr) return Bad(source, *pn, "pinned", "must be a list of node ids");
    std::set<NodeId> seen;
    for (const auto& el : *arr) {
      auto id = el.value_exact<int64_t>();
      if (!id || *id <= 0 || !cluster.FindNode(static_cast<NodeId>(*id))) {
        return Bad(source, el, "pinned", "must list node ids of the cluster config");
      }
      if (seen.insert(static_cast<NodeId>(*id)).second)
        p.pinned.push_back(static_cast<NodeId>(*id));
    }
    if (static_cast<int>(p.pinned.size()) > effective_max) {
      return Bad(source, *pn, "pinned",
                 fmt::format("pins more nodes than max_active_nodes ({})", effective_max));
    }
  }
  return p;
}

Result<EnergyPolicy> LoadPolicy(const std::string& path, const ClusterConfig& cluster) {
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("cannot read policy file {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParsePolicy(ss.str(), path, cluster);
}

BreakEven ComputeBreakEven(const EnergyPolicy& p, const HostProfile& prof, uint64_t bytes,
                           double rate) {
  BreakEven b;
  bool off = p.standby == "off";
  double standby_w = off ? prof.off_watts : prof.suspended_watts;
  double up_s = (off ? prof.boot_ms : prof.resume_ms) / 1000.0;
  b.e_down_j = prof.idle_watts * p.down_s;
  b.e_up_j = prof.idle_watts * up_s;
  double move_s = rate > 0 ? static_cast<double>(bytes) / rate : 0;
  b.e_migrate_j = 2 * prof.idle_watts * move_s;
  b.saved_w = prof.idle_watts - standby_w;
  b.seconds = b.saved_w > 0 ? (b.e_down_j + b.e_up_j + b.e_migrate_j) / b.saved_w
                            : std::numeric_limits<double>::infinity();
  return b;
}

}  // namespace wattdb::master
