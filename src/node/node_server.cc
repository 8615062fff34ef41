#include "node/node_server.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <kj/exception.h>

#include "common/codec.h"
#include "common/failpoint.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "common/subprocess.h"
#include "net/message_builder.h"
#include "node/replica_peer.h"
#include "node/wire.h"
#include "power/host/agent_client.h"
#include "proto/cluster.capnp.h"
#include "proto/node_service.capnp.h"

namespace wattdb::node {

namespace fs = std::filesystem;
using net::Connection;

namespace {

// How long a connection may sit idle between requests (the master retires its pooled
// connections well before: net::kPoolIdleMs).
constexpr int kIdleConnectionMs = 600000;

}  // namespace

NodeOptions NodeOptionsFromConfig(const ClusterConfig& cfg, const NodeConfig& self) {
  NodeOptions opts;
  opts.self = self;
  opts.data_dir = fmt::format("{}/n{}", cfg.data_dir, self.id);
  opts.master_host = cfg.ClusterHost();
  opts.master_port = cfg.cluster_port;
  opts.telemetry_interval_ms = cfg.telemetry_interval_ms;
  opts.sync_commit = cfg.sync_commit;
  opts.connect_timeout_ms = cfg.connect_timeout_ms;
  opts.rpc_timeout_ms = cfg.rpc_timeout_ms;
  opts.heartbeat_timeout_ms = cfg.heartbeat_timeout_ms;
  opts.lock_timeout_ms = cfg.lock_timeout_ms;
  opts.column_cache_bytes = static_cast<size_t>(cfg.column_cache_mb) << 20;
  opts.column_cache_quiet_ms = cfg.column_cache_quiet_ms;
  opts.scan_frame_bytes = static_cast<size_t>(cfg.scan_frame_kb) << 10;
  opts.local_sockets = cfg.local_sockets;
  opts.key_file = cfg.KeyPath();
  return opts;
}

NodeServer::NodeServer(NodeOptions opts, const Clock& clock)
    : opts_(std::move(opts)), clock_(clock) {}

NodeServer::~NodeServer() { Stop(); }

Status NodeServer::Start() {
  if (opts_.key_file.empty()) return Status::InvalidArgument("no cluster key file configured");
  ASSIGN_OR_RETURN(net::ClusterKey key, net::ClusterKey::LoadOrCreate(opts_.key_file));
  key_ = std::make_unique<net::ClusterKey>(std::move(key));
  peers_ = std::make_unique<PeerClients>(
      rpc::NodeClientOptions{opts_.connect_timeout_ms, opts_.rpc_timeout_ms, key_.get()});
  replicator_ = std::make_unique<Replicator>(
      [this](NodeId n) { return std::make_shared<RpcReplicaPeer>(*peers_, n); });
  follower_log_ = std::make_unique<FollowerLog>(opts_.rpc_timeout_ms);
  ASSIGN_OR_RETURN(store_, storage::SegmentStore::Open(opts_.data_dir + "/segments"));
  store_->set_sync_commits(opts_.sync_commit);
  participant_ =
      std::make_unique<Participant>(*store_, std::chrono::milliseconds(opts_.lock_timeout_ms),
                                    std::chrono::milliseconds(opts_.heartbeat_timeout_ms));
  participant_->set_replicator(replicator_.get());
  columns_ = std::make_unique<ColumnCache>(opts_.column_cache_bytes,
                                           int64_t{opts_.column_cache_quiet_ms} * 1000, clock_);
  RETURN_NOT_OK(participant_->Recover());
  if (!participant_->InDoubt().empty()) {
    Log("node")->info("recovered in-doubt transactions count={}", participant_->InDoubt().size());
  }
  std::error_code ec;
  fs::remove_all(opts_.data_dir + "/export", ec);
  fs::remove_all(opts_.data_dir + "/import", ec);
  server_ = std::make_unique<net::TcpServer>(fmt::format("node{}", opts_.self.id), opts_.self.host,
                                             opts_.self.port, [this](net::Socket& s) { Serve(s); });
  server_->set_local_alias(opts_.local_sockets);
  RETURN_NOT_OK(server_->Start());
  {
    std::ofstream pid(opts_.data_dir + "/node.pid", std::ios::trunc);
    pid << getpid() << "\n";
  }
  link_thread_ = std::thread([this] { MasterLink(); });
  upkeep_thread_ = std::thread([this] { UpkeepLoop(); });
  Log("node")->info("node started id={} port={} data={}", opts_.self.id, server_->port(),
                    opts_.data_dir);
  return Status::OK();
}

void NodeServer::Stop() {
  if (stopping_.exchange(true)) return;
  Log("node")->info("node stopping id={}", opts_.self.id);
  // 1. Stop intake and drain: TcpServer::Stop closes the listener and joins every
  //    connection thread after its current request.
  if (server_) server_->Stop();
  // 2. Tell the master goodbye and end the link.
  {
    MutexLock l(link_mu_);
    if (link_conn_) {
      net::MessageBuilder mb;
      mb.initRoot<proto::NodeMessage>().setGoodbye();
      (void)link_conn_->Send(mb);
      link_conn_->Close();
    }
  }
  link_cv_.SignalAll();
  if (link_thread_.joinable()) link_thread_.join();
  if (store_) store_->StopCollecting();  // a segment's rewrite in progress ends now
  {
    MutexLock l(upkeep_mu_);  // so the upkeep thread cannot miss the notify
  }
  upkeep_cv_.SignalAll();
  if (upkeep_thread_.joinable()) upkeep_thread_.join();
  // 3. Flush and close storage (RocksDB's Close flushes the WAL), once no request of the
  //    hosting process runs.
  WriterLock in_process(in_process_mu_);
  RunDeferred();  // deferred by a request of the hosting process after the upkeep thread ended
  participant_.reset();
  store_.reset();
  std::error_code ec;
  fs::remove(opts_.data_dir + "/node.pid", ec);
  Log("node")->info("node stopped id={}", opts_.self.id);
}

void NodeServer::UpkeepLoop() {
  // Twice per quiet period, one garbage collection and images for up to two quiet segments
  // written since the start (five times as often while every round builds its two): a loaded
  // table gets its images soon after the load, a little at a time. Deferred work runs as it
  // comes.
  constexpr int kImagesPerTick = 2;
  const auto tick = std::chrono::milliseconds(std::max(100, opts_.column_cache_quiet_ms / 2));
  auto next = std::chrono::steady_clock::now() + tick;
  while (true) {
    {
      MutexLock l(upkeep_mu_);
      while (!stopping_.load() && deferred_.empty() && upkeep_cv_.WaitUntil(upkeep_mu_, next)) {
      }
    }
    RunDeferred();
    if (stopping_.load()) break;
    if (std::chrono::steady_clock::now() >= next) {
      // Old versions that scans keep stepping over go first: they slow every reader.
      auto collected = store_->CollectGarbage(1);
      if (!collected.ok())
        Log("node")->warn("old versions not collected: {}", collected.status().ToString());
      auto built = columns_->Warm(*store_, kImagesPerTick);
      if (!built.ok()) Log("node")->warn("column images not built: {}", built.status().ToString());
      // A backlog (a bulk load's segments, just split): the next ones soon after.
      bool backlog = built.ok() && *built >= kImagesPerTick;
      next = std::chrono::steady_clock::now() + (backlog ? tick / 5 : tick);
    }
  }
}

void NodeServer::RunDeferred() {
  std::vector<std::function<void()>> work;
  {
    MutexLock l(upkeep_mu_);
    work.swap(deferred_);
  }
  for (auto& w : work) w();
}

void NodeServer::Defer(std::function<void()> work) {
  {
    MutexLock l(upkeep_mu_);
    deferred_.push_back(std::move(work));
  }
  upkeep_cv_.SignalAll();
}

void NodeServer::Serve(net::Socket& socket) {
  Connection conn(&socket);
  conn.SetTimeouts(opts_.rpc_timeout_ms, opts_.rpc_timeout_ms);
  // Only the master and other nodes, which hold the cluster key, may ask anything.
  if (Status a = conn.Authenticate(*key_, Connection::Role::kServer, opts_.connect_timeout_ms);
      !a.ok()) {
    Log("node")->warn("refused a connection: {}", a.message());
    return;
  }
  tl_cpu_mark = ThreadCpuNanos();
  while (!stopping_) {
    // An idle connection may wait long for its next request (the master pools them and
    // retires them sooner); once a request starts, every frame has the RPC deadline.
    if (!conn.WaitReadable(kIdleConnectionMs).ok()) return;
    auto msg = conn.Receive();
    if (!msg.ok()) {
      if (msg.status().code() == Status::Code::kCorruption) {
        Log("node")->warn("closing connection peer={} reason={}", conn.peer(),
                          msg.status().message());
      }
      return;
    }
    if (!Handle(conn, **msg)) return;
  }
}

bool NodeServer::Handle(Connection& conn, net::ReceivedMessage& msg) {
  try {
    return Dispatch(conn, msg);
  } catch (const kj::Exception& e) {
    Log("node")->warn("malformed request peer={} err={}", conn.peer(), e.getDescription().cStr());
  } catch (const std::exception& e) {
    Log("node")->warn("request failed peer={} err={}", conn.peer(), e.what());
  }
  return false;
}

bool NodeServer::ServeInline(Connection& conn) {
  ReaderLock serving(in_process_mu_);
  auto msg = conn.Receive();  // already written by the caller: no wait
  if (!msg.ok()) return false;
  if (stopping_) {
    (void)Reply(
        conn, Status(Status::Code::kUnavailable, fmt::format("node {} is stopping", opts_.self.id),
                     sqlstate::kCannotConnectNow));
    return false;
  }
  return Handle(conn, **msg);
}

bool NodeServer::ReplyWithSizes(Connection& conn, const Status& st,
                                const SmallFlatSet<SegmentId>& touched,
                                const std::vector<ReplicaFailure>& lagging) {
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), st);
  if (!lagging.empty()) {
    auto l = resp.initReplicaFailures(lagging.size());
    for (size_t i = 0; i < lagging.size(); i++) {
      l[i].setSegment(lagging[i].segment);
      l[i].setNode(lagging[i].node);
      l[i].setMessage(lagging[i].message);
    }
  }
  std::vector<storage::SegmentInfo> infos;
  for (SegmentId id : touched) {
    auto seg = store_->Get(id);
    if (!seg.ok()) continue;
    infos.push_back({(*seg)->meta(), (*seg)->counters().bytes.load(), 0, 0});
  }
  auto l = resp.initSegments(infos.size());
  for (size_t i = 0; i < infos.size(); i++) {
    MetaTo(l[i].initMeta(), infos[i].meta);
    l[i].setBytes(infos[i].bytes);
  }
  return SendResponse(conn, mb).ok();
}

bool NodeServer::Dispatch(Connection& conn, net::ReceivedMessage& msg) {
  using Handler = bool (NodeServer::*)(Connection&, net::ReceivedMessage&);
  static const std::pair<proto::Request::Which, Handler> kHandlers[] = {
      {proto::Request::PING, &NodeServer::OnPing},
      {proto::Request::HOST_POWER, &NodeServer::OnHostPower},
      {proto::Request::CREATE_SEGMENT, &NodeServer::OnCreateSegment},
      {proto::Request::DROP_SEGMENT, &NodeServer::OnDropSegment},
      {proto::Request::PREPARE, &NodeServer::OnPrepare},
      {proto::Request::UPDATE_KEY, &NodeServer::OnUpdateKey},
      {proto::Request::COMMIT, &NodeServer::OnCommit},
      {proto::Request::SYNC_WAL, &NodeServer::OnSyncWal},
      {proto::Request::ABORT, &NodeServer::OnAbort},
      {proto::Request::ROLLBACK_TO, &NodeServer::OnRollbackTo},
      {proto::Request::BREAK_WAIT, &NodeServer::OnBreakWait},
      {proto::Request::OUTCOME, &NodeServer::OnOutcome},
      {proto::Request::SCAN, &NodeServer::OnScan},
      {proto::Request::SPLIT, &NodeServer::OnSplit},
      {proto::Request::SETTLE_SPLIT, &NodeServer::OnSettleSplit},
      {proto::Request::ADD_INDEX, &NodeServer::OnAddIndex},
      {proto::Request::DROP_INDEX, &NodeServer::OnDropIndex},
      {proto::Request::GC_HORIZON, &NodeServer::OnGcHorizon},
      {proto::Request::COMPACT, &NodeServer::OnCompact},
      {proto::Request::LIST_SEGMENTS, &NodeServer::OnListSegments},
      {proto::Request::EXPORT_SEGMENT, &NodeServer::OnExportSegment},
      {proto::Request::PULL_SEGMENT, &NodeServer::OnPullSegment},
      {proto::Request::RUN_PLAN, &NodeServer::OnRunPlan},
      {proto::Request::LEAD, &NodeServer::OnLead},
      {proto::Request::FOLLOW, &NodeServer::OnFollow},
      {proto::Request::REPLICA_APPLY, &NodeServer::OnReplicaApply},
      {proto::Request::CATCH_UP, &NodeServer::OnCatchUp},
  };
  auto which = msg.Root<proto::Request>().which();
  for (const auto& [w, handle] : kHandlers) {
    if (w == which) return (this->*handle)(conn, msg);
  }
  (void)Reply(conn, Status::NotSupported("unknown request"));
  return false;
}

bool NodeServer::OnPing(Connection& conn, net::ReceivedMessage& msg) {
  return Reply(conn, Status::OK()).ok();
}

// Hands a power off (1) or suspend (2) to the host: its agent (WATTDB_HOST_AGENT) or the OS
// command of the node's config. Replies before the host goes down.
bool NodeServer::OnHostPower(Connection& conn, net::ReceivedMessage& msg) {
  uint8_t action = msg.Root<proto::Request>().getHostPower();
  const char* agent = std::getenv("WATTDB_HOST_AGENT");
  const std::string& command =
      action == 2 ? opts_.self.os_suspend_command : opts_.self.os_poweroff_command;
  if (action != 1 && action != 2)
    return Reply(conn, Status::InvalidArgument("unknown host power action")).ok();
  if (!agent && command.empty()) {
    return Reply(conn, Status::NotSupported(fmt::format("node {} has no OS power path: no host "
                                                        "agent, and no os_{} command in its config",
                                                        opts_.self.id,
                                                        action == 2 ? "suspend" : "poweroff")))
        .ok();
  }
  // Answer first: once the host goes down it cannot.
  bool sent = Reply(conn, Status::OK()).ok();
  std::string what = action == 2 ? "suspend" : "soft";
  Log("node")->info("asked to {}: handing over to the host", action == 2 ? "suspend" : "power off");
  bool done = true;
  if (agent) {
    auto r = power::HostAgentRequest(agent, what);
    if (!r.ok() || *r != "ok") {
      Log("node")->warn("host agent refused {}: {}", what, r.ok() ? *r : r.status().message());
      done = false;
    }
  } else {
    auto r = RunProcess({"/bin/sh", "-c", command}, 60000);
    if (!r.ok() || r->exit_code != 0) {
      Log("node")->warn("'{}' failed: {}", command, r.ok() ? r->output : r.status().message());
      done = false;
    }
  }
  // Still running: register again so that the master, which took the node for gone, sees it.
  if (!done) Resumed();
  return sent;
}

void NodeServer::Resumed() {
  resumed_ = true;
  MutexLock l(link_mu_);
  link_cv_.SignalAll();
}

Result<std::unique_ptr<net::Connection>> NodeServer::Register(net::asio::io_context& io) {
  ASSIGN_OR_RETURN(auto conn, Connection::Connect(io, opts_.master_host, opts_.master_port,
                                                  opts_.connect_timeout_ms));
  RETURN_NOT_OK(conn->Authenticate(*key_, Connection::Role::kClient, opts_.connect_timeout_ms));
  // A master that takes in no heartbeat for heartbeat_timeout_ms is gone: reconnect.
  conn->SetTimeouts(opts_.rpc_timeout_ms, opts_.heartbeat_timeout_ms);
  net::MessageBuilder mb;
  auto reg = mb.initRoot<proto::NodeMessage>().initRegister();
  reg.setNodeId(opts_.self.id);
  reg.setHost(opts_.self.host);
  reg.setPort(server_->port());
  reg.setPid(getpid());
  reg.setIncarnation(Incarnation());
  RETURN_NOT_OK(conn->Send(mb));
  ASSIGN_OR_RETURN(auto reply, conn->Receive());
  try {
    auto m = reply->Root<proto::MasterMessage>();
    if (m.which() == proto::MasterMessage::REJECTED) {
      return Status::InvalidArgument(std::string("master rejected registration: ") +
                                     m.getRejected().cStr());
    }
  } catch (const kj::Exception& e) {
    return Status::Corruption("bad registration reply");
  }
  return conn;
}

void NodeServer::BuildHeartbeat(TelemetrySampler& sampler, net::MessageBuilder* mb) {
  TelemetrySample t = sampler.Sample();
  auto hb = mb->initRoot<proto::NodeMessage>().initHeartbeat();
  hb.setCpuPercent(t.cpu_percent);
  hb.setHostCpuPercent(t.host_cpu_percent);
  hb.setRssBytes(t.rss_bytes);
  hb.setMemTotalBytes(t.mem_total_bytes);
  hb.setMemAvailableBytes(t.mem_available_bytes);
  hb.setDiskBytes(t.disk_bytes);
  hb.setDiskReadBytesPerSec(t.disk_read_bps);
  hb.setDiskWriteBytesPerSec(t.disk_write_bps);
  hb.setNetRxBytesPerSec(t.net_rx_bps);
  hb.setNetTxBytesPerSec(t.net_tx_bps);
  hb.setWallMicros(clock_.WallMicros());
  auto doubt = participant_->InDoubt();
  auto d = hb.initInDoubt(doubt.size());
  for (size_t i = 0; i < doubt.size(); i++) d.set(i, doubt[i]);
  auto waits = participant_->LockWaits();
  auto w = hb.initLockWaits(waits.size());
  for (size_t i = 0; i < waits.size(); i++) {
    w[i].setTxn(waits[i].first);
    w[i].setHolder(waits[i].second);
  }
  auto list = store_->List();
  auto segs = hb.initSegments(list.size());
  std::map<SegmentId, ReplicaPosition> at = replicator_->Positions();
  at.merge(follower_log_->Positions());  // (the leader's word first, should it be both)
  for (size_t i = 0; i < list.size(); i++) {
    StatsTo(segs[i], list[i]);
    if (auto it = at.find(list[i].meta.id); it != at.end()) {
      segs[i].setReplicaSeq(it->second.seq);
      segs[i].setReplicaTs(it->second.ts);
      segs[i].setReplicaOffset(it->second.offset);
      segs[i].setKeptFrom(it->second.kept_from);
      segs[i].setKeptBytes(it->second.kept_bytes);
    }
  }
}

void NodeServer::Heartbeats(net::Connection& conn, TelemetrySampler& sampler) {
  uint64_t beats = 0;
  while (!stopping_) {
    // Outcome records answer repeated commits; an hour covers every retry and resolution
    // (transaction ids start with the master's wall clock in microseconds).
    if (beats++ % 600 == 0) {
      int64_t hour_ago = clock_.WallMicros() - 3600LL * 1000000;
      if (hour_ago > 0) (void)store_->ForgetOutcomesBefore(static_cast<uint64_t>(hour_ago) << 8);
    }
    net::MessageBuilder mb;
    BuildHeartbeat(sampler, &mb);
    Status hs;
    {
      MutexLock l(link_mu_);
      if (stopping_) return;
      hs = conn.Send(mb);
    }
    if (!hs.ok()) {
      Log("node")->warn("lost master link: {}", hs.message());
      return;
    }
    MutexLock l(link_mu_);
    auto until = CondVar::DeadlineIn(std::chrono::milliseconds(opts_.telemetry_interval_ms));
    while (!stopping_.load() && !resumed_.load() && link_cv_.WaitUntil(link_mu_, until)) {
    }
    if (resumed_.exchange(false)) {
      Log("node")->info("host resumed; registering with the master again");
      return;
    }
  }
}

void NodeServer::MasterLink() {
  int backoff_ms = 100;
  TelemetrySampler sampler(opts_.data_dir, clock_);
  while (!stopping_) {
    net::asio::io_context io;
    auto conn = Register(io);
    if (!conn.ok()) {
      Log("node")->warn("cannot reach master at {}:{}, retrying in {} ms: {}", opts_.master_host,
                        opts_.master_port, backoff_ms, conn.status().message());
      MutexLock l(link_mu_);
      auto until = CondVar::DeadlineIn(std::chrono::milliseconds(backoff_ms));
      for (bool timed_out = false; !(stopping_.load() || resumed_.exchange(false)) && !timed_out;) {
        timed_out = !link_cv_.WaitUntil(link_mu_, until);
      }
      backoff_ms = std::min(backoff_ms * 2, 1000);
      continue;
    }
    backoff_ms = 100;
    Log("node")->info("registered with master id={} master={}:{}", opts_.self.id, opts_.master_host,
                      opts_.master_port);
    {
      MutexLock l(link_mu_);
      link_conn_ = conn->get();
    }
    Heartbeats(**conn, sampler);
    MutexLock l(link_mu_);
    link_conn_ = nullptr;
  }
}

}  // namespace wattdb::node
