// TcpServer: accepts connections on host:port and runs `handler` for each one on its own
// thread. Used for every listening socket in WattDB (pg wire, cluster port, node data port).
// With set_local_alias, it also accepts on the port's local socket (net::LocalAlias), which
// net::Connect prefers for loopback hosts: the same handler serves both.
//
// Start() binds and begins accepting; Stop() closes the listener, shuts down every live
// connection (unblocking handlers), and joins all threads. Stop() is idempotent and is also
// run by the destructor. Handlers must return when their connection fails.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio.hpp>

#include "common/status.h"
#include "net/connection.h"

namespace wattdb::net {

class TcpServer {
 public:
  // Runs on the connection's own thread. The socket belongs to the server: borrow it
  // (e.g. Connection(&socket)), never move it.
  using Handler = std::function<void(Socket&)>;

  TcpServer(std::string name, std::string host, uint16_t port, Handler handler);
  ~TcpServer();

  Status Start();
  void Stop();
  // Connections served at once; one accepted beyond this is closed at once (and logged).
  // 0 (default) = 4096. Set before Start().
  void set_max_connections(size_t n) { max_connections_ = n; }
  // Also accept on the port's local alias (only if the TCP address is loopback or any).
  // Set before Start(); Start fails if another process holds the alias.
  void set_local_alias(bool on) { local_alias_ = on; }
  // The bound port (useful when constructed with port 0).
  uint16_t port() const { return port_; }

 private:
  using Acceptor = asio::basic_socket_acceptor<asio::generic::stream_protocol>;
  void AcceptLoop(Acceptor* acceptor);
  void Reap();  // joins finished connection threads

  struct Conn {
    std::thread thread;
    std::unique_ptr<Socket> socket;
    std::atomic<bool> done{false};
  };

  std::string name_, host_;
  uint16_t port_;
  Handler handler_;
  asio::io_context io_;
  bool local_alias_ = false;
  std::unique_ptr<Acceptor> acceptor_, local_acceptor_;
  std::thread accept_thread_, local_accept_thread_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // guards conns_
  std::list<std::unique_ptr<Conn>> conns_;
  size_t max_connections_ = 4096;
};

}  // namespace wattdb::net
