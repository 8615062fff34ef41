#include "rpc/node_client.h"

#include "common/sqlstate.h"
#include "proto/node_service.capnp.h"

namespace wattdb::rpc {

NodeClient::NodeClient(NodeId id, std::string host, uint16_t port, NodeClientOptions opts)
    : id_(id), opts_(std::move(opts)), host_(std::move(host)), port_(port) {}

NodeClient::~NodeClient() {
  idle_.clear();
  inline_idle_.clear();
}

NodeClient::Lease::Lease(NodeClient* owner, std::unique_ptr<net::Connection> c, uint64_t generation)
    : owner_(owner), conn_(std::move(c)), generation_(generation) {}

NodeClient::Lease::Lease(Lease&& o) noexcept
    : owner_(o.owner_),
      conn_(std::move(o.conn_)),
      generation_(o.generation_),
      poisoned_(o.poisoned_),
      server_(std::move(o.server_)) {
  o.owner_ = nullptr;
}

NodeClient::Lease::~Lease() {
  if (!conn_ || !owner_) return;
  MutexLock l(owner_->mu_);
  if (server_) {
    // An in-process pair: back to its own pool unless a call on it went wrong (a byte left
    // in either direction would reach the next caller).
    if (!poisoned_ && owner_->inline_idle_.size() < 16) {
      owner_->inline_idle_.emplace_back(std::move(conn_), std::move(server_));
    }
    return;
  }
  owner_->lent_.erase(conn_.get());
  if (poisoned_ || generation_ != owner_->generation_) return;
  conn_->SetTimeouts(owner_->opts_.io_ms, owner_->opts_.io_ms);
  if (owner_->idle_.size() < 16)
    owner_->idle_.push_back({std::move(conn_), std::chrono::steady_clock::now()});
}

Result<NodeClient::Lease> NodeClient::Acquire() {
  // No system call under mu_ (every statement's scans pass through it): a pooled
  // connection is taken out under it and checked (a poll) or closed after.
  std::string host;
  uint16_t port = 0;
  uint64_t generation = 0;
  while (true) {
    std::unique_ptr<net::Connection> c;
    std::vector<std::unique_ptr<net::Connection>> retired;  // closed outside mu_
    {
      MutexLock l(mu_);
      auto now = std::chrono::steady_clock::now();
      while (!idle_.empty() && !c) {
        bool fresh = now - idle_.back().since < std::chrono::milliseconds(net::kPoolIdleMs);
        (fresh ? c : retired.emplace_back()) = std::move(idle_.back().conn);
        idle_.pop_back();
      }
      generation = generation_;
      if (c) {
        lent_.insert(c.get());  // from here on Reset closes it too
      } else {
        host = host_;
        port = port_;
      }
    }
    retired.clear();
    if (!c) break;
    if (c->LooksIdle()) return Lease(this, std::move(c), generation);
    // The node closed it (or it holds unexpected bytes): drop it, try the next one.
    Lease dropped(this, std::move(c), generation);
    dropped.Poison();
  }
  auto c = net::Connection::Connect(io_, host, port, opts_.connect_ms);
  if (!c.ok()) return c.status().Prepend(fmt::format("node {}", id_));
  if (opts_.key) {
    Status a = (*c)->Authenticate(*opts_.key, net::Connection::Role::kClient, opts_.connect_ms);
    if (!a.ok()) return a.Prepend(fmt::format("node {}", id_));
  }
  (*c)->SetTimeouts(opts_.io_ms, opts_.io_ms);
  MutexLock l(mu_);
  if (generation != generation_) {
    return Status(Status::Code::kUnavailable, fmt::format("node {} went down", id_),
                  sqlstate::kCannotConnectNow);
  }
  lent_.insert(c->get());
  return Lease(this, std::move(c).value(), generation);
}

namespace {

// Requests of the kinds whose one reply is small and that the node answers from its own
// state.
bool InlineKind(capnp::MessageBuilder& req) {
  switch (req.getRoot<proto::Request>().which()) {
    case proto::Request::PING:
    case proto::Request::PREPARE:
    case proto::Request::UPDATE_KEY:
    case proto::Request::COMMIT:
    case proto::Request::SYNC_WAL:
    case proto::Request::ABORT:
    case proto::Request::ROLLBACK_TO:
    case proto::Request::BREAK_WAIT:
    case proto::Request::OUTCOME:
    case proto::Request::GC_HORIZON:
      return true;
    default:
      return false;
  }
}

}  // namespace

void NodeClient::SetInline(InlineServe serve) {
  MutexLock l(mu_);
  inline_ = std::move(serve);
  in_process_.store(true, std::memory_order_release);  // inline_ is never changed again
}

bool NodeClient::InProcess() { return in_process_.load(std::memory_order_acquire); }

Result<NodeClient::Lease> NodeClient::AcquireInline() {
  std::pair<std::unique_ptr<net::Connection>, std::unique_ptr<net::Connection>> pair;
  {
    MutexLock l(mu_);
    if (!inline_idle_.empty()) {
      pair = std::move(inline_idle_.back());
      inline_idle_.pop_back();
    }
  }
  if (!pair.first) pair = net::MemoryPair(io_);
  Lease lease(this, std::move(pair.first), 0);  // a pair outlives node restarts: no generation
  lease.server_ = std::move(pair.second);
  return lease;
}

Result<NodeClient::Pending> NodeClient::Start(capnp::MessageBuilder& req, int io_ms,
                                              bool* delivered) {
  if (delivered) *delivered = false;
  if (InProcess() && InlineKind(req)) {
    ASSIGN_OR_RETURN(Lease in_process, AcquireInline());
    Status s = in_process.conn().Send(req);
    if (!s.ok()) {
      in_process.Poison();
      return s.Prepend(fmt::format("node {}", id_));
    }
    if (delivered) *delivered = true;
    // The reply waits in the pair for Finish. A handler that gives up on the connection may
    // not have replied: closing its end makes Finish fail at once.
    if (!inline_(*in_process.server_)) {
      in_process.server_->Close();
      in_process.Poison();
    }
    return Pending(this, std::move(in_process));
  }
  ASSIGN_OR_RETURN(Lease lease, Acquire());
  if (io_ms > 0) lease.conn().SetTimeouts(io_ms, opts_.io_ms);
  Status s = lease.conn().Send(req);
  if (!s.ok()) {
    lease.Poison();
    return s.Prepend(fmt::format("node {}", id_));
  }
  if (delivered) *delivered = true;
  return Pending(this, std::move(lease));
}

NodeClient::Pending::~Pending() {
  if (!finished_) lease_.Poison();
}

Result<std::unique_ptr<net::ReceivedMessage>> NodeClient::Pending::Finish() {
  if (finished_) return Status::InvalidArgument("reply already read");
  finished_ = true;
  auto r = lease_.conn().Receive();
  if (!r.ok()) {
    lease_.Poison();
    return r.status().Prepend(fmt::format("node {}", owner_->id_));
  }
  try {
    owner_->BookCpu((*r)->Root<proto::Response>().getCpuNanos());
  } catch (const kj::Exception&) {
    // a malformed reply is the caller's to report
  }
  return r;
}

Result<std::unique_ptr<net::ReceivedMessage>> NodeClient::Call(capnp::MessageBuilder& req,
                                                               int io_ms, bool* delivered) {
  ASSIGN_OR_RETURN(Pending p, Start(req, io_ms, delivered));
  return p.Finish();
}

void NodeClient::Reset(const std::string& host, uint16_t port) {
  MutexLock l(mu_);
  host_ = host;
  port_ = port;
  generation_++;
  idle_.clear();
  for (net::Connection* c : lent_) c->Close();  // their owners see an error and drop them
}

}  // namespace wattdb::rpc
