#include "net/connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace wattdb::net {

ReceivedMessage::ReceivedMessage(kj::Array<capnp::word> words) : words_(std::move(words)) {
  capnp::ReaderOptions opts;
  opts.traversalLimitInWords = kMaxMessageBytes / sizeof(capnp::word);
  reader_ = std::make_unique<capnp::FlatArrayMessageReader>(words_.asPtr(), opts);
}

Connection::Connection(asio::ip::tcp::socket socket)
    : owned_(std::make_unique<asio::ip::tcp::socket>(std::move(socket))), socket_(*owned_) {
  Init();
}

Connection::Connection(asio::ip::tcp::socket* socket) : socket_(*socket) { Init(); }

void Connection::Init() {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : ep.address().to_string() + ":" + std::to_string(ep.port());
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);
  if (socket_.is_open()) fcntl(socket_.native_handle(), F_SETFD, FD_CLOEXEC);
}

Connection::~Connection() { Close(); }

namespace {
int MillisLeft(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
}
}  // namespace

Result<std::unique_ptr<Connection>> Connection::Connect(asio::io_context& io, const std::string& host,
                                                        uint16_t port, int timeout_ms) {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument(fmt::format("bad address '{}': {}", host, ec.message()));
  asio::ip::tcp::endpoint ep(addr, port);
  asio::ip::tcp::socket s(io);
  s.open(ep.protocol(), ec);
  if (ec) return Status::IOError(fmt::format("socket: {}", ec.message()));
  fcntl(s.native_handle(), F_SETFD, FD_CLOEXEC);
  s.non_blocking(true, ec);
  s.connect(ep, ec);
  if (ec == asio::error::in_progress || ec == asio::error::would_block) {
    pollfd p{s.native_handle(), POLLOUT, 0};
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int rc;
    do {
      rc = ::poll(&p, 1, MillisLeft(deadline));
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) {
      return Status::TimedOut(fmt::format("connect {}:{}: no answer within {} ms", host, port, timeout_ms));
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc < 0) err = errno;
    else getsockopt(s.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len);
    ec = err ? boost::system::error_code(err, boost::system::system_category()) : boost::system::error_code();
  }
  if (ec) {
    return Status::Unavailable(fmt::format("connect {}:{}: {}", host, port, ec.message()));
  }
  return std::make_unique<Connection>(std::move(s));
}

void Connection::SetTimeouts(int recv_ms, int send_ms) {
  recv_ms_ = recv_ms > 0 ? recv_ms : kDefaultIoTimeoutMs;
  send_ms_ = send_ms > 0 ? send_ms : kDefaultIoTimeoutMs;
}

Connection::Deadline Connection::RecvDeadline() const {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(recv_ms_);
}

Status Connection::Wait(short events, Deadline deadline, const char* what) {
  pollfd p{socket_.native_handle(), events, 0};
  while (true) {
    int left = MillisLeft(deadline);
    if (left == 0) {
      return Status::TimedOut(fmt::format("{} {}: no progress within {} ms", what, peer_,
                                          events == POLLIN ? recv_ms_ : send_ms_));
    }
    int rc = ::poll(&p, 1, left);
    if (rc > 0) return Status::OK();  // ready, or an error/hangup the next call reports
    if (rc < 0 && errno != EINTR) return Status::IOError(fmt::format("{} {}: poll: {}", what, peer_, strerror(errno)));
  }
}

Status Connection::WriteFrame(uint8_t kind, const void* data, size_t n) {
  char hdr[5];
  uint32_t len = static_cast<uint32_t>(n);
  std::memcpy(hdr, &len, 4);
  hdr[4] = static_cast<char>(kind);
  std::array<asio::const_buffer, 2> bufs = {asio::buffer(hdr, 5), asio::buffer(data, n)};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(send_ms_);
  size_t total = 5 + n, sent = 0;
  while (sent < total) {
    boost::system::error_code ec;
    // Skip what was sent already across the two buffers.
    std::array<asio::const_buffer, 2> rest = bufs;
    size_t skip = sent;
    for (auto& b : rest) {
      size_t k = std::min(skip, b.size());
      b += k;
      skip -= k;
    }
    size_t k = socket_.write_some(rest, ec);
    sent += k;
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      RETURN_NOT_OK(Wait(POLLOUT, deadline, "send to"));
      continue;
    }
    if (ec == asio::error::interrupted) continue;
    if (ec) return Status::IOError(fmt::format("send to {}: {}", peer_, ec.message()));
  }
  return Status::OK();
}

Status Connection::ReadExact(void* data, size_t n, Deadline deadline) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    boost::system::error_code ec;
    size_t k = socket_.read_some(asio::buffer(p + got, n - got), ec);
    got += k;
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      RETURN_NOT_OK(Wait(POLLIN, deadline, "receive from"));
      continue;
    }
    if (ec == asio::error::interrupted) continue;
    if (ec == asio::error::eof) return Status::IOError(fmt::format("{} closed the connection", peer_));
    if (ec) return Status::IOError(fmt::format("receive from {}: {}", peer_, ec.message()));
  }
  return Status::OK();
}

Status Connection::ReadHeader(uint32_t* len, uint8_t* kind, Deadline deadline) {
  char hdr[5];
  RETURN_NOT_OK(ReadExact(hdr, 5, deadline));
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
  Deadline deadline = RecvDeadline();
  RETURN_NOT_OK(ReadHeader(&len, &kind, deadline));
  if (kind != 1) return Status::Corruption(fmt::format("expected a message frame, got kind {}", kind));
  if (len == 0 || len % sizeof(capnp::word) != 0 || len > kMaxMessageBytes) {
    return Status::Corruption(fmt::format("bad message frame length {}", len));
  }
  auto words = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
  RETURN_NOT_OK(ReadExact(words.begin(), len, deadline));
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
  Deadline deadline = RecvDeadline();
  RETURN_NOT_OK(ReadHeader(&len, &kind, deadline));
  if (kind != 2) return Status::Corruption(fmt::format("expected a raw frame, got kind {}", kind));
  if (len > kMaxRawChunk) return Status::Corruption(fmt::format("raw frame of {} bytes", len));
  out->resize(len);
  return ReadExact(out->data(), len, deadline);
}

bool Connection::LooksIdle() {
  if (!socket_.is_open()) return false;
  pollfd p{socket_.native_handle(), POLLIN, 0};
  int rc = ::poll(&p, 1, 0);
  return rc == 0;
}

Status Connection::WaitReadable(int timeout_ms) {
  pollfd p{socket_.native_handle(), POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int rc = ::poll(&p, 1, MillisLeft(deadline));
    if (rc > 0) return Status::OK();
    if (rc == 0) return Status::TimedOut(fmt::format("{} sent nothing for {} ms", peer_, timeout_ms));
    if (errno != EINTR) return Status::IOError(fmt::format("poll {}: {}", peer_, strerror(errno)));
  }
}

void Connection::Close() {
  boost::system::error_code ec;
  if (socket_.is_open()) {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  }
}

}  // namespace wattdb::net
