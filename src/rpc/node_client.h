// NodeClient: a pool of connections to one node's data port (the master's to every node, a
// helper node's to the nodes whose segments it reads).
// Acquire() lends a connection; a lease whose conversation ended cleanly goes back to the
// pool, one that failed mid-stream is dropped. Every connect and every frame has a
// deadline (connect_ms, io_ms). Reset() (the node went down or re-registered) closes every
// connection, pooled or lent, so calls in flight to a dead node fail at once instead of
// waiting for their deadline, and no connection to an old incarnation is reused.
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/schema.h"
#include "net/connection.h"

namespace wattdb::rpc {

struct NodeClientOptions {
  int connect_ms = net::kDefaultConnectTimeoutMs;
  int io_ms = net::kDefaultIoTimeoutMs;
  const net::ClusterKey* key = nullptr;  // borrowed; connections authenticate with it (required)
  // Told the node CPU each reply of Call and ScanStream reports (statement energy accounting);
  // called on the caller's thread. Optional.
  std::function<void(NodeId, uint64_t cpu_nanos)> on_cpu;
  // Told each follower a commit's reply names as having missed the commit's writes of a
  // segment this node leads (Response.replicaFailures), before the caller sees the reply; a
  // failure here fails the call (the commit is not to be acknowledged). Optional.
  std::function<Status(SegmentId, NodeId follower, const std::string& why)> on_replica_failure;
};

class NodeClient {
 public:
  NodeClient(NodeId id, std::string host, uint16_t port, NodeClientOptions opts = {});
  ~NodeClient();

  class Lease {
   public:
    Lease(NodeClient* owner, std::unique_ptr<net::Connection> c, uint64_t generation);
    Lease(Lease&& o) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    net::Connection& conn() { return *conn_; }
    // Marks the connection unusable (a stream was abandoned or an I/O error happened).
    void Poison() { poisoned_ = true; }

   private:
    friend class NodeClient;
    NodeClient* owner_;  // borrowed; the client outlives its leases
    std::unique_ptr<net::Connection> conn_;
    uint64_t generation_;
    bool poisoned_ = false;
    // An in-process call's other end (SetInline), which the caller's thread serves.
    std::unique_ptr<net::Connection> server_;
  };

  Result<Lease> Acquire();

  // A request sent whose reply is still to be read: Call in two halves, so that requests to
  // several nodes are all on their way before the first reply is awaited. Destroyed without
  // Finish, its connection is dropped (the unread reply must not reach the next borrower).
  class Pending {
   public:
    Pending(Pending&& o) noexcept = default;
    Pending& operator=(Pending&&) = delete;
    ~Pending();
    // The reply (status not interpreted), within the connection's deadline. Once.
    Result<std::unique_ptr<net::ReceivedMessage>> Finish();

   private:
    friend class NodeClient;
    Pending(NodeClient* owner, Lease lease) : owner_(owner), lease_(std::move(lease)) {}
    NodeClient* owner_;  // borrowed
    Lease lease_;
    bool finished_ = false;
  };
  // Sends one request; `delivered` as in Call.
  Result<Pending> Start(capnp::MessageBuilder& req, int io_ms = 0, bool* delivered = nullptr);
  // Sends one request and returns its single response (status not interpreted).
  // `io_ms` > 0 overrides the reply deadline (long operations such as segment pulls).
  // `delivered` (optional) is set once the whole request was handed to the node: after a
  // failure it tells "the node may have acted on it" (true) from "it cannot have" (false).
  Result<std::unique_ptr<net::ReceivedMessage>> Call(capnp::MessageBuilder& req, int io_ms = 0,
                                                     bool* delivered = nullptr);
  // Closes every connection (the node went down or changed address).
  void Reset(const std::string& host, uint16_t port);

  // The node lives in this process (the master node): `serve` reads one request from the
  // connection it is given, handles it and replies there (false: the connection must close).
  // Call and Start then run requests that get one small reply (prepare, key update, commit,
  // abort, rollback, outcome, sync, break wait, GC horizon) through `serve` on the caller's
  // thread, over an in-memory pair (net::MemoryPair): no thread is woken, no system call
  // made. Every other request
  // (scans, splits, pulls, listings) still goes to the node's data port. Set once, before use.
  using InlineServe = std::function<bool(net::Connection& server)>;
  void SetInline(InlineServe serve);
  // True once SetInline was called: Start of a small request returns after the node's work.
  bool InProcess();
  NodeId id() const { return id_; }
  int io_ms() const { return opts_.io_ms; }
  // A node in this process (SetInline) books nothing: its CPU is this process's own.
  Status ReplicaFailed(SegmentId seg, NodeId follower, const std::string& why) const {
    return opts_.on_replica_failure ? opts_.on_replica_failure(seg, follower, why) : Status::OK();
  }
  void BookCpu(uint64_t cpu_nanos) const {
    if (opts_.on_cpu && cpu_nanos && !in_process_) opts_.on_cpu(id_, cpu_nanos);
  }

 private:
  // First: it outlives every connection made on it (destroying a socket touches its context).
  net::asio::io_context io_;
  NodeId id_;
  NodeClientOptions opts_;
  Mutex mu_;
  std::string host_ GUARDED_BY(mu_);
  uint16_t port_ GUARDED_BY(mu_);
  uint64_t generation_ GUARDED_BY(mu_) = 0;  // bumped by Reset
  struct Idle {
    std::unique_ptr<net::Connection> conn;
    std::chrono::steady_clock::time_point since;
  };
  std::vector<Idle> idle_ GUARDED_BY(mu_);
  std::set<net::Connection*> lent_ GUARDED_BY(mu_);
  // SetInline: the handler, and idle in-memory pairs (client end, server end).
  InlineServe inline_;                   // set once (under mu_), read once in_process_ says so
  std::atomic<bool> in_process_{false};  // inline_ is set
  std::vector<std::pair<std::unique_ptr<net::Connection>, std::unique_ptr<net::Connection>>>
      inline_idle_;
  // An in-memory pair for an in-process call (pooled, else new).
  Result<Lease> AcquireInline();
};

}  // namespace wattdb::rpc
