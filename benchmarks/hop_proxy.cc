// The floor under a statement that passes through one more process: a forwarder that does
// nothing but copy bytes between a PostgreSQL client and a server, one thread per client
// connection (as the master serves its sessions), reaching the server over a Unix-domain socket
// (as the master reaches a node of its own host). PostgreSQL behind it does the work of a
// statement once, as before; what the forwarder adds is one more process that every message
// wakes, twice per round trip: the cost a master in front of a node pays before doing anything.
// benchmarks/oltp_vs_postgres.sh --forwarder runs pgbench through it.
#include <poll.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "net/stream.h"
#include "net/tcp_server.h"

namespace {

namespace asio = boost::asio;
using wattdb::Status;
using wattdb::net::Socket;
using wattdb::net::Stream;

constexpr int kIdleMs = 600000;  // a connection quiet this long is closed
constexpr int kIoMs = 30000;     // a write that cannot finish in this time fails

std::atomic<bool> g_stop{false};

// Copies what `from` has (at least one byte, or sees its end) to `to`. False when either
// side closed or failed.
bool Forward(Socket& from, Stream& to, char* buf, size_t cap) {
  boost::system::error_code ec;
  size_t n = from.read_some(asio::buffer(buf, cap), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) return true;
  if (ec || n == 0) return false;
  return to.WriteAll(buf, n, Stream::In(kIoMs)).ok();
}

void Serve(Socket& client, const std::string& unix_path) {
  asio::io_context io;
  asio::local::stream_protocol::socket up(io);
  boost::system::error_code ec;
  up.connect(asio::local::stream_protocol::endpoint(unix_path),
             ec);  // a local connect does not wait
  if (ec) {
    std::fprintf(stderr, "connect %s: %s\n", unix_path.c_str(), ec.message().c_str());
    return;
  }
  Socket server(io, asio::generic::stream_protocol(AF_UNIX, 0), up.release());
  Stream cs(client), ss(server);  // non-blocking, with deadlines for writes
  static constexpr size_t kBuf = 64 << 10;
  std::unique_ptr<char[]> buf(new char[kBuf]);
  pollfd fds[2] = {{client.native_handle(), POLLIN, 0}, {server.native_handle(), POLLIN, 0}};
  while (!g_stop) {
    int rc = ::poll(fds, 2, kIdleMs);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return;  // idle past its deadline, or poll failed
    if (fds[0].revents && !Forward(client, ss, buf.get(), kBuf)) return;
    if (fds[1].revents && !Forward(server, cs, buf.get(), kBuf)) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  std::string to;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: wattdb-hop-proxy --port P --to-unix PATH\n"
          "Accepts TCP connections on 127.0.0.1:P and forwards each, byte for byte, to the\n"
          "Unix-domain socket PATH (a PostgreSQL server's .s.PGSQL.<port>), one thread per\n"
          "connection. Runs until SIGINT or SIGTERM.\n");
      return 0;
    }
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else if (a == "--to-unix" && i + 1 < argc) {
      to = argv[++i];
    } else {
      std::fprintf(stderr, "unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (port <= 0 || port > 65535 || to.empty()) {
    std::fprintf(stderr, "--port (1..65535) and --to-unix are required (see --help)\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // every thread inherits the mask
  wattdb::net::TcpServer server("forwarder", "127.0.0.1", static_cast<uint16_t>(port),
                                [&](Socket& s) { Serve(s, to); });
  if (Status st = server.Start(); !st.ok()) {
    std::fprintf(stderr, "listen on 127.0.0.1:%d: %s\n", port, st.ToString().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  g_stop = true;
  server.Stop();  // shuts every connection down, which wakes its poll
  return 0;
}
