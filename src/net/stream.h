// Stream: deadline-bounded I/O on a connected stream socket, for every socket WattDB reads or
// writes (cluster frames in net::Connection, PostgreSQL clients in the master).
//
// A read or write that would block waits in poll() for the time left before its deadline
// and fails with TimedOut after it. (Asio's blocking calls would wait forever, whatever
// SO_RCVTIMEO says: they poll again when a timeout ends a read; the Stream calls the system
// directly.) A stream made with Reads::kBlocking instead blocks a read in recv() with the
// socket's receive timeout (SO_RCVTIMEO) set to the time left, set again only when it
// changes: one system call per message where a poll() and a read took two (the master's
// sessions with SQL clients use it). Writes never block in the kernel (MSG_DONTWAIT).
// Shutting the socket down from another thread wakes a waiter at once.
//
// Reads are buffered: one system call takes whatever the peer has sent (up to kReadBuffer
// bytes), so a message's header and body, or a client's pipelined messages, cost one call.
// Everything that reads the socket must read through the Stream.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <utility>  // before asio: Boost 1.74 + C++20 needs std::exchange declared

#include <boost/asio.hpp>

#include "common/status.h"

namespace wattdb::net {

namespace asio = boost::asio;

// A connected stream socket: TCP, or a local (Unix-domain) socket between two processes of
// one host (see Connect).
using Socket = asio::generic::stream_protocol::socket;

class Stream {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  static Deadline In(int ms) {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  }

  enum class Reads { kPoll, kBlocking };
  // Borrows `socket` (which must outlive the Stream) and makes it close-on-exec, and
  // non-blocking unless `reads` is kBlocking. Nothing else may read or write it.
  explicit Stream(Socket& socket, Reads reads = Reads::kPoll);

  Status ReadExact(void* data, size_t n, Deadline deadline);
  Status WriteAll(const void* data, size_t n, Deadline deadline);
  // The same with a deadline `timeout_ms` from the moment the call must first wait: a read
  // the received bytes answer, or a write the socket takes at once, reads no clock.
  Status ReadExactWithin(void* data, size_t n, int timeout_ms);
  // Up to n bytes, at least one: what was received, or what arrives first within
  // `timeout_ms` (TimedOut if nothing does; IOError once the peer closed).
  Result<size_t> ReadSomeWithin(void* data, size_t n, int timeout_ms);
  Status WriteGatherWithin(std::span<const asio::const_buffer> bufs, int timeout_ms);
  // Writes up to three buffers as one (a frame header, its payload, its MAC).
  Status WriteAll(const void* a, size_t na, const void* b, size_t nb, Deadline deadline,
                  const void* c = nullptr, size_t nc = 0);
  // Writes `bufs` in order, as one (gathered: no copy into one buffer).
  Status WriteGather(std::span<const asio::const_buffer> bufs, Deadline deadline);
  // OK once a read would not wait for its first byte (data, or the peer closed); TimedOut
  // if nothing came before `deadline`.
  // (Reads::kBlocking: received bytes wait in the Stream's buffer.)
  Status WaitReadable(Deadline deadline);
  // The same with a deadline `timeout_ms` from the call.
  Status WaitReadableWithin(int timeout_ms);
  // For a stream with no conversation in progress: false if the peer closed it or sent
  // something unasked. Does not wait.
  bool LooksIdle();
  // While set (Reads::kPoll only), every wait also ends within kInterruptSliceMs of
  // *flag turning true: the call fails with 57014 (query_canceled), and the stream, maybe
  // half read, must be closed. Null: none. The flag is borrowed and outlives its setting.
  void SetInterrupt(const std::atomic<bool>* flag) { interrupt_ = flag; }
  static constexpr int kInterruptSliceMs = 50;
  // Bytes received and not yet read: a read of up to this many neither waits nor needs its
  // deadline.
  size_t buffered() const { return rend_ - rpos_; }

  const std::string& peer() const { return peer_; }
  Socket& socket() { return socket_; }
  // True for a local socket and for TCP from a loopback address.
  bool PeerIsLoopback() const { return peer_loopback_; }
  // True for a Unix-domain socket: its bytes pass between two processes of this host
  // through the kernel, where no third party can read, change or add any.
  bool IsLocalSocket() const { return peer_ == "local"; }

 private:
  // A deadline, or a timeout that becomes one when first asked for.
  class Due {
   public:
    Due(Deadline d) : at_(d), known_(true) {}  // implicit: every Deadline is one
    explicit Due(int timeout_ms) : ms_(timeout_ms) {}
    Deadline at() {
      if (!known_) at_ = In(ms_);
      known_ = true;
      return at_;
    }

   private:
    Deadline at_{};
    int ms_ = 0;
    bool known_ = false;
  };
  // Waits until `events` (POLLIN or POLLOUT) or the deadline.
  Status Wait(short events, Due& due, const char* what);
  Status Read(void* data, size_t n, Due due);
  Status Write(std::span<const asio::const_buffer> bufs, Due due);

  // Reads what the socket has, up to n bytes and at least one (waiting until `due`).
  Result<size_t> ReadSome(char* p, size_t n, Due& due);
  // Reads::kBlocking: ReadSome's work, blocking in recv().
  Result<size_t> ReceiveSome(char* p, size_t n, Due& due);
  // Sets the receive timeout to about the time left before `due` (unless it already is);
  // TimedOut if none is left.
  Status SetReceiveTimeout(Due& due);
  // WaitReadable and WaitReadableWithin.
  Status WaitReadable(Due due);
  // WaitReadable's work for Reads::kBlocking: reads what arrives first into the buffer (the
  // peer's close or a failure are left to the next read).
  Status AwaitBytes(Due due);

  static constexpr size_t kReadBuffer = 16 << 10;
  Socket& socket_;
  std::string peer_;
  bool peer_loopback_ = false;
  std::unique_ptr<char[]> rbuf_;  // bytes [rpos_, rend_) were received and not yet read
  size_t rpos_ = 0, rend_ = 0;
  bool readable_ = false;    // the last poll for reading said bytes (or an end) are there
  const bool blocking_;      // Reads::kBlocking
  int64_t rcvtimeo_us_ = 0;  // kBlocking: the socket's receive timeout now (0: none set yet)
  const std::atomic<bool>* interrupt_ = nullptr;
};

// The name of the local socket a server listening on the loopback address `host` (in its
// canonical form, as asio prints it), TCP `port`,
// may also accept on: a Linux abstract socket name (nothing is left in the file system), private
// to the network namespace, i.e. to the host, as the loopback address is. Unique while that
// server holds the TCP address.
std::string LocalAlias(const std::string& host, uint16_t port);

// A listening local socket named `name` (close-on-exec), or -1 with errno set.
int ListenLocal(const std::string& name);

// Connects to host:port (a numeric address) within `timeout_ms`; the socket is close-on-exec.
// For a loopback host it first tries the port's local alias (a Unix-domain socket is about a
// third cheaper per round trip than loopback TCP) and uses TCP if no server accepts there.
Result<Socket> Connect(asio::io_context& io, const std::string& host, uint16_t port,
                       int timeout_ms);
// Connects over TCP only.
Result<Socket> ConnectTcp(asio::io_context& io, const std::string& host, uint16_t port,
                          int timeout_ms);

}  // namespace wattdb::net
