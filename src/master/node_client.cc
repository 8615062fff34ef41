#include "master/node_client.h"

namespace wattdb::master {

NodeClient::NodeClient(NodeId id, std::string host, uint16_t port)
    : id_(id), host_(std::move(host)), port_(port) {}

NodeClient::~NodeClient() { idle_.clear(); }

NodeClient::Lease::~Lease() {
  if (!conn_ || !owner_) return;
  if (poisoned_) return;
  std::lock_guard<std::mutex> l(owner_->mu_);
  if (owner_->idle_.size() < 16) owner_->idle_.push_back(std::move(conn_));
}

Result<NodeClient::Lease> NodeClient::Acquire() {
  std::string host;
  uint16_t port;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(c));
    }
    host = host_;
    port = port_;
  }
  auto c = net::Connection::Connect(io_, host, port);
  if (!c.ok()) return c.status().Prepend(fmt::format("node {}", id_));
  (*c)->SetTimeouts(120000, 120000);
  return Lease(this, std::move(c).value());
}

Result<std::unique_ptr<net::ReceivedMessage>> NodeClient::Call(capnp::MessageBuilder& req) {
  ASSIGN_OR_RETURN(Lease lease, Acquire());
  Status s = lease.conn().Send(req);
  if (!s.ok()) {
    lease.Poison();
    return s.Prepend(fmt::format("node {}", id_));
  }
  auto r = lease.conn().Receive();
  if (!r.ok()) {
    lease.Poison();
    return r.status().Prepend(fmt::format("node {}", id_));
  }
  return r;
}

void NodeClient::Reset(const std::string& host, uint16_t port) {
  std::lock_guard<std::mutex> l(mu_);
  host_ = host;
  port_ = port;
  idle_.clear();
}

}  // namespace wattdb::master
