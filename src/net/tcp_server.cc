#include "net/tcp_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/logging.h"

namespace wattdb::net {

TcpServer::TcpServer(std::string name, std::string host, uint16_t port, Handler handler)
    : name_(std::move(name)), host_(std::move(host)), port_(port), handler_(std::move(handler)) {}

TcpServer::~TcpServer() { Stop(); }

namespace {
// The TCP port a listening socket is bound to.
uint16_t BoundPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return 0;
}
}  // namespace

Status TcpServer::Start() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host_, ec);
  if (ec) return Status::InvalidArgument(fmt::format("{}: bad address '{}'", name_, host_));
  auto acc = std::make_unique<Acceptor>(io_);
  asio::generic::stream_protocol::endpoint ep(asio::ip::tcp::endpoint(addr, port_));
  acc->open(ep.protocol(), ec);
  // No child process may inherit a listening socket (a restarted server must bind again).
  if (!ec) fcntl(acc->native_handle(), F_SETFD, FD_CLOEXEC);
  if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc->bind(ep, ec);
  if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::IOError(
        fmt::format("{}: cannot listen on {}:{}: {}", name_, host_, port_, ec.message()));
  }
  port_ = BoundPort(acc->native_handle());
  if (local_alias_ && (addr.is_loopback() || addr.is_unspecified())) {
    // A server on every address answers loopback clients too: they name it 127.0.0.1.
    std::string as = addr.is_loopback() ? addr.to_string() : (addr.is_v4() ? "127.0.0.1" : "::1");
    int fd = ListenLocal(LocalAlias(as, port_));
    if (fd < 0) {
      return Status::IOError(fmt::format("{}: cannot listen on the local alias of {}:{}: {}", name_,
                                         as, port_, strerror(errno)));
    }
    local_acceptor_ = std::make_unique<Acceptor>(io_);
    local_acceptor_->assign(asio::generic::stream_protocol(AF_UNIX, 0), fd, ec);
    if (ec) {
      ::close(fd);
      local_acceptor_.reset();
      return Status::IOError(fmt::format("{}: local alias: {}", name_, ec.message()));
    }
  }
  acceptor_ = std::move(acc);
  accept_thread_ = std::thread([this] { AcceptLoop(acceptor_.get()); });
  if (local_acceptor_)
    local_accept_thread_ = std::thread([this] { AcceptLoop(local_acceptor_.get()); });
  Log("net")->info("listening service={} addr={}:{}{}", name_, host_, port_,
                   local_acceptor_ ? " (and local)" : "");
  return Status::OK();
}

void TcpServer::AcceptLoop(Acceptor* acceptor) {
  while (!stopping_) {
    auto sock = std::make_unique<Socket>(io_);
    boost::system::error_code ec;
    acceptor->accept(*sock, ec);
    if (stopping_) break;
    if (ec) {
      if (ec == asio::error::bad_descriptor || ec == asio::error::operation_aborted) break;
      Log("net")->warn("accept failed service={} err={}", name_, ec.message());
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    fcntl(sock->native_handle(), F_SETFD, FD_CLOEXEC);
    // Replies are written whole; Nagle would only hold back the last piece of one.
    if (acceptor != local_acceptor_.get()) sock->set_option(asio::ip::tcp::no_delay(true), ec);
    Reap();
    std::lock_guard<std::mutex> l(mu_);
    if (conns_.size() >= max_connections_) {
      Log("net")->warn("too many connections service={} limit={}; closing a new one", name_,
                       max_connections_);
      sock->close(ec);
      continue;
    }
    auto c = std::make_unique<Conn>();
    Conn* raw = c.get();
    c->socket = std::move(sock);
    c->thread = std::thread([this, raw] {
      handler_(*raw->socket);
      boost::system::error_code ignored;
      raw->socket->shutdown(Socket::shutdown_both, ignored);
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
  for (auto* acc : {acceptor_.get(), local_acceptor_.get()}) {
    if (!acc) continue;
    boost::system::error_code ec;
    // shutdown() unblocks a thread sitting in accept(); close() alone may not.
    ::shutdown(acc->native_handle(), SHUT_RDWR);
    acc->close(ec);
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  if (local_accept_thread_.joinable()) local_accept_thread_.join();
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
