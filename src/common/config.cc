#include "common/config.h"

#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "common/config_power.h"

namespace wattdb {

const char* const kDefaultConfigToml =
    R"(# WattDB local cluster: a master and three nodes on loopback.
[cluster]
data_dir = "run/data"
segment_bytes = 33554432        # 32 MiB
# replication_factor = 2        # copies of each segment (not set: 2 with two or more nodes, else 1)
telemetry_interval_ms = 2000
heartbeat_timeout_ms = 6000      # a node silent this long is declared dead
connect_timeout_ms = 2000
rpc_timeout_ms = 30000          # no request between cluster processes waits longer
sync_commit = true              # fsync each commit on the nodes (off: survives process crashes only)
column_cache_mb = 2048          # each node keeps quiet segments decoded as columns in this much memory (0: off)
column_cache_quiet_ms = 1000    # a segment unchanged this long (as scans saw it) is quiet
scan_frame_kb = 64              # a node's reply frame gathers column batches up to this size (0: one each)
local_sockets = true            # processes of one host talk over Unix-domain sockets (off: loopback TCP)
# key_file = "run/data/cluster.key"  # shared secret of master and nodes (created on first start)
log_level = "info"

[master]
host = "127.0.0.1"
pg_port = 5433
cluster_port = 7100
max_connections = 100
authentication_timeout_ms = 60000
client_io_timeout_ms = 300000
work_mem_mb = 256               # each sort or hash table of a statement (53200 beyond; SET work_mem)

[auth]
method = "scram-sha-256"        # or "md5", or "trust" (no passwords at all)
trust_loopback = true           # local clients (127.0.0.1, ::1) connect without a password
# [[auth.user]]                 # users with passwords; CREATE USER ... PASSWORD adds more
# name = "alice"
# password = "secret"

[[node]]                        # the master node: it lives in the master process
id = 1
port = 7101
power = "master"

[[node]]
id = 2
port = 7102
power = "local"

[[node]]
id = 3
port = 7103
power = "local"
)";

const HostProfile& ClusterConfig::Profile(const NodeConfig& node) const {
  for (const auto& p : profiles) {
    if (p.name == node.profile) return p;
  }
  return profiles.front();
}

const NodeConfig* ClusterConfig::FindNode(NodeId id) const {
  for (const auto& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

namespace {

template <typename T>
Status Get(const toml::table& t, const char* key, T* out, const std::string& where) {
  const toml::node* n = t.get(key);
  if (!n) return Status::OK();
  auto v = n->value<T>();
  if (!v) {
    return Status::InvalidArgument(fmt::format("{}: key '{}' at line {} has the wrong type", where,
                                               key, n->source().begin.line));
  }
  *out = *v;
  return Status::OK();
}

Status GetPort(const toml::table& t, const char* key, uint16_t* out, const std::string& where) {
  int64_t v = *out;
  RETURN_NOT_OK(Get(t, key, &v, where));
  if (v < 0 || v > 65535) {
    return Status::InvalidArgument(fmt::format("{}: {} = {} is not a port", where, key, v));
  }
  *out = static_cast<uint16_t>(v);
  return Status::OK();
}

}  // namespace

namespace {

// [cluster]: storage, timeouts and caches.
Status ParseClusterSection(const toml::table& t, const std::string& source, ClusterConfig* c) {
  RETURN_NOT_OK(config_internal::CheckKeys(
      t,
      {"data_dir", "segment_bytes", "telemetry_interval_ms", "heartbeat_timeout_ms", "node_binary",
       "key_file", "sync_commit", "local_sockets", "latch_wait_ms", "connect_timeout_ms",
       "rpc_timeout_ms", "lock_timeout_ms", "column_cache_mb", "column_cache_quiet_ms",
       "scan_frame_kb", "log_level", "replication_factor"},
      "[cluster]", source));
  int64_t seg = static_cast<int64_t>(c->segment_bytes);
  int64_t tel = c->telemetry_interval_ms, hb = c->heartbeat_timeout_ms;
  RETURN_NOT_OK(Get(t, "data_dir", &c->data_dir, source));
  RETURN_NOT_OK(Get(t, "segment_bytes", &seg, source));
  RETURN_NOT_OK(Get(t, "telemetry_interval_ms", &tel, source));
  RETURN_NOT_OK(Get(t, "heartbeat_timeout_ms", &hb, source));
  RETURN_NOT_OK(Get(t, "node_binary", &c->node_binary, source));
  RETURN_NOT_OK(Get(t, "key_file", &c->key_file, source));
  RETURN_NOT_OK(Get(t, "sync_commit", &c->sync_commit, source));
  RETURN_NOT_OK(Get(t, "local_sockets", &c->local_sockets, source));
  int64_t wait = c->latch_wait_ms;
  RETURN_NOT_OK(Get(t, "latch_wait_ms", &wait, source));
  if (wait < 1 || wait > 3600000)
    return Status::InvalidArgument(source + ": latch_wait_ms must be in 1..3600000");
  c->latch_wait_ms = static_cast<int>(wait);
  for (auto [key, field] : {std::pair{"connect_timeout_ms", &c->connect_timeout_ms},
                            std::pair{"rpc_timeout_ms", &c->rpc_timeout_ms},
                            std::pair{"lock_timeout_ms", &c->lock_timeout_ms}}) {
    int64_t v = *field;
    RETURN_NOT_OK(Get(t, key, &v, source));
    if (v < 10 || v > 3600000) {
      return Status::InvalidArgument(fmt::format("{}: {} must be in 10..3600000", source, key));
    }
    *field = static_cast<int>(v);
  }
  int64_t cache = c->column_cache_mb;
  RETURN_NOT_OK(Get(t, "column_cache_mb", &cache, source));
  if (cache < 0 || cache > 1048576)
    return Status::InvalidArgument(source + ": column_cache_mb must be in 0..1048576");
  c->column_cache_mb = static_cast<int>(cache);
  int64_t quiet = c->column_cache_quiet_ms;
  RETURN_NOT_OK(Get(t, "column_cache_quiet_ms", &quiet, source));
  if (quiet < 0 || quiet > 86400000) {
    return Status::InvalidArgument(source + ": column_cache_quiet_ms must be in 0..86400000");
  }
  c->column_cache_quiet_ms = static_cast<int>(quiet);
  int64_t frame = c->scan_frame_kb;
  RETURN_NOT_OK(Get(t, "scan_frame_kb", &frame, source));
  if (frame < 0 || frame > 16384)
    return Status::InvalidArgument(source + ": scan_frame_kb must be in 0..16384");
  c->scan_frame_kb = static_cast<int>(frame);
  RETURN_NOT_OK(Get(t, "log_level", &c->log_level, source));
  if (t.get("replication_factor")) {  // not set: 0, chosen by the number of nodes
    int64_t rf = 0;
    RETURN_NOT_OK(Get(t, "replication_factor", &rf, source));
    if (rf < 1 || rf > 7) {
      return Status::InvalidArgument(source +
                                     ": replication_factor must be in 1..7 (not set: 2 on a "
                                     "cluster of two or more nodes, else 1)");
    }
    c->replication_factor = static_cast<int>(rf);
  }
  if (seg < 1024) return Status::InvalidArgument(source + ": segment_bytes must be >= 1024");
  if (tel < 10) return Status::InvalidArgument(source + ": telemetry_interval_ms must be >= 10");
  if (hb <= tel) {
    return Status::InvalidArgument(source +
                                   ": heartbeat_timeout_ms must exceed telemetry_interval_ms");
  }
  c->segment_bytes = static_cast<uint64_t>(seg);
  c->telemetry_interval_ms = static_cast<int>(tel);
  c->heartbeat_timeout_ms = static_cast<int>(hb);
  return Status::OK();
}

// [master]: the master's ports, policy file and client limits.
Status ParseMasterSection(const toml::table& t, const std::string& source, ClusterConfig* c) {
  RETURN_NOT_OK(config_internal::CheckKeys(
      t,
      {"host", "pg_port", "cluster_port", "energy_policy", "max_connections",
       "authentication_timeout_ms", "client_io_timeout_ms", "work_mem_mb"},
      "[master]", source));
  RETURN_NOT_OK(Get(t, "host", &c->master_host, source));
  RETURN_NOT_OK(GetPort(t, "pg_port", &c->pg_port, source));
  RETURN_NOT_OK(GetPort(t, "cluster_port", &c->cluster_port, source));
  RETURN_NOT_OK(Get(t, "energy_policy", &c->energy_policy, source));
  for (auto [key, field, lo, hi] :
       {std::tuple{"max_connections", &c->max_connections, 1, 100000},
        std::tuple{"authentication_timeout_ms", &c->authentication_timeout_ms, 100, 600000},
        std::tuple{"client_io_timeout_ms", &c->client_io_timeout_ms, 100, 86400000},
        std::tuple{"work_mem_mb", &c->work_mem_mb, 1, 1048576}}) {
    int64_t v = *field;
    RETURN_NOT_OK(Get(t, key, &v, source));
    if (v < lo || v > hi) {
      return Status::InvalidArgument(
          fmt::format("{}: [master] {} must be in {}..{}", source, key, lo, hi));
    }
    *field = static_cast<int>(v);
  }
  return Status::OK();
}

// [auth]: the method and the users it knows.
Status ParseAuthSection(const toml::table& t, const std::string& source, ClusterConfig* c) {
  RETURN_NOT_OK(
      config_internal::CheckKeys(t, {"method", "trust_loopback", "user"}, "[auth]", source));
  RETURN_NOT_OK(Get(t, "method", &c->auth.method, source));
  RETURN_NOT_OK(Get(t, "trust_loopback", &c->auth.trust_loopback, source));
  if (c->auth.method != "scram-sha-256" && c->auth.method != "md5" && c->auth.method != "trust") {
    return Status::InvalidArgument(
        fmt::format("{}: [auth] method '{}' is unknown (known: scram-sha-256, md5, trust)", source,
                    c->auth.method));
  }
  if (auto* users = t["user"].as_array()) {
    for (auto& el : *users) {
      auto* u = el.as_table();
      if (!u) return Status::InvalidArgument(source + ": [[auth.user]] entries must be tables");
      RETURN_NOT_OK(config_internal::CheckKeys(*u, {"name", "password"}, "[[auth.user]]", source));
      std::string name, password;
      RETURN_NOT_OK(Get(*u, "name", &name, source));
      RETURN_NOT_OK(Get(*u, "password", &password, source));
      if (name.empty()) return Status::InvalidArgument(source + ": [[auth.user]] needs a name");
      c->auth.users.emplace_back(name, password);
    }
  }
  return Status::OK();
}

// The [[node]] entries: ids unique and in range, a port each, their power settings.
Status ParseNodes(const toml::table& root, const std::string& source, ClusterConfig* c) {
  std::set<NodeId> ids;
  if (auto* arr = root["node"].as_array()) {
    for (auto& el : *arr) {
      auto* t = el.as_table();
      if (!t) return Status::InvalidArgument(source + ": [[node]] entries must be tables");
      NodeConfig n;
      RETURN_NOT_OK(config_internal::CheckKeys(*t,
                                               {"id", "host", "port", "power", "profile", "meter",
                                                "ipmi", "wol", "os_suspend", "os_poweroff"},
                                               "[[node]]", source));
      int64_t id = 0;
      RETURN_NOT_OK(Get(*t, "id", &id, source));
      RETURN_NOT_OK(Get(*t, "host", &n.host, source));
      RETURN_NOT_OK(GetPort(*t, "port", &n.port, source));
      RETURN_NOT_OK(Get(*t, "power", &n.power, source));
      if (id <= 0 || id > 100000) {
        return Status::InvalidArgument(
            fmt::format("{}: node id {} must be in 1..100000", source, id));
      }
      n.id = static_cast<NodeId>(id);
      if (!ids.insert(n.id).second) {
        return Status::InvalidArgument(fmt::format("{}: duplicate node id {}", source, id));
      }
      if (n.port == 0)
        return Status::InvalidArgument(fmt::format("{}: node {} needs a port", source, id));
      RETURN_NOT_OK(config_internal::ParseNodePower(*t, source, &n));
      c->nodes.push_back(n);
    }
  }
  return Status::OK();
}

}  // namespace

Result<ClusterConfig> ParseConfig(const std::string& text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(fmt::format("{}:{}:{}: {}", source, e.source().begin.line,
                                               e.source().begin.column, e.description()));
  }
  ClusterConfig c;
  // A misspelt key or section is refused, not silently ignored (as PostgreSQL refuses an
  // unrecognized parameter).
  RETURN_NOT_OK(config_internal::CheckKeys(
      root, {"cluster", "master", "auth", "node", "power", "profile", "infrastructure", "hosts"},
      "the top level", source));
  RETURN_NOT_OK(config_internal::ParsePowerSections(root, source, &c));
  if (auto* t = root["cluster"].as_table()) RETURN_NOT_OK(ParseClusterSection(*t, source, &c));
  if (auto* t = root["master"].as_table()) RETURN_NOT_OK(ParseMasterSection(*t, source, &c));
  if (auto* t = root["auth"].as_table()) RETURN_NOT_OK(ParseAuthSection(*t, source, &c));
  RETURN_NOT_OK(ParseNodes(root, source, &c));
  if (c.nodes.empty()) return Status::InvalidArgument(source + ": no [[node]] entries");
  RETURN_NOT_OK(config_internal::FinishPowerConfig(root, source, &c));
  return c;
}

Result<ClusterConfig> LoadConfig(const std::string& path) {
  if (path.empty()) return ParseConfig(kDefaultConfigToml, "<default config>");
  std::ifstream in(path);
  if (!in) return Status::IOError(fmt::format("cannot read config file {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  ASSIGN_OR_RETURN(ClusterConfig c, ParseConfig(ss.str(), path));
  // A relative policy path is relative to the config file.
  if (!c.energy_policy.empty() && c.energy_policy[0] != '/') {
    std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    c.energy_policy = dir + "/" + c.energy_policy;
  }
  return c;
}

}  // namespace wattdb
