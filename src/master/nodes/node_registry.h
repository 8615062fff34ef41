// NodeRegistry: which nodes are up, where they listen, and their latest telemetry.
// Nodes connect to the master's cluster port, register, and heartbeat; a node is up from a
// valid registration until its link closes, it says goodbye, or heartbeats stop for
// heartbeat_timeout_ms. Thread-safe.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "common/status.h"
#include "net/tcp_server.h"
#include "rpc/node_client.h"

namespace wattdb::master {

struct SegmentTelemetry {
  SegmentId id = 0;
  uint64_t bytes = 0, rows_read = 0, rows_written = 0;
  uint64_t collections = 0;   // garbage collections of old versions
  uint64_t cached_reads = 0;  // point reads answered from the newest-version cache
  // Led or followed there: the last record numbered or applied, its commit timestamp, the
  // log's length in bytes with it (node/follower_log.h ReplicaPosition); 0 if not replicated.
  uint64_t replica_seq = 0, replica_ts = 0, replica_offset = 0;
  uint64_t kept_from = 0, kept_bytes = 0;  // records kept for a sleeping copy (0: none)
};

struct NodeInfo {
  NodeId id = 0;
  std::string host;
  uint16_t port = 0;
  bool up = false;
  int pid = 0;
  uint64_t incarnation = 0;       // of the process registered (0: not told)
  int64_t last_heartbeat_us = 0;  // monotonic clock
  int64_t registered_us = 0;      // (its last registration; a later heartbeat is newer)
  double cpu_percent = 0, host_cpu_percent = 0;
  uint64_t rss_bytes = 0, mem_total_bytes = 0, mem_available_bytes = 0, disk_bytes = 0;
  double disk_read_bps = 0, disk_write_bps = 0, net_rx_bps = 0, net_tx_bps = 0;
  uint64_t heartbeats = 0;
  std::vector<SegmentTelemetry> segments;
  std::vector<uint64_t> in_doubt;  // durably prepared transactions awaiting a decision
  uint64_t in_doubt_seq = 0;       // changes with every heartbeat that reports in_doubt
  std::vector<std::pair<uint64_t, uint64_t>> lock_waits;  // (txn, holder): row-lock waits now
  uint64_t link = 0;  // identifies the registration (link) now serving the node
};

class NodeRegistry {
 public:
  // Nodes must prove they hold `key` (net/cluster_auth.h); so does the master to them.
  // `on_cpu` is told the node CPU each reply reports (rpc::NodeClientOptions::on_cpu).
  NodeRegistry(const ClusterConfig& config, const Clock& clock, net::ClusterKey key,
               const std::function<void(NodeId, uint64_t cpu_nanos)>& on_cpu = nullptr);
  ~NodeRegistry();

  // Hooks of the replica sets, set before Start (docs/design/replication.md): `registering`
  // runs when a node registers, before it is up; `replica_failed` is told each follower a
  // leader's reply names as having missed a record (rpc::NodeClientOptions): segment,
  // leader, follower, why.
  void SetReplicaHooks(
      std::function<void(NodeId)> registering,
      std::function<Status(SegmentId, NodeId, NodeId, const std::string&)> replica_failed) {
    registering_ = std::move(registering);
    replica_failed_ = std::move(replica_failed);
  }
  Status Start();
  void Stop();

  // The client for an up node, or Unavailable (SQLSTATE 57P03) naming the node.
  Result<std::shared_ptr<rpc::NodeClient>> Client(NodeId id);
  bool IsUp(NodeId id);
  // The process id an up node reported, else 0 (without copying the registry).
  int Pid(NodeId id);
  std::vector<NodeInfo> Snapshot();
  // An up node's process CPU (percent of one core) at its last heartbeat, else -1.
  double CpuPercent(NodeId id);
  // Where an up node's copy of `seg` stood at its last heartbeat: (heartbeat time, the last
  // record it numbered or applied); nullopt if the node is down or did not report `seg`.
  std::optional<std::pair<int64_t, uint64_t>> ReplicaSeq(NodeId id, SegmentId seg);
  // Waits until the node is up (true) or `timeout_ms` passes (false).
  bool WaitUp(NodeId id, int timeout_ms);
  bool WaitDown(NodeId id, int timeout_ms);
  // The node was suspended on purpose: down now, whatever its current link still delivers;
  // it is up again when it registers anew after resuming.
  void MarkAsleep(NodeId id);

 private:
  void Serve(net::Socket& socket);
  // Marks the node down if `link` is still its current registration.
  void MarkDown(NodeId id, uint64_t link, const std::string& why);

  const ClusterConfig& config_;  // borrowed; outlives the registry
  const Clock& clock_;
  const net::ClusterKey key_;
  std::unique_ptr<net::TcpServer> server_;
  Mutex mu_;
  CondVar cv_;
  std::function<void(NodeId)> registering_;  // set before Start, then read only
  std::function<Status(SegmentId, NodeId, NodeId, const std::string&)> replica_failed_;
  std::map<NodeId, NodeInfo> nodes_ GUARDED_BY(mu_);
  std::map<NodeId, std::shared_ptr<rpc::NodeClient>> clients_ GUARDED_BY(mu_);
  uint64_t next_link_ GUARDED_BY(mu_) = 0;
};

}  // namespace wattdb::master
