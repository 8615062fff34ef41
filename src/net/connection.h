// Connection: one TCP stream carrying framed messages, on Boost.Asio (blocking calls).
//
// Frame = 4-byte little-endian payload length, 1-byte kind, payload.
//   kind 1: a Cap'n Proto message (messageToFlatArray layout; length is a multiple of 8)
//   kind 2: raw bytes (segment file contents), at most kMaxRawChunk per frame
// Oversized, misaligned or unknown frames are protocol errors: the call fails with
// Corruption and the caller closes the connection.
//
// Thread-compatible: one thread uses a Connection at a time. Close() may be called from
// another thread to unblock a reader.
#pragma once

#include <utility>  // before asio: Boost 1.74 + C++20 needs std::exchange declared
#include <boost/asio.hpp>

#include <capnp/message.h>
#include <capnp/serialize.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace wattdb::net {

namespace asio = boost::asio;

constexpr size_t kMaxMessageBytes = 64u << 20;
constexpr size_t kMaxRawChunk = 1u << 20;

// A received Cap'n Proto message together with the buffer it reads from.
class ReceivedMessage {
 public:
  explicit ReceivedMessage(kj::Array<capnp::word> words);
  template <typename T>
  typename T::Reader Root() {
    return reader_->getRoot<T>();
  }

 private:
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
};

class Connection {
 public:
  // Owns `socket`.
  explicit Connection(asio::ip::tcp::socket socket);
  // Borrows `socket`, which must outlive the Connection (a TcpServer handler's socket: the
  // server keeps it so that Stop() can shut it down).
  explicit Connection(asio::ip::tcp::socket* socket);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Connects to host:port. Fails with Unavailable if the peer cannot be reached.
  static Result<std::unique_ptr<Connection>> Connect(asio::io_context& io, const std::string& host,
                                                     uint16_t port);

  // Blocking send/receive timeouts in milliseconds (0 = none).
  void SetTimeouts(int recv_ms, int send_ms);

  Status Send(capnp::MessageBuilder& msg);
  Result<std::unique_ptr<ReceivedMessage>> Receive();
  Status SendRaw(const char* data, size_t n);
  // Receives one raw frame into `out` (replacing its contents).
  Status ReceiveRaw(std::string* out);

  // Shuts the socket down; safe to call from any thread, more than once.
  void Close();
  std::string peer() const { return peer_; }

 private:
  Status WriteFrame(uint8_t kind, const void* data, size_t n);
  // Reads a frame header; returns payload length and kind.
  Status ReadHeader(uint32_t* len, uint8_t* kind);
  Status ReadExact(void* data, size_t n);

  std::unique_ptr<asio::ip::tcp::socket> owned_;
  asio::ip::tcp::socket& socket_;
  std::string peer_;
};

}  // namespace wattdb::net
