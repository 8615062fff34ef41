#include "master/nodes/node_registry.h"

#include <kj/exception.h>

#include "common/logging.h"
#include "common/sqlstate.h"
#include "net/message_builder.h"
#include "proto/cluster.capnp.h"

namespace wattdb::master {

NodeRegistry::NodeRegistry(const ClusterConfig& config, const Clock& clock, net::ClusterKey key,
                           const std::function<void(NodeId, uint64_t)>& on_cpu)
    : config_(config), clock_(clock), key_(std::move(key)) {
  for (const auto& n : config.nodes) {
    NodeInfo info;
    info.id = n.id;
    info.host = n.host;
    info.port = n.port;
    nodes_[n.id] = info;
    rpc::NodeClientOptions opts{config.connect_timeout_ms, config.rpc_timeout_ms, &key_};
    opts.on_cpu = on_cpu;
    opts.on_replica_failure = [this, leader = n.id](SegmentId seg, NodeId follower,
                                                    const std::string& why) {
      return replica_failed_ ? replica_failed_(seg, leader, follower, why) : Status::OK();
    };
    clients_[n.id] = std::make_shared<rpc::NodeClient>(n.id, n.host, n.port, opts);
  }
}

NodeRegistry::~NodeRegistry() { Stop(); }

Status NodeRegistry::Start() {
  server_ = std::make_unique<net::TcpServer>("cluster", config_.ClusterHost(), config_.cluster_port,
                                             [this](net::Socket& s) { Serve(s); });
  server_->set_local_alias(config_.local_sockets);
  return server_->Start();
}

void NodeRegistry::Stop() {
  if (server_) server_->Stop();
}

void NodeRegistry::MarkDown(NodeId id, uint64_t link, const std::string& why) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  // A link replaced by a newer registration no longer speaks for the node.
  if (it == nodes_.end() || !it->second.up || it->second.link != link) return;
  it->second.up = false;
  clients_[id]->Reset(it->second.host, it->second.port);
  Log("master")->info("node down id={} reason={}", id, why);
  cv_.SignalAll();
}

void NodeRegistry::MarkAsleep(NodeId id) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  if (it == nodes_.end() || !it->second.up) return;
  it->second.up = false;
  clients_[id]->Reset(it->second.host, it->second.port);
  Log("master")->info("node down id={} reason=suspended", id);
  cv_.SignalAll();
}

void NodeRegistry::Serve(net::Socket& socket) {
  net::Connection conn(&socket);
  // A node that sends nothing for heartbeat_timeout_ms (dead, frozen, cut off) is down.
  conn.SetTimeouts(config_.heartbeat_timeout_ms, config_.rpc_timeout_ms);
  NodeId id = 0;
  uint64_t link = 0;
  if (Status a =
          conn.Authenticate(key_, net::Connection::Role::kServer, config_.connect_timeout_ms);
      !a.ok()) {
    Log("master")->warn("refused a registration: {}", a.message());
    return;
  }
  try {
    auto first = conn.Receive();
    if (!first.ok()) return;
    auto m = (*first)->Root<proto::NodeMessage>();
    net::MessageBuilder reply;
    auto r = reply.initRoot<proto::MasterMessage>();
    if (m.which() != proto::NodeMessage::REGISTER) {
      r.setRejected("expected a registration");
      (void)conn.Send(reply);
      return;
    }
    auto reg = m.getRegister();
    id = reg.getNodeId();
    const NodeConfig* nc = config_.FindNode(id);
    if (!nc) {
      r.setRejected(fmt::format("node id {} is not in the cluster config", id));
      (void)conn.Send(reply);
      Log("master")->warn("rejected registration of unknown node id={} peer={}", id, conn.peer());
      return;
    }
    // A new process (or one the master did not know): what it held in memory is gone. The
    // same process again (resumed from standby, or reconnected) kept it.
    bool same = false;
    {
      MutexLock l(mu_);
      auto known = nodes_.find(id);
      same = known != nodes_.end() && reg.getIncarnation() != 0 &&
             known->second.incarnation == reg.getIncarnation();
    }
    if (registering_ && !same) registering_(id);
    {
      MutexLock l(mu_);
      NodeInfo& n = nodes_[id];
      n.incarnation = reg.getIncarnation();
      n.host = reg.getHost();
      n.port = reg.getPort();
      n.pid = reg.getPid();
      n.up = true;
      n.link = link = ++next_link_;
      n.in_doubt.clear();
      n.lock_waits.clear();
      n.last_heartbeat_us = n.registered_us = clock_.NowMicros();
      clients_[id]->Reset(n.host, n.port);
      cv_.SignalAll();
    }
    r.setRegistered();
    if (!conn.Send(reply).ok()) {
      MarkDown(id, link, "registration reply failed");
      return;
    }
    Log("master")->info("node up id={} addr={}:{} pid={}", id, reg.getHost().cStr(), reg.getPort(),
                        reg.getPid());
    while (true) {
      auto msg = conn.Receive();
      if (!msg.ok()) {
        MarkDown(id, link,
                 msg.status().IsTimedOut() ? "no heartbeat within heartbeat_timeout_ms"
                                           : msg.status().message());
        return;
      }
      auto nm = (*msg)->Root<proto::NodeMessage>();
      if (nm.which() == proto::NodeMessage::GOODBYE) {
        MarkDown(id, link, "goodbye");
        return;
      }
      if (nm.which() != proto::NodeMessage::HEARTBEAT) continue;
      auto hb = nm.getHeartbeat();
      MutexLock l(mu_);
      NodeInfo& n = nodes_[id];
      if (n.link != link) return;  // superseded by a newer registration
      n.last_heartbeat_us = clock_.NowMicros();
      n.heartbeats++;
      n.cpu_percent = hb.getCpuPercent();
      n.host_cpu_percent = hb.getHostCpuPercent();
      n.rss_bytes = hb.getRssBytes();
      n.mem_total_bytes = hb.getMemTotalBytes();
      n.mem_available_bytes = hb.getMemAvailableBytes();
      n.disk_bytes = hb.getDiskBytes();
      n.disk_read_bps = hb.getDiskReadBytesPerSec();
      n.disk_write_bps = hb.getDiskWriteBytesPerSec();
      n.net_rx_bps = hb.getNetRxBytesPerSec();
      n.net_tx_bps = hb.getNetTxBytesPerSec();
      n.in_doubt.clear();
      for (auto t : hb.getInDoubt()) n.in_doubt.push_back(t);
      n.in_doubt_seq = ++next_link_;
      n.lock_waits.clear();
      for (auto w : hb.getLockWaits()) n.lock_waits.emplace_back(w.getTxn(), w.getHolder());
      n.segments.clear();
      for (auto s : hb.getSegments()) {
        n.segments.push_back({s.getMeta().getId(), s.getBytes(), s.getRowsRead(),
                              s.getRowsWritten(), s.getCollections(), s.getCachedReads(),
                              s.getReplicaSeq(), s.getReplicaTs(), s.getReplicaOffset(),
                              s.getKeptFrom(), s.getKeptBytes()});
      }
    }
  } catch (const kj::Exception& e) {
    Log("master")->warn("malformed node message peer={} err={}", conn.peer(),
                        e.getDescription().cStr());
    if (id) MarkDown(id, link, "malformed message");
  }
}

Result<std::shared_ptr<rpc::NodeClient>> NodeRegistry::Client(NodeId id) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  if (it == nodes_.end())
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("node {} does not exist", id));
  if (!it->second.up)
    return Status(Status::Code::kUnavailable, fmt::format("node {} is down", id),
                  sqlstate::kCannotConnectNow);
  return clients_[id];
}

bool NodeRegistry::IsUp(NodeId id) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  return it != nodes_.end() && it->second.up;
}

int NodeRegistry::Pid(NodeId id) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  return it != nodes_.end() && it->second.up ? it->second.pid : 0;
}

double NodeRegistry::CpuPercent(NodeId id) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  return it != nodes_.end() && it->second.up ? it->second.cpu_percent : -1;
}

std::optional<std::pair<int64_t, uint64_t>> NodeRegistry::ReplicaSeq(NodeId id, SegmentId seg) {
  MutexLock l(mu_);
  auto it = nodes_.find(id);
  if (it == nodes_.end() || !it->second.up) return std::nullopt;
  for (const SegmentTelemetry& t : it->second.segments) {
    if (t.id == seg) return std::make_pair(it->second.last_heartbeat_us, t.replica_seq);
  }
  return std::nullopt;
}

std::vector<NodeInfo> NodeRegistry::Snapshot() {
  MutexLock l(mu_);
  std::vector<NodeInfo> out;
  for (const auto& [id, n] : nodes_) out.push_back(n);
  return out;
}

bool NodeRegistry::WaitUp(NodeId id, int timeout_ms) {
  MutexLock l(mu_);
  auto until = CondVar::DeadlineIn(std::chrono::milliseconds(timeout_ms));
  while (!nodes_[id].up && cv_.WaitUntil(mu_, until)) {
  }
  return nodes_[id].up;
}

bool NodeRegistry::WaitDown(NodeId id, int timeout_ms) {
  MutexLock l(mu_);
  auto until = CondVar::DeadlineIn(std::chrono::milliseconds(timeout_ms));
  while (nodes_[id].up && cv_.WaitUntil(mu_, until)) {
  }
  return !nodes_[id].up;
}

}  // namespace wattdb::master
