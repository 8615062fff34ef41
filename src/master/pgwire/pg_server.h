// PgServer: accepts PostgreSQL clients (psql, libpq, drivers) on the master's SQL port.
// Each connection is a session on its own thread running the simple query protocol.
// Bytes that break the protocol close that connection only. Thread-safe.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>

#include "common/mutex.h"
#include "common/timer_service.h"
#include "master/cluster/cluster.h"
#include "master/energy/energy_service.h"
#include "master/pgwire/auth.h"
#include "net/tcp_server.h"

namespace wattdb::master {

class StartupReader;

class PgServer {
 public:
  PgServer(Cluster& cluster, EnergyService& energy, std::string host, uint16_t port);
  ~PgServer();
  Status Start();
  void Stop();
  uint16_t port() const { return server_ ? server_->port() : 0; }

 private:
  struct SessionKey {
    int32_t secret;
    std::shared_ptr<std::atomic<bool>> cancel;
  };
  void Serve(net::Socket& socket);
  // A CancelRequest: sets the cancel flag of session `pid` if `secret` is its key.
  void Cancel(int32_t pid, int32_t secret) EXCLUDES(mu_);
  // Runs the password exchange the config asks for; an error (28P01, 08P01) is FATAL.
  Status Authenticate(net::Stream& socket, StartupReader& in, const std::string& user);

  Cluster& cluster_;       // borrowed
  EnergyService& energy_;  // borrowed
  std::string host_;
  uint16_t port_;
  std::unique_ptr<net::TcpServer> server_;
  Mutex mu_;
  std::map<int32_t, SessionKey> sessions_ GUARDED_BY(mu_);
  int32_t next_pid_ GUARDED_BY(mu_) = 1000;
  std::mt19937 rng_ GUARDED_BY(mu_){std::random_device{}()};
  std::map<std::string, auth::Credentials>
      config_users_;     // from [[auth.user]]; read-only after construction
  TimerService timers_;  // statement timeouts of every session
};

}  // namespace wattdb::master
