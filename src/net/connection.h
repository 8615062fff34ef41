// Connection: one stream socket (TCP, or local between processes of one host) carrying framed
// messages, on a Boost.Asio socket.
//
// Frame = 4-byte little-endian payload length, 1-byte kind, payload.
//   kind 1: a Cap'n Proto message (messageToFlatArray layout; length is a multiple of 8)
//   kind 2: raw bytes (segment file contents), at most kMaxRawChunk per frame
//   kind 3: authentication handshake (net/cluster_auth.h)
// After Authenticate, every frame over TCP is followed by its MAC (see net/cluster_auth.h).
// Oversized, misaligned or unknown frames are protocol errors: the call fails with
// Corruption and the caller closes the connection.
//
// Deadlines: every Connect, Send and Receive finishes within its timeout or fails with
// TimedOut (net::Stream). A timed-out or failed connection must be closed: a frame may be
// half sent or read.
//
// Thread-compatible: one thread uses a Connection at a time. Close() may be called from
// another thread to unblock a reader or writer at once.
//
// MemoryPair: two connected Connections without a socket, for a caller that serves its own
// request on its own thread (the master's in-process node). Send hands the message to the
// other end; Receive takes what the other end sent, and fails at once if it sent nothing (no
// wait: nobody else could send it) or closed. Only messages (no raw or handshake frames).
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>  // before asio: Boost 1.74 + C++20 needs std::exchange declared

#include <boost/asio.hpp>
#include <capnp/message.h>
#include <capnp/serialize.h>

#include "common/status.h"
#include "net/cluster_auth.h"
#include "net/stream.h"

namespace wattdb::net {

constexpr size_t kMaxMessageBytes = 64u << 20;
constexpr size_t kMaxRawChunk = 1u << 20;
// Timeouts used unless a caller sets others.
constexpr int kDefaultConnectTimeoutMs = 3000;
constexpr int kDefaultIoTimeoutMs = 30000;
// Servers close connections idle longer than 10 minutes; pools retire theirs after this.
constexpr int kPoolIdleMs = 60000;

// A received Cap'n Proto message together with the buffer it reads from.
class ReceivedMessage {
 public:
  explicit ReceivedMessage(kj::Array<capnp::word> words);
  ReceivedMessage(const ReceivedMessage&) = delete;
  ReceivedMessage& operator=(const ReceivedMessage&) = delete;
  template <typename T>
  typename T::Reader Root() {
    return reader_->getRoot<T>();
  }

 private:
  kj::Array<capnp::word> words_;
  std::optional<capnp::FlatArrayMessageReader> reader_;  // reads words_ (in place: no allocation)
};

// Checks that `words` (a message frame's payload) holds a well-formed Cap'n Proto message
// layout (segment table consistent with the size) and wraps it for reading; Corruption if
// not. Receive runs every message through this; fields are validated lazily as read
// (readers throw kj::Exception on bad pointers, caught at the service boundary).
Result<std::unique_ptr<ReceivedMessage>> DecodeMessage(kj::Array<capnp::word> words);

// A Data field's value that points at `*bytes` instead of copying it into `msg` (for large
// payloads; Connection::Send writes it from where it lies). Pads `*bytes` with zeros to whole
// words; `*bytes` must stay unchanged until `msg` is sent. Copies if `*bytes` is misaligned.
capnp::Orphan<capnp::Data> ReferenceBlob(capnp::MessageBuilder& msg, std::string* bytes);

class Connection;
// Two connected in-memory Connections (see above). `io` only makes their (never opened)
// sockets; no I/O runs on it.
std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MemoryPair(
    asio::io_context& io);

class Connection {
 public:
  // Owns `socket`.
  explicit Connection(Socket socket);
  // Borrows `socket`, which must outlive the Connection (a TcpServer handler's socket: the
  // server keeps it so that Stop() can shut it down).
  explicit Connection(Socket* socket);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to host:port within `timeout_ms` (through the port's local alias if the host is
  // a loopback address and the server accepts there; see net::Connect). Fails with
  // Unavailable if the peer cannot be reached, TimedOut if it does not answer in time.
  static Result<std::unique_ptr<Connection>> Connect(asio::io_context& io, const std::string& host,
                                                     uint16_t port,
                                                     int timeout_ms = kDefaultConnectTimeoutMs);

  // Mutual authentication with the cluster key (see net/cluster_auth.h), within
  // `timeout_ms`; afterwards every frame is MAC'd, unless the stream is a local socket
  // (Stream::IsLocalSocket: only the two processes can write or read it). Fails with
  // Unauthenticated-style InvalidArgument ("peer is not a member of this cluster") if the
  // peer lacks the key.
  enum class Role { kClient, kServer };
  Status Authenticate(const ClusterKey& key, Role role, int timeout_ms);

  // Each later Send/SendRaw (Receive/ReceiveRaw) must complete within `send_ms` (`recv_ms`)
  // milliseconds; both must be positive.
  void SetTimeouts(int recv_ms, int send_ms);

  Status Send(capnp::MessageBuilder& msg);
  Result<std::unique_ptr<ReceivedMessage>> Receive();
  Status SendRaw(const char* data, size_t n);
  // Receives one raw frame into `out` (replacing its contents).
  Status ReceiveRaw(std::string* out);

  // For a connection with no conversation in progress: false if the peer closed it or sent
  // something unasked (it must not be reused). Does not wait.
  bool LooksIdle();
  // Waits up to `timeout_ms` for the peer to start sending (or close): OK when a Receive
  // would not wait for its first byte, TimedOut otherwise. For servers awaiting the next
  // request on an idle connection; the Receive that follows has its own deadline.
  Status WaitReadable(int timeout_ms);

  // Every later wait also ends soon after *flag turns true (see Stream::SetInterrupt);
  // null: none.
  void SetInterrupt(const std::atomic<bool>* flag) { stream_.SetInterrupt(flag); }

  // Shuts the socket down; safe to call from any thread, more than once.
  void Close();
  std::string peer() const { return pipe_ ? "this process" : stream_.peer(); }
  // A MemoryPair end: the other end runs in this thread.
  bool InMemory() const { return pipe_ != nullptr; }

 private:
  friend std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MemoryPair(
      asio::io_context& io);
  // What two MemoryPair ends share: the messages each sent and the other has not read.
  struct Pipe {
    std::mutex mu;  // Close may come from another thread
    std::deque<kj::Array<capnp::word>> sent[2];
    bool closed = false;
  };

  Status WriteFrame(uint8_t kind, const void* data, size_t n);
  // Reads the payload of a frame whose header was read, and checks its MAC.
  Status ReadPayload(const char* hdr, void* data, size_t n, Stream::Deadline deadline);
  Status SendHandshake(const std::string& bytes, Stream::Deadline deadline);
  Result<std::string> ReceiveHandshake(size_t n, Stream::Deadline deadline);
  // Reads a frame header; returns payload length and kind.
  Status ReadHeader(char* hdr, uint32_t* len, uint8_t* kind, Stream::Deadline deadline);

  std::unique_ptr<Socket> owned_;
  Socket& socket_;
  Stream stream_;
  int recv_ms_ = kDefaultIoTimeoutMs;
  int send_ms_ = kDefaultIoTimeoutMs;
  std::unique_ptr<FrameMac> send_mac_, recv_mac_;  // set by Authenticate
  uint64_t send_seq_ = 0, recv_seq_ = 0;
  std::shared_ptr<Pipe> pipe_;  // a MemoryPair end: sends as side_, receives the other's
  int side_ = 0;
};

}  // namespace wattdb::net
