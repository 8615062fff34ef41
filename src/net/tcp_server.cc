#include "net/tcp_server.h"

#include <fcntl.h>

#include "common/logging.h"

namespace wattdb::net {

TcpServer::TcpServer(std::string name, std::string host, uint16_t port, Handler handler)
    : name_(std::move(name)), host_(std::move(host)), port_(port), handler_(std::move(handler)) {}

TcpServer::~TcpServer() { Stop(); }

Status TcpServer::Start() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host_, ec);
  if (ec) return Status::InvalidArgument(fmt::format("{}: bad address '{}'", name_, host_));
  auto acc = std::make_unique<asio::ip::tcp::acceptor>(io_);
  asio::ip::tcp::endpoint ep(addr, port_);
  acc->open(ep.protocol(), ec);
  // No child process may inherit a listening socket (a restarted server must bind again).
  if (!ec) fcntl(acc->native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError(fmt::format("{}: cannot listen on {}:{}: {}", name_, host_, port_,
                                       ec.message()));
  }
  port_ = acc->local_endpoint().port();
  acceptor_ = std::move(acc);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  Log("net")->info("listening service={} addr={}:{}", name_, host_, port_);
  return Status::OK();
}

void TcpServer::AcceptLoop() {
  while (!stopping_) {
    auto sock = std::make_unique<asio::ip::tcp::socket>(io_);
    boost::system::error_code ec;
    acceptor_->accept(*sock, ec);
    if (stopping_) break;
    if (ec) {
      if (ec == asio::error::bad_descriptor || ec == asio::error::operation_aborted) break;
      Log("net")->warn("accept failed service={} err={}", name_, ec.message());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    fcntl(sock->native_handle(), F_SETFD, FD_CLOEXEC);
    // Replies are written whole; Nagle would only hold back the last piece of one.
    sock->set_option(asio::ip::tcp::no_delay(true), ec);
    Reap();
    std::lock_guard<std::mutex> l(mu_);
    if (conns_.size() >= max_connections_) {
      Log("net")->warn("too many connections service={} limit={}; closing a new one", name_, max_connections_);
      sock->close(ec);
      continue;
    }
    auto c = std::make_unique<Conn>();
    Conn* raw = c.get();
    c->socket = std::move(sock);
    c->thread = std::thread([this, raw] {
      handler_(*raw->socket);
      boost::system::error_code ignored;
      raw->socket->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
      raw->done = true;
    });
    conns_.push_back(std::move(c));
  }
}

void TcpServer::Reap() {
  std::list<std::unique_ptr<Conn>> finished;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = conns_.begin(); it != conns_.end();) {
      if ((*it)->done) {
        finished.push_back(std::move(*it));
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& c : finished) c->thread.join();
}

void TcpServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_) {
    boost::system::error_code ec;
    // shutdown() unblocks a thread sitting in accept(); close() alone may not.
    ::shutdown(acceptor_->native_handle(), SHUT_RDWR);
    acceptor_->close(ec);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  std::list<std::unique_ptr<Conn>> all;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto& c : conns_) {
      ::shutdown(c->socket->native_handle(), SHUT_RDWR);
    }
    all.swap(conns_);
  }
  for (auto& c : all) c->thread.join();
}

}  // namespace wattdb::net
