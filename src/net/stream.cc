#include "net/stream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "common/sqlstate.h"

namespace wattdb::net {

namespace {
int MillisLeft(Stream::Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), INT32_MAX));
}

// "address:port" of a TCP peer, "local" for a Unix-domain one; whether it is on this host.
std::pair<std::string, bool> DescribePeer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {"?", false};
  char text[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    bool loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    return {fmt::format("{}:{}", text, ntohs(a->sin_port)), loopback};
  }
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    const auto& b = a->sin6_addr.s6_addr;
    bool mapped127 = IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && b[12] == 127;
    return {fmt::format("[{}]:{}", text, ntohs(a->sin6_port)),
            IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) || mapped127};
  }
  if (ss.ss_family == AF_UNIX) return {"local", true};
  return {"?", false};
}

// The canonical form of `host` if it is a loopback address, else "".
std::string LoopbackHost(const std::string& host) {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback() ? addr.to_string() : std::string();
}

// The address of the local socket `name` and its length; 0 if the name is too long.
socklen_t LocalAddress(const std::string& name, sockaddr_un* sa) {
  *sa = sockaddr_un{};
  sa->sun_family = AF_UNIX;
  if (name.size() > sizeof(sa->sun_path)) return 0;
  std::memcpy(sa->sun_path, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size());
}

// `fd`, a local stream socket, as a Socket (closed on failure).
Result<Socket> AdoptLocal(asio::io_context& io, int fd) {
  Socket s(io);
  boost::system::error_code ec;
  s.assign(asio::generic::stream_protocol(AF_UNIX, 0), fd, ec);
  if (ec) {
    ::close(fd);
    return Status::IOError(fmt::format("local socket: {}", ec.message()));
  }
  return s;
}

// A local stream socket connected to `name`, or an error (nothing listens there, or its
// backlog is full: the caller then uses TCP).
Result<Socket> ConnectLocal(asio::io_context& io, const std::string& name) {
  sockaddr_un sa;
  socklen_t len = LocalAddress(name, &sa);
  if (len == 0) return Status::InvalidArgument("local socket name too long");
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::IOError(fmt::format("socket: {}", strerror(errno)));
  // A local connect completes or fails at once (EAGAIN when the backlog is full).
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0) {
    int err = errno;
    ::close(fd);
    return Status::Unavailable(fmt::format("connect local: {}", strerror(err)));
  }
  return AdoptLocal(io, fd);
}
}  // namespace

Stream::Stream(Socket& socket, Reads reads)
    : socket_(socket), blocking_(reads == Reads::kBlocking) {
  boost::system::error_code ec;
  if (socket_.is_open()) std::tie(peer_, peer_loopback_) = DescribePeer(socket_.native_handle());
  socket_.non_blocking(!blocking_, ec);
  if (socket_.is_open()) fcntl(socket_.native_handle(), F_SETFD, FD_CLOEXEC);
}

Status Stream::Wait(short events, Due& due, const char* what) {
  pollfd p{socket_.native_handle(), events, 0};
  while (true) {
    int left = MillisLeft(due.at());
    if (left == 0) return Status::TimedOut(fmt::format("{} {}: deadline passed", what, peer_));
    if (interrupt_) {
      if (interrupt_->load(std::memory_order_relaxed))
        return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
      left = std::min(left, kInterruptSliceMs);
    }
    int rc = ::poll(&p, 1, left);
    if (rc > 0) {  // ready, or an error/hangup the next call reports
      if (events == POLLIN) readable_ = true;
      return Status::OK();
    }
    if (rc < 0 && errno != EINTR)
      return Status::IOError(fmt::format("{} {}: poll: {}", what, peer_, strerror(errno)));
  }
}

Status Stream::ReadExact(void* data, size_t n, Deadline deadline) {
  return Read(data, n, deadline);
}

Status Stream::ReadExactWithin(void* data, size_t n, int timeout_ms) {
  return Read(data, n, Due(timeout_ms));
}

Result<size_t> Stream::ReadSomeWithin(void* data, size_t n, int timeout_ms) {
  if (n == 0) return size_t{0};
  if (rpos_ == rend_) {
    Due due(timeout_ms);
    return ReadSome(static_cast<char*>(data), n, due);
  }
  size_t k = std::min(n, rend_ - rpos_);
  std::memcpy(data, rbuf_.get() + rpos_, k);
  rpos_ += k;
  return k;
}

Status Stream::Read(void* data, size_t n, Due due) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    if (rpos_ < rend_) {
      size_t k = std::min(n, rend_ - rpos_);
      std::memcpy(p, rbuf_.get() + rpos_, k);
      rpos_ += k;
      p += k;
      n -= k;
    } else if (n >= kReadBuffer) {  // a large read goes straight to its destination
      ASSIGN_OR_RETURN(size_t got, ReadSome(p, n, due));
      p += got;
      n -= got;
    } else {
      if (!rbuf_) rbuf_ = std::make_unique<char[]>(kReadBuffer);
      rpos_ = rend_ = 0;
      ASSIGN_OR_RETURN(rend_, ReadSome(rbuf_.get(), kReadBuffer, due));
    }
  }
  return Status::OK();
}

Status Stream::SetReceiveTimeout(Due& due) {
  auto left = std::chrono::duration_cast<std::chrono::microseconds>(
                  due.at() - std::chrono::steady_clock::now())
                  .count();
  if (left <= 0) return Status::TimedOut(fmt::format("receive from {}: deadline passed", peer_));
  // Kept if it ends the wait at most about 1 % (or 1 ms) after the deadline, and not before
  // half the time left (a wait that times out early loops and sets the rest).
  const int64_t slack = 1000 + left / 100;
  if (rcvtimeo_us_ > 0 && rcvtimeo_us_ <= left + slack && rcvtimeo_us_ * 2 >= left)
    return Status::OK();
  timeval tv{static_cast<time_t>(left / 1000000), static_cast<suseconds_t>(left % 1000000)};
  if (::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    return Status::IOError(
        fmt::format("receive from {}: setting a timeout: {}", peer_, strerror(errno)));
  }
  rcvtimeo_us_ = left;
  return Status::OK();
}

Result<size_t> Stream::ReceiveSome(char* p, size_t n, Due& due) {
  if (!socket_.is_open())
    return Status::IOError(fmt::format("receive from {}: connection closed", peer_));
  while (true) {
    RETURN_NOT_OK(SetReceiveTimeout(due));
    ssize_t got = ::recv(socket_.native_handle(), p, n, 0);
    if (got > 0) return static_cast<size_t>(got);
    if (got == 0) return Status::IOError(fmt::format("{} closed the connection", peer_));
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
      continue;  // SetReceiveTimeout ends it
    return Status::IOError(fmt::format("receive from {}: {}", peer_, strerror(errno)));
  }
}

Result<size_t> Stream::ReadSome(char* p, size_t n, Due& due) {
  if (blocking_) return ReceiveSome(p, n, due);
  // Unless a poll just said the socket is readable, the bytes are usually still on their way
  // (a reply to a request just sent): wait first rather than try a read that would fail.
  if (!readable_) RETURN_NOT_OK(Wait(POLLIN, due, "receive from"));
  while (true) {
    boost::system::error_code ec;
    size_t got = socket_.read_some(asio::buffer(p, n), ec);
    if (got > 0) {
      readable_ = false;
      return got;
    }
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      RETURN_NOT_OK(Wait(POLLIN, due, "receive from"));
      continue;
    }
    if (ec == asio::error::interrupted) continue;
    if (ec == asio::error::eof || !ec)
      return Status::IOError(fmt::format("{} closed the connection", peer_));
    return Status::IOError(fmt::format("receive from {}: {}", peer_, ec.message()));
  }
}

Status Stream::WriteAll(const void* data, size_t n, Deadline deadline) {
  return WriteAll(data, n, nullptr, 0, deadline);
}

Status Stream::WriteAll(const void* a, size_t na, const void* b, size_t nb, Deadline deadline,
                        const void* c, size_t nc) {
  std::array<asio::const_buffer, 3> bufs = {asio::buffer(a, na), asio::buffer(b, nb),
                                            asio::buffer(c, nc)};
  return WriteGather(bufs, deadline);
}

Status Stream::WriteGather(std::span<const asio::const_buffer> bufs, Deadline deadline) {
  return Write(bufs, deadline);
}

Status Stream::WriteGatherWithin(std::span<const asio::const_buffer> bufs, int timeout_ms) {
  return Write(bufs, Due(timeout_ms));
}

Status Stream::Write(std::span<const asio::const_buffer> bufs, Due due) {
  // At most kMax buffers per system call (IOV_MAX is far larger); the rest on later calls.
  constexpr size_t kMax = 16;
  size_t first = 0, offset = 0;  // the first unsent byte: bufs[first] + offset
  while (first < bufs.size()) {
    std::array<asio::const_buffer, kMax> rest;
    size_t n = 0;
    for (size_t i = first; i < bufs.size() && n < kMax; i++)
      rest[n++] = bufs[i] + (i == first ? offset : 0);
    std::array<iovec, kMax> iov;
    for (size_t i = 0; i < n; i++) iov[i] = {const_cast<void*>(rest[i].data()), rest[i].size()};
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = n;
    ssize_t sent = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      RETURN_NOT_OK(Wait(POLLOUT, due, "send to"));
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) return Status::IOError(fmt::format("send to {}: {}", peer_, strerror(errno)));
    offset += static_cast<size_t>(sent);
    while (first < bufs.size() && offset >= bufs[first].size()) {
      offset -= bufs[first].size();
      first++;
    }
  }
  return Status::OK();
}

Status Stream::WaitReadable(Deadline deadline) { return WaitReadable(Due(deadline)); }

Status Stream::WaitReadableWithin(int timeout_ms) { return WaitReadable(Due(timeout_ms)); }

Status Stream::WaitReadable(Due due) {
  if (rpos_ < rend_) return Status::OK();
  return blocking_ ? AwaitBytes(due) : Wait(POLLIN, due, "waiting for");
}

Status Stream::AwaitBytes(Due due) {
  if (!rbuf_) rbuf_ = std::make_unique<char[]>(kReadBuffer);
  rpos_ = rend_ = 0;
  auto got = ReceiveSome(rbuf_.get(), kReadBuffer, due);
  if (got.ok()) rend_ = *got;
  return got.ok() || !got.status().IsTimedOut() ? Status::OK() : got.status();
}

bool Stream::LooksIdle() {
  if (!socket_.is_open() || rpos_ < rend_) return false;
  pollfd p{socket_.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;
}

int ListenLocal(const std::string& name) {
  sockaddr_un sa;
  socklen_t len = LocalAddress(name, &sa);
  if (len == 0) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

std::string LocalAlias(const std::string& host, uint16_t port) {
  return std::string(1, '\0') + fmt::format("wattdb-cluster-{}:{}", host, port);
}

Result<Socket> Connect(asio::io_context& io, const std::string& host, uint16_t port,
                       int timeout_ms) {
  if (std::string loopback = LoopbackHost(host); !loopback.empty()) {
    auto local = ConnectLocal(io, LocalAlias(loopback, port));
    if (local.ok()) return std::move(local).value();
  }
  return ConnectTcp(io, host, port, timeout_ms);
}

Result<Socket> ConnectTcp(asio::io_context& io, const std::string& host, uint16_t port,
                          int timeout_ms) {
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
      return Status::TimedOut(
          fmt::format("connect {}:{}: no answer within {} ms", host, port, timeout_ms));
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc < 0)
      err = errno;
    else
      getsockopt(s.native_handle(), SOL_SOCKET, SO_ERROR, &err, &len);
    ec = err ? boost::system::error_code(err, boost::system::system_category())
             : boost::system::error_code();
  }
  if (ec) {
    return Status::Unavailable(fmt::format("connect {}:{}: {}", host, port, ec.message()));
  }
  return Socket(std::move(s));
}

}  // namespace wattdb::net
