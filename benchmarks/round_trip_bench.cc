// The floor under every statement that crosses a process boundary: two processes on this
// machine pass a small message back and forth over loopback TCP (net::Stream, as the master,
// nodes and PostgreSQL clients do) or, with --local, over a Unix-domain socket (as the master
// and nodes of one host do), and the program reports the wall time and the CPU time both
// processes spent per round trip. A statement that needs k round trips more than
// PostgreSQL's one (client <-> backend) costs at least k times this CPU more.
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "net/stream.h"

namespace {

using wattdb::net::Socket;
using wattdb::net::Stream;
namespace asio = boost::asio;

double CpuSeconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Echoes `n` messages of `size` bytes on `s`.
int Echo(Socket& sock, int n, size_t size) {
  Stream s(sock);
  std::vector<char> buf(size);
  for (int i = 0; i < n; i++) {
    if (!s.ReadExact(buf.data(), size, Stream::In(10000)).ok()) return 1;
    if (!s.WriteAll(buf.data(), size, Stream::In(10000)).ok()) return 1;
  }
  return 0;
}

// Sends `n` messages of `size` bytes on `s`, each after the echo of the one before.
int Ping(Socket& sock, int n, size_t size) {
  Stream s(sock);
  std::vector<char> buf(size, 'x');
  for (int i = 0; i < n; i++) {
    if (!s.WriteAll(buf.data(), size, Stream::In(10000)).ok()) return 1;
    if (!s.ReadExact(buf.data(), size, Stream::In(10000)).ok()) return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 100000, pairs = 1;
  size_t size = 64;
  bool local = false;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: wattdb-round-trip-bench [--round-trips N] [--bytes B] [--pairs P] [--local]\n"
          "P pairs of processes each pass a B-byte message back and forth N times over loopback\n"
          "TCP, or with --local over a Unix-domain socket (defaults: 100000 round trips, 64 "
          "bytes,\n"
          "1 pair) and print the round trips per second and the CPU time of all of them per\n"
          "round trip.\n");
      return 0;
    }
    if (a == "--round-trips" && i + 1 < argc) {
      n = std::atoi(argv[++i]);
    } else if (a == "--pairs" && i + 1 < argc) {
      pairs = std::atoi(argv[++i]);
    } else if (a == "--local") {
      local = true;
    } else if (a == "--bytes" && i + 1 < argc) {
      size = static_cast<size_t>(std::atoll(argv[++i]));
    } else {
      std::fprintf(stderr, "unknown argument %s (see --help)\n", a.c_str());
      return 2;
    }
  }
  if (n <= 0 || pairs <= 0 || pairs > 64 || size == 0 || size > (1 << 20)) {
    std::fprintf(
        stderr,
        "--round-trips must be positive, --pairs within 1..64 and --bytes within 1..1048576\n");
    return 2;
  }
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io,
                                   asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  uint16_t port = acceptor.local_endpoint().port();
  // Each pair: a pinger process and an echo process, both children of this one.
  std::vector<pid_t> children;
  auto fail = [&](const char* what) {
    std::perror(what);
    for (pid_t c : children) kill(c, SIGKILL);
    for (pid_t c : children) waitpid(c, nullptr, 0);
    return 1;
  };
  int pipefd[2];  // the pingers wait for one start signal, so that they overlap
  if (pipe(pipefd) != 0) return fail("pipe");
  for (int p = 0; p < pairs; p++) {
    int pair[2] = {-1, -1};  // --local: the two ends of a connected Unix-domain socket
    if (local && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
      return fail("socketpair");
    auto adopt = [](asio::io_context& cio, int fd) {
      Socket sock(cio);
      sock.assign(asio::generic::stream_protocol(AF_UNIX, 0), fd);
      return sock;
    };
    pid_t echo = fork();
    if (echo < 0) return fail("fork");
    if (echo == 0) {
      asio::io_context cio;
      if (local) {
        close(pair[1]);
        Socket sock = adopt(cio, pair[0]);
        _exit(Echo(sock, n, size));
      }
      asio::ip::tcp::socket tcp(cio);
      acceptor.accept(tcp);
      tcp.set_option(asio::ip::tcp::no_delay(true));
      Socket sock(std::move(tcp));
      _exit(Echo(sock, n, size));
    }
    children.push_back(echo);
    pid_t ping = fork();
    if (ping < 0) return fail("fork");
    if (ping == 0) {
      acceptor.close();
      asio::io_context cio;
      Socket sock(cio);
      if (local) {
        close(pair[0]);
        sock = adopt(cio, pair[1]);
      } else {
        auto tcp = wattdb::net::ConnectTcp(cio, "127.0.0.1", port, 5000);
        if (!tcp.ok()) _exit(1);
        sock = std::move(*tcp);
        sock.set_option(asio::ip::tcp::no_delay(true));
      }
      char go;
      if (read(pipefd[0], &go, 1) != 1) _exit(1);
      _exit(Ping(sock, n, size));
    }
    children.push_back(ping);
    if (local) {
      close(pair[0]);
      close(pair[1]);
    }
  }
  acceptor.close();
  auto t0 = std::chrono::steady_clock::now();
  std::string go(static_cast<size_t>(pairs), 'g');
  if (write(pipefd[1], go.data(), go.size()) != static_cast<ssize_t>(go.size()))
    return fail("write");
  bool ok = true;
  for (pid_t c : children) {
    int status = 0;
    waitpid(c, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = CpuSeconds(RUSAGE_CHILDREN);
  double trips = static_cast<double>(n) * pairs;
  std::printf(
      "%s, %d pair(s), %d round trips each of %zu bytes: %.0f round trips/s, %.2f us CPU per round "
      "trip\n",
      local ? "local socket" : "loopback TCP", pairs, n, size, trips / wall, cpu / trips * 1e6);
  return ok ? 0 : 1;
}
