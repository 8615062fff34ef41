// NodeServer: one WattDB node. Serves segment requests from the master on its data port
// (and segment exports to other nodes), and keeps a registration + heartbeat link to the
// master carrying telemetry.
//
// Lifecycle: Start() opens storage, starts serving and the master link; Stop() is the
// power-down path: stop intake, drain running requests, tell the master goodbye, close
// storage. Stop() is idempotent.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "common/status.h"
#include "net/message_builder.h"
#include "net/tcp_server.h"
#include "node/column_cache.h"
#include "node/follower_log.h"
#include "node/participant.h"
#include "node/plan_cache.h"
#include "node/replicator.h"
#include "node/telemetry.h"
#include "rpc/exchange.h"
#include "rpc/node_client.h"
#include "storage/segment_store.h"

namespace wattdb::node {

struct ScanRequest;  // node/segment_rows.h

// Connections to other nodes' data ports (a helper node reading their segments), by node id,
// at the address last learnt for it. Thread-safe.
class PeerClients {
 public:
  explicit PeerClients(rpc::NodeClientOptions opts) : opts_(std::move(opts)) {}
  void Learn(NodeId node, const std::string& host, uint16_t port);
  // NotFound if no address was learnt for `node`.
  Result<std::shared_ptr<rpc::NodeClient>> Get(NodeId node);

 private:
  rpc::NodeClientOptions opts_;
  Mutex mu_;
  std::map<NodeId, std::pair<std::string, uint16_t>> addrs_ GUARDED_BY(mu_);
  // The address each client has.
  std::map<NodeId, std::pair<std::string, uint16_t>> c_addr_ GUARDED_BY(mu_);
  std::map<NodeId, std::shared_ptr<rpc::NodeClient>> clients_ GUARDED_BY(mu_);
};

struct NodeOptions {
  NodeConfig self;
  std::string data_dir;  // this node's storage directory
  std::string master_host;
  uint16_t master_port = 0;
  int telemetry_interval_ms = 2000;
  bool sync_commit = true;
  int connect_timeout_ms = 2000;  // every connect to the master or another node
  int rpc_timeout_ms = 30000;     // every frame sent or received once a request started
  int heartbeat_timeout_ms = 6000;
  int lock_timeout_ms = 10000;                // a row-lock wait's deadline
  size_t column_cache_bytes = 2048ull << 20;  // column images of quiet segments (0 = none)
  int column_cache_quiet_ms = 1000;           // a segment unchanged this long gets an image
  size_t scan_frame_bytes = 64u << 10;  // column batches gathered into one reply frame (0: one)
  bool local_sockets = true;            // also accept on the data port's local alias
  std::string
      key_file;  // the cluster key (created if missing); every connection authenticates with it
};

// The options of node `self` of cluster `cfg`, storage at <data_dir>/n<id>.
NodeOptions NodeOptionsFromConfig(const ClusterConfig& cfg, const NodeConfig& self);

// A node serves its own process too (rpc::LocalSegments): a master that hosts it (the
// paper's master node, power = "master") reads its segments without a message.
class NodeServer : public rpc::LocalSegments {
 public:
  NodeServer(NodeOptions opts, const Clock& clock = Clock::Real());
  ~NodeServer() override;

  NodeId node_id() const override { return opts_.self.id; }
  // Runs `fragment` over [lo, hi) of segment `seg` as a scan request would (NotFound if the
  // segment is not here), on the caller's thread. Only between Start and Stop.
  Status RunLocal(SegmentId seg, const std::string& lo, const std::string& hi,
                  const plan::PlanNode& fragment, const rpc::ExchangeOptions& opts,
                  const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>* stats) override;

  Status Start();
  void Stop();
  // Reads one request from `conn` and handles it on the caller's thread, as a data port
  // connection's thread would (for rpc::NodeClient::SetInline in the hosting process).
  // False if the connection must close.
  bool ServeInline(net::Connection& conn);
  // The leader side of replication: ships records to this node's followers (tests, and the
  // commit path). Only between Start and Stop.
  Replicator& replicator() { return *replicator_; }
  // The data port actually bound (differs from the config when it asked for port 0).
  uint16_t port() const { return server_ ? server_->port() : 0; }
  // The host resumed from suspend (SIGCONT): register with the master again at once, as the
  // master took the node for asleep and ignores its old link.
  void Resumed();

 private:
  void Serve(net::Socket& socket);
  void MasterLink();
  // MasterLink's steps: connect, authenticate and register (a rejection is an error); send a
  // heartbeat every telemetry interval until the link fails, the node stops or its host
  // resumed from a sleep.
  Result<std::unique_ptr<net::Connection>> Register(net::asio::io_context& io);
  void Heartbeats(net::Connection& conn, TelemetrySampler& sampler) EXCLUDES(link_mu_);
  void BuildHeartbeat(TelemetrySampler& sampler, net::MessageBuilder* mb);
  // Handles one request; may send several frames (scan, export). Returns false if the
  // connection must close.
  bool Dispatch(net::Connection& conn, net::ReceivedMessage& msg);
  // Dispatch, with the request's CPU mark set and a malformed or failing request logged
  // (false: the connection must close). Serve and ServeInline run every request through it.
  bool Handle(net::Connection& conn, net::ReceivedMessage& msg);
  // One handler per request kind (Dispatch's table): node_server.cc (ping, host power),
  // txn_handlers.cc, scan_handler.cc, segment_handlers.cc, move_handlers.cc. Each replies
  // and returns false if the connection must close.
  bool OnPing(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnHostPower(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnCreateSegment(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnDropSegment(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnPrepare(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnUpdateKey(net::Connection& conn, net::ReceivedMessage& msg);
  static constexpr int kMaxRechecks = 3;  // updateKey's READ COMMITTED re-reads of a newer version
  bool OnCommit(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnSyncWal(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnAbort(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnRollbackTo(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnBreakWait(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnOutcome(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnScan(net::Connection& conn, net::ReceivedMessage& msg);
  // A scan the master sent to this node as a follower of its segment in `follower_epoch`
  // (0: not a follower read, OK): whether this copy may answer it (FollowerLog::Readable).
  Status FollowerReadable(const ScanRequest& sr, uint64_t follower_epoch) const;
  bool OnSplit(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnSettleSplit(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnAddIndex(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnDropIndex(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnGcHorizon(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnCompact(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnListSegments(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnExportSegment(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnPullSegment(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnRunPlan(net::Connection& conn, net::ReceivedMessage& msg);  // offload_handler.cc
  // Replication (replica_handlers.cc): the master's lead, follow and catchUp, a leader's
  // replicaApply.
  bool OnLead(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnFollow(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnReplicaApply(net::Connection& conn, net::ReceivedMessage& msg);
  bool OnCatchUp(net::Connection& conn, net::ReceivedMessage& msg);
  // A commit's reply: its status and the sizes of the segments it wrote, so that the master
  // can split oversized ones right away, and the followers that did not take its writes.
  bool ReplyWithSizes(net::Connection& conn, const Status& st,
                      const SmallFlatSet<SegmentId>& touched,
                      const std::vector<ReplicaFailure>& lagging);

  NodeOptions opts_;
  const Clock& clock_;  // borrowed
  std::unique_ptr<storage::SegmentStore> store_;
  std::unique_ptr<Participant> participant_;
  std::unique_ptr<ColumnCache> columns_;
  PlanCache
      plans_;  // plans that keep their parameters, by their bytes (updateKey's, scan fragments')
  std::unique_ptr<net::TcpServer> server_;
  std::unique_ptr<net::ClusterKey> key_;
  std::unique_ptr<PeerClients> peers_;  // made once key_ exists
  // Replication (docs/design/replication.md): the segments this node leads with followers,
  // and those it follows. Made in Start.
  std::unique_ptr<Replicator> replicator_;
  std::unique_ptr<FollowerLog> follower_log_;
  std::thread link_thread_;
  // Background upkeep: runs deferred work (Defer), collects old versions scans keep stepping
  // over (SegmentStore::CollectGarbage) and builds column images of quiet segments
  // (ColumnCache::Warm).
  void UpkeepLoop();
  // Runs `work` on the upkeep thread, after the request at hand has been answered (a split's
  // compaction of the moved range: the next request need not wait for it). Work still queued
  // when the node stops runs in Stop, before storage closes.
  void Defer(std::function<void()> work);
  // Runs (outside upkeep_mu_) the work deferred so far.
  void RunDeferred();
  std::thread upkeep_thread_;
  Mutex upkeep_mu_;
  CondVar upkeep_cv_;  // wakes the upkeep thread to stop or to run deferred work
  std::vector<std::function<void()>> deferred_ GUARDED_BY(upkeep_mu_);
  std::atomic<bool> stopping_{false};
  // RunLocal and ServeInline hold it shared (they run on threads of the hosting process,
  // which Stop does not join); Stop takes it exclusively before closing storage.
  SharedMutex in_process_mu_;
  std::atomic<bool> resumed_{false};
  Mutex link_mu_;
  CondVar link_cv_;  // wakes the link thread
  net::Connection* link_conn_ GUARDED_BY(link_mu_) = nullptr;
  std::atomic<uint64_t> nonce_{0};
};

}  // namespace wattdb::node
