// NodeClient: the master's pool of connections to one node's data port.
// Acquire() lends a connection; a lease whose conversation ended cleanly goes back to the
// pool, one that failed mid-stream is dropped. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/schema.h"
#include "net/connection.h"

namespace wattdb::master {

class NodeClient {
 public:
  NodeClient(NodeId id, std::string host, uint16_t port);
  ~NodeClient();

  class Lease {
   public:
    Lease(NodeClient* owner, std::unique_ptr<net::Connection> c) : owner_(owner), conn_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease();
    net::Connection& conn() { return *conn_; }
    // Marks the connection unusable (a stream was abandoned or an I/O error happened).
    void Poison() { poisoned_ = true; }

   private:
    NodeClient* owner_;  // borrowed; the client outlives its leases
    std::unique_ptr<net::Connection> conn_;
    bool poisoned_ = false;
  };

  Result<Lease> Acquire();
  // Sends one request and returns its single response (status not interpreted).
  Result<std::unique_ptr<net::ReceivedMessage>> Call(capnp::MessageBuilder& req);
  // Drops pooled connections (the node went down or changed address).
  void Reset(const std::string& host, uint16_t port);
  NodeId id() const { return id_; }

 private:
  NodeId id_;
  std::mutex mu_;  // guards host_, port_, idle_
  std::string host_;
  uint16_t port_;
  std::vector<std::unique_ptr<net::Connection>> idle_;
  net::asio::io_context io_;
};

}  // namespace wattdb::master
