// Cluster: the master's view and control of the whole cluster. Owns the catalog, the node
// registry and power drivers, hands out timestamps, and runs the operations that change
// where data lives: atomic multi-node writes, segment moves, splits, drains, power changes.
//
// Concurrency: each segment has a latch. A statement's writes hold the latches of the
// segments they touch (shared) from routing until commit; moves and splits hold one latch
// exclusively, so they never run under in-flight writes. Readers take no latches: a reader
// that meets a moved or split segment re-resolves the partition map and resumes.
// Thread-safe.
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
#include <vector>

#include <boost/container/flat_set.hpp>

#include "common/clock.h"
#include "common/config.h"
#include "common/mutex.h"
#include "common/small_containers.h"
#include "master/catalog/catalog.h"
#include "master/cluster/timestamp_oracle.h"
#include "master/nodes/node_registry.h"
#include "master/nodes/node_rpc.h"
#include "master/power/node_power.h"
#include "master/power/node_supervisor.h"
#include "master/power/power_monitor.h"
#include "master/power/statement_energy.h"
#include "master/stats/activity.h"
#include "master/stats/query_counters.h"
#include "power/power_driver.h"
#include "rpc/exchange.h"

namespace wattdb::master {

// One row change of a statement, addressed by table and encoded primary key.
struct RowWrite {
  std::string key;
  bool is_delete = false;
  std::string row;  // encoded row (empty for deletes)
  RemoteWrite::Check check = RemoteWrite::Check::kNone;
};

struct MoveReport {
  SegmentId segment = 0;
  NodeId from = 0, to = 0;
  uint64_t bytes = 0;
  uint32_t files = 0;
  double pull_ms = 0;   // export + ship + import, measured on the target
  double total_ms = 0;  // including latch wait and ownership switch
};

// A statement's or a transaction's writes by the node they go to (a few nodes: inline).
using WritesByNode = SmallFlatMap<NodeId, std::vector<RemoteWrite>, 2>;

// A transaction in progress. Its writes are prepared on the nodes statement by statement
// (taking key locks there) and the latches of the segments it wrote stay held until it ends.
// Owned and used by one session thread.
struct Transaction {
  uint64_t id = 0;
  Timestamp snapshot = 0;
  SmallFlatMap<NodeId, std::shared_ptr<NodeClient>> participants;
  SmallFlatMap<NodeId, uint64_t> sent;  // writes prepared on each participant (lock-only included)
  SmallFlatMap<SegmentId, std::shared_ptr<std::shared_timed_mutex>> latches;  // held shared
  std::vector<std::string> unique_locks;  // unique index keys claimed (Cluster::CheckUnique)
  // Inserts that cannot conflict (fresh hidden row ids, no unique index), routed and their
  // segments latched but not sent yet: they travel with a one-node commit, or are sent
  // before the transaction's next statement (Cluster::SendDeferred).
  WritesByNode deferred;
  // How far the transaction had got when a statement began (Cluster::RollbackStatement).
  struct Mark {
    SmallFlatMap<NodeId, uint64_t> sent;
    size_t unique_locks = 0;
    SmallFlatMap<NodeId, size_t> deferred;
  };
  Mark mark() const;
  ~Transaction();
};

struct ClusterOptions {
  std::string config_path;  // passed to locally started nodes
  std::string node_binary;
  bool manage_nodes = false;  // power nodes on at start and off at exit
  bool balance = true;        // spread split-off segments to the least loaded node
};

class Cluster {
 public:
  Cluster(const ClusterConfig& config, ClusterOptions opts, const Clock& clock = Clock::Real());
  ~Cluster();

  Status Start();
  void Stop();

  Catalog& catalog() { return *catalog_; }
  NodeRegistry& registry() { return *registry_; }
  // The node this process hosts (power = "master"): set once it serves, cleared before it
  // stops (no statement runs then); null if none. Exchanges read its segments in-process.
  void set_local_segments(rpc::LocalSegments* s) { local_segments_.store(s); }
  rpc::LocalSegments* local_segments() const { return local_segments_.load(); }
  NodePower& power() { return *power_; }
  PowerMonitor& monitor() { return *monitor_; }
  QueryCounters& queries() { return queries_; }
  Activity& activity() { return activity_; }  // pg_stat_activity
  StatementEnergyLog& energy_log() { return energy_log_; }
  // Crashed nodes restarted so far (0 without --manage-nodes).
  uint64_t node_restarts() const { return supervisor_ ? supervisor_->restarts() : 0; }
  const ClusterConfig& config() const { return config_; }

  // Commit timestamps and read snapshots.
  TimestampOracle& timestamps() { return ts_; }
  // Sessions connected to each database (DROP DATABASE refuses while any is).
  class SessionGuard {
   public:
    SessionGuard(Cluster& c, std::string db) : c_(c), db_(std::move(db)) {
      MutexLock l(c_.sessions_mu_);
      c_.sessions_[db_]++;
    }
    ~SessionGuard() {
      MutexLock l(c_.sessions_mu_);
      if (--c_.sessions_[db_] == 0) c_.sessions_.erase(db_);
    }

   private:
    Cluster& c_;
    std::string db_;
  };
  int SessionsOn(const std::string& db) {
    MutexLock l(sessions_mu_);
    auto it = sessions_.find(db);
    return it == sessions_.end() ? 0 : it->second;
  }

  // Applies `writes` to `table` atomically across all nodes they touch (prepare everywhere,
  // then commit at one timestamp). Retries transparently when segments moved or split.
  Status ApplyWrites(TableId table, Timestamp snapshot, std::vector<RowWrite> writes);

  // Multi-statement transactions: Begin, any number of Write calls (each prepares its
  // writes on the nodes at once: duplicate keys and conflicts surface per statement), then
  // Commit or Rollback. The transaction sees its own writes in scans that pass its id.
  std::unique_ptr<Transaction> Begin(Timestamp snapshot);
  // `defer`: the writes are inserts that cannot conflict (keys the master drew, no unique
  // index); they may be held back and sent with the commit (Transaction::deferred).
  Status Write(Transaction& txn, TableId table, std::vector<RowWrite> writes, bool defer = false);
  // Sends the transaction's deferred writes; called before any statement but COMMIT and
  // ROLLBACK, so that it reads them and fails where they do.
  Status SendDeferred(Transaction& txn);
  // `w`, an UPDATE or DELETE of one row of `table`, evaluated on the row's node in one round
  // trip (cluster_key_update.cc), as RpcUpdateKey says. The rows written (0 or 1); nullopt if the
  // table does not suit (a unique secondary index, checked here) or the segment moved or split
  // meanwhile: the caller then takes the general path (scan, then Write), nothing having been done.
  Result<std::optional<uint64_t>> KeyWrite(Transaction& txn, TableId table, const KeyWriteSpec& w);
  Status Commit(Transaction& txn);
  void Rollback(Transaction& txn);
  // Per node: logged commit decisions still waiting for it to confirm the commit durable
  // (applied without a sync, reply lost, or in doubt there; wattdb_nodes.unconfirmed_commits).
  // Maintenance confirms them within a round or two of the node being up.
  std::map<NodeId, size_t> UnconfirmedCommits();
  // Undoes what `txn` prepared since `mark` (a failed statement's writes, locks and unique
  // claims) so that it can go on. An error means the nodes could not say: the transaction
  // must end.
  Status RollbackStatement(Transaction& txn, const Transaction::Mark& mark);

  // Secondary indexes (cluster_index.cc). CreateIndex blocks writes to the table while it
  // adds `def` (spec.id assigned by the caller) to every segment, which builds its entries
  // at one snapshot and maintains them from then on; a unique index is checked for
  // duplicates (23505) before it is stored in the catalog, ready for snapshots after it.
  // `table` is the catalog (qualified) name. Returns the new index's id.
  Result<uint32_t> CreateIndex(const std::string& table, IndexDef def);
  // Holds the latches of every segment of `table` exclusively: writers to it wait until this
  // is destroyed. Waits up to latch_wait_ms for transactions that wrote the table (55006).
  struct WriteBlock {
    std::vector<std::unique_lock<std::shared_timed_mutex>> latches;
  };
  Result<std::unique_ptr<WriteBlock>> BlockWrites(TableId table);
  Status DropIndex(const std::string& table, uint32_t index);
  // After `writes` of `t` to `table` were prepared: each new row's key in each unique index
  // of the table is claimed for `t` until it ends (a claim held by another transaction is
  // waited for, as a row lock is) and must not belong to another live row (23505).
  Status CheckUnique(Transaction& t, TableId table, const WritesByNode& writes);

  Result<MoveReport> MoveSegment(SegmentId seg, NodeId target);
  Result<std::vector<MoveReport>> DrainNode(NodeId node);
  // ALTER NODE n POWER OFF | SUSPEND: refused (55000) while the node owns segments, and
  // (0A000) if its power driver cannot do it. POWER ON starts an off node or resumes a
  // suspended one and returns once it has registered.
  Status PowerOff(NodeId node);
  Status Suspend(NodeId node);
  Status PowerOn(NodeId node);
  // Marks an active node draining (placement and moves skip it) or a draining one active.
  Status SetDraining(NodeId node, bool draining);

  // An operator's action on a node (ALTER NODE, a manual move to it) is running while one of
  // these lives; the energy controller leaves the cluster alone meanwhile.
  class OperatorAction {
   public:
    OperatorAction(Cluster& c, NodeId node) : c_(c), node_(node) {
      MutexLock l(c_.operator_mu_);
      c_.operator_nodes_.insert(node_);
    }
    ~OperatorAction() {
      MutexLock l(c_.operator_mu_);
      c_.operator_nodes_.erase(c_.operator_nodes_.find(node_));
    }
    OperatorAction(const OperatorAction&) = delete;
    OperatorAction& operator=(const OperatorAction&) = delete;

   private:
    Cluster& c_;
    NodeId node_;
  };
  bool OperatorBusy(NodeId node) {
    MutexLock l(operator_mu_);
    return operator_nodes_.count(node) > 0;
  }

  // Splits `seg` if it holds at least two keys; returns the new segment id or 0.
  // With `top_bytes` > 0 the node splits off about that many bytes of its highest keys
  // (see SegmentStore::Split), else at the middle.
  Result<SegmentId> SplitSegment(SegmentId seg, uint64_t top_bytes = 0);
  // Cuts up to `pieces` pieces of about `piece_bytes` off the top of `seg` in one step on its
  // node (SegmentStore::SplitPieces; one logged intent for all); returns the new segments'
  // ids in key order, or none if `seg` holds fewer than two keys.
  Result<std::vector<SegmentId>> SplitPieces(SegmentId seg, uint64_t piece_bytes, uint32_t pieces);
  // The active, up node (excluding `except`) with the fewest segments of `table` (if not 0),
  // then the fewest segments, or 0 if none.
  NodeId LeastLoadedNode(NodeId except = 0, TableId table = 0);
  // Where a new table's first segment goes: the master node while it is active (as in the
  // paper, the master alone holds everything until data grows or load asks for more nodes;
  // splits and the energy controller spread it), else the least loaded node.
  NodeId NodeForNewTable();

  // Runs one maintenance pass now (split oversized segments, finish logged moves, clean
  // up dropped segments). Normally runs every telemetry interval.
  void MaintainOnce();

 private:
  struct NodeLoad {
    size_t all = 0, of_table = 0;  // segments on the node, and of one table
  };
  // Segments per active, up node (excluding `except`), in all and of `table`.
  std::map<NodeId, NodeLoad> SegmentCounts(TableId table, NodeId except = 0);
  // The node of `load` with the fewest segments of `table` (if not 0), then the fewest; 0 if none.
  static NodeId LeastLoaded(const std::map<NodeId, NodeLoad>& load, TableId table);
  std::shared_ptr<std::shared_timed_mutex> Latch(SegmentId seg);
  // Write = Route (segments of the writes, latched) + Send (prepare them on their nodes).
  Status Route(Transaction& t, TableId table, std::vector<RowWrite> writes, WritesByNode* by_node);
  Status Send(Transaction& t, const WritesByNode& by_node);
  // Makes `node` a participant of `t`; its client.
  Result<std::shared_ptr<NodeClient>> Join(Transaction& t, NodeId node);
  // Prepares and commits all of `t`'s writes on one node in one round trip; ends `t` if
  // that worked. 55P03: a key was locked and nothing happened.
  Status CommitOnePhase(Transaction& t, NodeId node, const std::vector<RemoteWrite>& ws);
  void RequestSplitsIfOversized(const std::vector<std::pair<SegmentId, uint64_t>>& sizes);
  static constexpr uint64_t kSplitBytesPerRequest =
      256ull << 20;  // a cut into pieces moves at most this much
  static constexpr uint64_t kMaxSplitPieces = 64;
  static constexpr int kMaxWriteAttempts =
      100;  // routings of one write (segments moved or split meanwhile)
  // The request may have reached the node, but no answer came back.
  static bool IsLinkFailure(const Status& s) {
    return s.code() == Status::Code::kIOError || s.IsTimedOut() || s.IsUnavailable();
  }
  static constexpr size_t kPrepareChunk = 5000;  // writes per prepare request, at most
  static constexpr size_t kPrepareChunkBytes =
      8u << 20;  // and about this many bytes (frames stay small)
  // The end of the prepare chunk of `ws` that starts at `off` (at least one write).
  static size_t ChunkEnd(const std::vector<RemoteWrite>& ws, size_t off);
  Status RecoverMove(const MoveIntent& m);
  // Unavailable (55006): `seg`'s latch was not free within `waited_ms`.
  static Status InUse(SegmentId seg, int waited_ms);
  Status RecoverSplit(const SplitIntent& si);
  // Settles every logged move and split whose outcome a crash or a lost reply left open (as
  // far as their nodes answer). Takes admin_mu_ for each; called between units of
  // maintenance work, so that a reader held back by one waits at most one split or move.
  void SettleLoggedReshapes();
  // RecoverSplit with admin_mu_ and the segment's latch (exclusive) held by the caller.
  Status RecoverSplitLocked(const SplitIntent& si);
  bool IsPendingMove(SegmentId seg) const;
  void MaintenanceLoop();
  // Waits up to `wait_ms` for node `n` to register after a power on; repeats the wake of
  // drivers that cannot observe it (Wake-on-LAN). REQUIRES no other power action on n (the
  // power lock held, or the supervisor not started yet).
  bool AwaitRegistration(const NodeConfig& n, int wait_ms);
  // PowerOff and Suspend: checks, marks the admin state, runs the driver.
  Status PowerDown(NodeId node, power::PowerAction action);

  const ClusterConfig& config_;  // borrowed; outlives the cluster
  ClusterOptions opts_;
  const Clock& clock_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<NodeRegistry> registry_;
  std::unique_ptr<NodePower> power_;
  std::unique_ptr<PowerMonitor> monitor_;
  QueryCounters queries_;
  Activity activity_;
  StatementEnergyLog energy_log_;

  Mutex latch_mu_;
  std::map<SegmentId, std::shared_ptr<std::shared_timed_mutex>> latches_ GUARDED_BY(latch_mu_);

  TimestampOracle ts_{[this] { return catalog_->NextTimestamp(); }};

  Mutex sessions_mu_;
  std::map<std::string, int> sessions_ GUARDED_BY(sessions_mu_);
  std::atomic<uint64_t> next_txn_{1};
  Mutex txn_mu_;
  // Between first prepare and the end of commit/abort.
  boost::container::flat_set<uint64_t> active_txns_ GUARDED_BY(txn_mu_);
  void ResolveInDoubt();
  // Cycles of row-lock waits through several nodes (from the latest heartbeats): the
  // youngest transaction of each is told 40P01 where it waits.
  void BreakDeadlocks();
  // After a one-phase commit of `txn` at `ts` on `node` failed once the request was handed
  // over: asks the node (waiting briefly for it to come back) whether it committed. OK if it
  // did; 57P03 if it cannot have (the process that got the request is gone); else 40003.
  Status SettleUnknownCommit(NodeId node, int old_pid, uint64_t txn, Timestamp ts);
  int NodePid(NodeId node);
  // In-doubt resolutions done: (node, txn) -> the heartbeat (in_doubt_seq) they answered.
  // Used by the maintenance thread only.
  std::map<std::pair<NodeId, uint64_t>, uint64_t> resolved_;
  // Logged commit decisions whose participants have not all confirmed yet.
  Mutex decisions_mu_;
  std::map<uint64_t, std::set<NodeId>> unconfirmed_ GUARDED_BY(decisions_mu_);
  // Distributed commits a node applied without a sync, per node: each confirmed once a
  // later RpcSyncWal answers from the process that applied it.
  struct UnsyncedCommit {
    uint64_t txn;
    Timestamp ts;
    uint64_t incarnation;  // 0: unknown (the reply was lost)
  };
  std::map<NodeId, std::vector<UnsyncedCommit>> unsynced_ GUARDED_BY(decisions_mu_);
  void Confirmed(uint64_t txn, NodeId node);
  // One round of RpcSyncWal to every node with unsynced commits (maintenance).
  void ConfirmUnsyncedCommits();
  // Unique index keys claimed by transactions: (table, index, key) -> transaction id.
  Mutex unique_mu_;
  CondVar unique_cv_;  // signalled when claims are released
  std::map<std::string, uint64_t> unique_claims_ GUARDED_BY(unique_mu_);
  // Releases `t`'s unique-key claims but its first `keep`.
  void ReleaseUniqueClaims(Transaction& t, size_t keep = 0);
  // BlockWrites with admin_mu_ held by the caller (no split can add a segment meanwhile).
  Result<std::unique_ptr<WriteBlock>> BlockWritesLocked(TableId table);
  bool HasUniqueIndex(TableId table) const;
  void EndTxn(Transaction& txn);
  Mutex admin_mu_;  // serializes moves, splits and drains (guards no data: held across calls)
  std::unique_ptr<NodeSupervisor> supervisor_;  // with manage_nodes: restarts crashed nodes
  Mutex operator_mu_;
  std::multiset<NodeId> operator_nodes_ GUARDED_BY(operator_mu_);
  std::thread maintenance_;
  std::atomic<rpc::LocalSegments*> local_segments_{nullptr};
  Mutex stop_mu_;
  CondVar stop_cv_;  // wakes maintenance
  bool stopping_ GUARDED_BY(stop_mu_) = false;
  bool split_wanted_ GUARDED_BY(stop_mu_) = false;  // a commit reported an oversized segment
};

}  // namespace wattdb::master
