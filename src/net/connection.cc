#include "net/connection.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <cstring>

namespace wattdb::net {

ReceivedMessage::ReceivedMessage(kj::Array<capnp::word> words) : words_(std::move(words)) {
  capnp::ReaderOptions opts;
  opts.traversalLimitInWords = kMaxMessageBytes / sizeof(capnp::word);
  reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_.asPtr(), opts);
}

Connection::Connection(asio::ip::tcp::socket socket)
    : owned_(std::make_unique<asio::ip::tcp::socket>(std::move(socket))), socket_(*owned_) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

Connection::Connection(asio::ip::tcp::socket* socket) : socket_(*socket) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

Connection::~Connection() { Close(); }

Result<std::unique_ptr<Connection>> Connection::Connect(asio::io_context& io,
                                                        const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument(fmt::format("bad address '{}': {}", host, ec.message()));
  asio::ip::tcp::socket s(io);
  s.connect(asio::ip::tcp::endpoint(addr, port), ec);
  if (ec) {
    return Status::Unavailable(fmt::format("connect {}:{}: {}", host, port, ec.message()));
  }
  return std::make_unique<Connection>(std::move(s));
}

void Connection::SetTimeouts(int recv_ms, int send_ms) {
  auto set = [&](int opt, int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(socket_.native_handle(), SOL_SOCKET, opt, &tv, sizeof(tv));
  };
  set(SO_RCVTIMEO, recv_ms);
  set(SO_SNDTIMEO, send_ms);
}

Status Connection::WriteFrame(uint8_t kind, const void* data, size_t n) {
  char hdr[5];
  uint32_t len = static_cast<uint32_t>(n);
  std::memcpy(hdr, &len, 4);
  hdr[4] = static_cast<char>(kind);
  std::array<asio::const_buffer, 2> bufs = {asio::buffer(hdr, 5), asio::buffer(data, n)};
  boost::system::error_code ec;
  asio::write(socket_, bufs, ec);
  if (ec) return Status::IOError(fmt::format("send to {}: {}", peer_, ec.message()));
  return Status::OK();
}

Status Connection::ReadExact(void* data, size_t n) {
  boost::system::error_code ec;
  asio::read(socket_, asio::buffer(data, n), ec);
  if (ec == asio::error::eof) return Status::IOError(fmt::format("{} closed the connection", peer_));
  if (ec) return Status::IOError(fmt::format("receive from {}: {}", peer_, ec.message()));
  return Status::OK();
}

Status Connection::ReadHeader(uint32_t* len, uint8_t* kind) {
  char hdr[5];
  RETURN_NOT_OK(ReadExact(hdr, 5));
  std::memcpy(len, hdr, 4);
  *kind = static_cast<uint8_t>(hdr[4]);
  return Status::OK();
}

Status Connection::Send(capnp::MessageBuilder& msg) {
  kj::Array<capnp::word> flat = capnp::messageToFlatArray(msg);
  auto bytes = flat.asBytes();
  if (bytes.size() > kMaxMessageBytes) {
    return Status::InvalidArgument(fmt::format("message of {} bytes exceeds the limit", bytes.size()));
  }
  return WriteFrame(1, bytes.begin(), bytes.size());
}

Result<std::unique_ptr<ReceivedMessage>> Connection::Receive() {
  uint32_t len;
  uint8_t kind;
  RETURN_NOT_OK(ReadHeader(&len, &kind));
  if (kind != 1) return Status::Corruption(fmt::format("expected a message frame, got kind {}", kind));
  if (len == 0 || len % sizeof(capnp::word) != 0 || len > kMaxMessageBytes) {
    return Status::Corruption(fmt::format("bad message frame length {}", len));
  }
  auto words = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
  RETURN_NOT_OK(ReadExact(words.begin(), len));
  // The segment table must be consistent with the frame; capnp validates lazily, so check
  // the header here and let readers' exceptions be caught at the service boundary.
  const uint32_t* seg = reinterpret_cast<const uint32_t*>(words.begin());
  uint64_t nseg = static_cast<uint64_t>(seg[0]) + 1;
  uint64_t header_words = (nseg + 2) / 2;
  if (header_words > len / 8) return Status::Corruption("message segment table exceeds frame");
  uint64_t body = 0;
  for (uint64_t i = 0; i < nseg; i++) body += seg[1 + i];
  if (header_words + body != len / 8) return Status::Corruption("message segment sizes mismatch");
  return std::make_unique<ReceivedMessage>(std::move(words));
}

Status Connection::SendRaw(const char* data, size_t n) {
  if (n > kMaxRawChunk) return Status::InvalidArgument("raw chunk too large");
  return WriteFrame(2, data, n);
}

Status Connection::ReceiveRaw(std::string* out) {
  uint32_t len;
  uint8_t kind;
  RETURN_NOT_OK(ReadHeader(&len, &kind));
  if (kind != 2) return Status::Corruption(fmt::format("expected a raw frame, got kind {}", kind));
  if (len > kMaxRawChunk) return Status::Corruption(fmt::format("raw frame of {} bytes", len));
  out->resize(len);
  return ReadExact(out->data(), len);
}

void Connection::Close() {
  boost::system::error_code ec;
  if (socket_.is_open()) {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  }
}

}  // namespace wattdb::net
