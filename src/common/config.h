// Cluster configuration: one TOML file read by the master, every node and the tools.
// An embedded default (kDefaultConfigToml) describes the local cluster that `make run`
// starts: one master and three nodes on loopback, each node a local process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/power_config.h"
#include "common/schema.h"
#include "common/status.h"

namespace wattdb {

struct NodeConfig {
  NodeId id = 0;
  std::string host = "127.0.0.1";
  uint16_t port = 0;             // data port: the master's requests to this node
  std::string power = "local";   // power driver: local | ipmi | wol
  std::string profile = "atom";  // host profile (watts, latencies)
  MeterConfig meter;
  IpmiConfig ipmi;
  WolConfig wol;
  // The OS path for suspend and power off on real hosts (e.g. "systemctl suspend"); emulated
  // hosts use their agent instead.
  std::string os_suspend_command;
  std::string os_poweroff_command;
  // power = "master": the node lives in the master process (the paper's master node).
  bool InMaster() const { return power == "master"; }
};

// Client authentication at the master's PostgreSQL port.
struct AuthConfig {
  std::string method = "scram-sha-256";  // "scram-sha-256", "md5" or "trust"
  bool trust_loopback = true;            // clients on 127.0.0.0/8 or ::1 need no password
  // Users whose passwords the config sets (more come from CREATE USER ... PASSWORD).
  std::vector<std::pair<std::string, std::string>> users;
};

struct ClusterConfig {
  std::string data_dir = "run/data";     // master at <data_dir>/master, nodes at <data_dir>/n<id>
  uint64_t segment_bytes = 32ull << 20;  // a segment that grows past this splits
  // Copies of each segment (a leader and followers on distinct nodes) unless its table says
  // otherwise (CREATE TABLE ... WITH (replicas = N)); at most one per data node. 0 (not
  // set): 2 on a cluster of two or more data nodes, else 1 (ReplicationFactor).
  int replication_factor = 0;
  int telemetry_interval_ms = 2000;
  int heartbeat_timeout_ms = 6000;   // a node silent this long is marked down
  bool sync_commit = true;           // nodes fsync their log before acknowledging a commit
  int latch_wait_ms = 10000;         // how long a move or split waits for a segment's writers
  int connect_timeout_ms = 2000;     // deadline of every connect between cluster processes
  int rpc_timeout_ms = 30000;        // deadline of each request/reply and frame between them
  int lock_timeout_ms = 10000;       // a writer waits this long for a row lock (then 40001);
                                     // deadlocks end sooner (40P01)
  int column_cache_mb = 2048;        // each node's column images of quiet segments (0 = none)
  int column_cache_quiet_ms = 1000;  // a segment unchanged this long gets a column image
  int scan_frame_kb = 64;            // column batches a node gathers into one reply frame (0: one)
  bool local_sockets = true;         // cluster servers on loopback also accept on local sockets
  std::string master_host = "127.0.0.1";
  uint16_t pg_port = 5433;
  int max_connections = 100;              // client sessions at once (more get 53300)
  int work_mem_mb = 256;                  // each sort or hash table of a statement (53200 beyond)
  int authentication_timeout_ms = 60000;  // startup + authentication must finish within this
  int client_io_timeout_ms =
      300000;  // a client that takes no bytes (or sends half a message) this long is dropped
  uint16_t cluster_port = 7100;  // nodes register and heartbeat here
  std::string node_binary;       // local power driver: path of wattdb-node ("" = beside master)
  std::string key_file;  // cluster key shared by master and nodes ("" = <data_dir>/cluster.key)
  std::string log_level = "info";
  std::vector<NodeConfig> nodes;
  AuthConfig auth;
  std::vector<HostProfile> profiles;        // always holds "atom" (the default) unless redefined
  std::vector<InfraConfig> infrastructure;  // metered always-on parts (default: master, switch)
  HostsConfig hosts;
  int meter_interval_ms = 1000;  // how often the master reads every meter
  int wake_timeout_ms = 30000;  // a woken node must register within its boot or resume delay + this
  uint16_t metrics_port = 0;    // Prometheus text endpoint (/metrics); 0 = off
  std::string
      energy_policy;  // [master] energy_policy: the energy-policy file ("" = embedded default)

  const NodeConfig* FindNode(NodeId id) const;
  const HostProfile& Profile(const NodeConfig& node) const;  // REQUIRES a parsed config
  // Where nodes reach the master's cluster port: master_host, or the bridge address of
  // emulated hosts (<subnet>.1).
  std::string ClusterHost() const {
    return hosts.mode == "emulated" ? hosts.subnet + ".1" : master_host;
  }
  // replication_factor, or when not set 2 on a cluster of two or more nodes, else 1.
  int ReplicationFactor() const {
    return replication_factor ? replication_factor : (nodes.size() >= 2 ? 2 : 1);
  }
  // The cluster key's path: key_file, or <data_dir>/cluster.key.
  std::string KeyPath() const { return key_file.empty() ? data_dir + "/cluster.key" : key_file; }
};

extern const char* const kDefaultConfigToml;

// Parses TOML text; errors name the offending key and line.
Result<ClusterConfig> ParseConfig(const std::string& toml_text, const std::string& source_name);
// Reads `path`, or the embedded default when `path` is empty.
Result<ClusterConfig> LoadConfig(const std::string& path);

}  // namespace wattdb
