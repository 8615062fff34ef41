#include "net/connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include <openssl/crypto.h>

namespace wattdb::net {

ReceivedMessage::ReceivedMessage(kj::Array<capnp::word> words) : words_(std::move(words)) {
  capnp::ReaderOptions opts;
  opts.traversalLimitInWords = kMaxMessageBytes / sizeof(capnp::word);
  reader_.emplace(words_.asPtr(), opts);
}

Connection::Connection(Socket socket)
    : owned_(std::make_unique<Socket>(std::move(socket))), socket_(*owned_), stream_(socket_) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

Connection::Connection(Socket* socket) : socket_(*socket), stream_(socket_) {
  boost::system::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

Connection::~Connection() { Close(); }

Result<std::unique_ptr<Connection>> Connection::Connect(asio::io_context& io,
                                                        const std::string& host, uint16_t port,
                                                        int timeout_ms) {
  ASSIGN_OR_RETURN(Socket s, net::Connect(io, host, port, timeout_ms));
  return std::make_unique<Connection>(std::move(s));
}

void Connection::SetTimeouts(int recv_ms, int send_ms) {
  recv_ms_ = recv_ms > 0 ? recv_ms : kDefaultIoTimeoutMs;
  send_ms_ = send_ms > 0 ? send_ms : kDefaultIoTimeoutMs;
}

Status Connection::WriteFrame(uint8_t kind, const void* data, size_t n) {
  char hdr[5];
  uint32_t len = static_cast<uint32_t>(n);
  std::memcpy(hdr, &len, 4);
  hdr[4] = static_cast<char>(kind);
  if (!send_mac_) return stream_.WriteAll(hdr, 5, data, n, Stream::In(send_ms_));
  auto mac = send_mac_->Frame(send_seq_++, hdr, 5, data, n);
  return stream_.WriteAll(hdr, 5, data, n, Stream::In(send_ms_), mac.data(), mac.size());
}

Status Connection::ReadHeader(char* hdr, uint32_t* len, uint8_t* kind, Stream::Deadline deadline) {
  RETURN_NOT_OK(stream_.ReadExact(hdr, 5, deadline));
  std::memcpy(len, hdr, 4);
  *kind = static_cast<uint8_t>(hdr[4]);
  return Status::OK();
}

Status Connection::ReadPayload(const char* hdr, void* data, size_t n, Stream::Deadline deadline) {
  RETURN_NOT_OK(stream_.ReadExact(data, n, deadline));
  if (!recv_mac_) return Status::OK();
  std::array<unsigned char, kFrameMacBytes> got;
  RETURN_NOT_OK(stream_.ReadExact(got.data(), got.size(), deadline));
  auto want = recv_mac_->Frame(recv_seq_++, hdr, 5, data, n);
  if (CRYPTO_memcmp(got.data(), want.data(), got.size()) != 0) {
    return Status::Corruption(fmt::format("frame from {} failed authentication", peer()));
  }
  return Status::OK();
}

std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> MemoryPair(
    asio::io_context& io) {
  auto pipe = std::make_shared<Connection::Pipe>();
  std::pair<std::unique_ptr<Connection>, std::unique_ptr<Connection>> ends(
      std::make_unique<Connection>(Socket(io)), std::make_unique<Connection>(Socket(io)));
  ends.first->pipe_ = ends.second->pipe_ = pipe;
  ends.second->side_ = 1;
  return ends;
}

Status Connection::Send(capnp::MessageBuilder& msg) {
  if (pipe_) {
    kj::Array<capnp::word> flat = capnp::messageToFlatArray(msg);
    if (flat.asBytes().size() > kMaxMessageBytes) {
      return Status::InvalidArgument(
          fmt::format("message of {} bytes exceeds the limit", flat.asBytes().size()));
    }
    std::lock_guard<std::mutex> l(pipe_->mu);
    if (pipe_->closed) return Status::IOError("send in process: the other end closed");
    pipe_->sent[side_].push_back(std::move(flat));
    return Status::OK();
  }
  // The bytes messageToFlatArray would make (segment table, then each segment), written
  // from where they lie: a large blob (ReferenceBlob) is never copied.
  auto segs = msg.getSegmentsForOutput();
  constexpr size_t kInline = 8;  // segments described without allocating
  if (segs.size() > kInline) {
    kj::Array<capnp::word> flat = capnp::messageToFlatArray(segs);
    if (flat.asBytes().size() > kMaxMessageBytes) {
      return Status::InvalidArgument(
          fmt::format("message of {} bytes exceeds the limit", flat.asBytes().size()));
    }
    return WriteFrame(1, flat.begin(), flat.asBytes().size());
  }
  std::array<uint32_t, kInline + 2> table{};
  size_t ntable = (segs.size() + 2) & ~size_t{1};  // count, sizes, padded to a word
  table[0] = static_cast<uint32_t>(segs.size() - 1);
  size_t total = ntable * 4;
  for (size_t i = 0; i < segs.size(); i++) {
    table[i + 1] = static_cast<uint32_t>(segs[i].size());
    total += segs[i].asBytes().size();
  }
  if (total > kMaxMessageBytes) {
    return Status::InvalidArgument(fmt::format("message of {} bytes exceeds the limit", total));
  }
  char hdr[5];
  uint32_t len = static_cast<uint32_t>(total);
  std::memcpy(hdr, &len, 4);
  hdr[4] = 1;
  std::array<std::string_view, kInline + 3> pieces;
  size_t n = 0;
  pieces[n++] = {hdr, 5};
  pieces[n++] = {reinterpret_cast<const char*>(table.data()), ntable * 4};
  for (const auto& seg : segs)
    pieces[n++] = {reinterpret_cast<const char*>(seg.begin()), seg.asBytes().size()};
  std::array<unsigned char, kFrameMacBytes> mac;
  if (send_mac_) {
    mac = send_mac_->Frame(send_seq_++, std::span(pieces.data(), n));
    pieces[n++] = {reinterpret_cast<const char*>(mac.data()), mac.size()};
  }
  std::array<asio::const_buffer, kInline + 3> bufs;
  for (size_t i = 0; i < n; i++) bufs[i] = asio::buffer(pieces[i].data(), pieces[i].size());
  return stream_.WriteGather(std::span(bufs.data(), n), Stream::In(send_ms_));
}

Result<std::unique_ptr<ReceivedMessage>> Connection::Receive() {
  if (pipe_) {
    kj::Array<capnp::word> words;
    {
      std::lock_guard<std::mutex> l(pipe_->mu);
      auto& inbox = pipe_->sent[1 - side_];
      if (inbox.empty()) {
        return Status::IOError(pipe_->closed ? "receive in process: the other end closed"
                                             : "receive in process: the other end sent nothing");
      }
      words = std::move(inbox.front());
      inbox.pop_front();
    }
    return DecodeMessage(std::move(words));
  }
  char hdr[5];
  uint32_t len = 0;
  uint8_t kind = 0;
  Stream::Deadline deadline = Stream::In(recv_ms_);
  RETURN_NOT_OK(ReadHeader(hdr, &len, &kind, deadline));
  if (kind != 1)
    return Status::Corruption(fmt::format("expected a message frame, got kind {}", kind));
  if (len == 0 || len % sizeof(capnp::word) != 0 || len > kMaxMessageBytes) {
    return Status::Corruption(fmt::format("bad message frame length {}", len));
  }
  auto words = kj::heapArray<capnp::word>(len / sizeof(capnp::word));
  RETURN_NOT_OK(ReadPayload(hdr, words.begin(), len, deadline));
  return DecodeMessage(std::move(words));
}

capnp::Orphan<capnp::Data> ReferenceBlob(capnp::MessageBuilder& msg, std::string* bytes) {
  size_t n = bytes->size();
  bytes->resize((n + 7) & ~size_t{7}, '\0');  // what the segment shows past the end: zeros
  capnp::Data::Reader data(reinterpret_cast<const kj::byte*>(bytes->data()), n);
  if (reinterpret_cast<uintptr_t>(bytes->data()) % alignof(capnp::word) != 0) {
    return msg.getOrphanage().newOrphanCopy(data);
  }
  return msg.getOrphanage().referenceExternalData(data);
}

Result<std::unique_ptr<ReceivedMessage>> DecodeMessage(kj::Array<capnp::word> words) {
  size_t nwords = words.size();
  if (nwords == 0) return Status::Corruption("empty message");
  // The segment table must be consistent with the frame; capnp validates lazily, so check
  // the header here and let readers' exceptions be caught at the service boundary.
  const uint32_t* seg = reinterpret_cast<const uint32_t*>(words.begin());
  uint64_t nseg = static_cast<uint64_t>(seg[0]) + 1;
  uint64_t header_words = (nseg + 2) / 2;
  if (header_words > nwords) return Status::Corruption("message segment table exceeds frame");
  uint64_t body = 0;
  for (uint64_t i = 0; i < nseg; i++) body += seg[1 + i];
  if (header_words + body != nwords) return Status::Corruption("message segment sizes mismatch");
  return std::make_unique<ReceivedMessage>(std::move(words));
}

Status Connection::SendRaw(const char* data, size_t n) {
  if (pipe_) return Status::NotSupported("raw frames in process");
  if (n > kMaxRawChunk) return Status::InvalidArgument("raw chunk too large");
  return WriteFrame(2, data, n);
}

Status Connection::ReceiveRaw(std::string* out) {
  if (pipe_) return Status::NotSupported("raw frames in process");
  char hdr[5];
  uint32_t len = 0;
  uint8_t kind = 0;
  Stream::Deadline deadline = Stream::In(recv_ms_);
  RETURN_NOT_OK(ReadHeader(hdr, &len, &kind, deadline));
  if (kind != 2) return Status::Corruption(fmt::format("expected a raw frame, got kind {}", kind));
  if (len > kMaxRawChunk) return Status::Corruption(fmt::format("raw frame of {} bytes", len));
  out->resize(len);
  return ReadPayload(hdr, out->data(), len, deadline);
}

Status Connection::SendHandshake(const std::string& bytes, Stream::Deadline deadline) {
  char hdr[5];
  uint32_t len = static_cast<uint32_t>(bytes.size());
  std::memcpy(hdr, &len, 4);
  hdr[4] = 3;
  return stream_.WriteAll(hdr, 5, bytes.data(), bytes.size(), deadline);
}

Result<std::string> Connection::ReceiveHandshake(size_t n, Stream::Deadline deadline) {
  char hdr[5];
  uint32_t len = 0;
  uint8_t kind = 0;
  RETURN_NOT_OK(ReadHeader(hdr, &len, &kind, deadline));
  if (kind != 3 || len != n) {
    return Status::InvalidArgument(
        fmt::format("{} did not authenticate as a member of this cluster", peer()));
  }
  std::string out(n, '\0');
  RETURN_NOT_OK(stream_.ReadExact(out.data(), n, deadline));
  return out;
}

Status Connection::Authenticate(const ClusterKey& key, Role role, int timeout_ms) {
  if (pipe_) return Status::NotSupported("no handshake in process: both ends are this process");
  auto deadline = Stream::In(timeout_ms);
  Mac k(key.bytes());
  const std::string magic = "WDB2";
  const size_t kNonce = 16;
  std::string nc, ns;
  auto refused = [&] {
    return Status::InvalidArgument(
        fmt::format("{} is not a member of this cluster (wrong cluster key)", peer()));
  };
  if (role == Role::kClient) {
    nc = RandomBytes(kNonce);
    RETURN_NOT_OK(SendHandshake(magic + nc, deadline));
    ASSIGN_OR_RETURN(std::string reply, ReceiveHandshake(kNonce + 32, deadline));
    ns = reply.substr(0, kNonce);
    std::string proof = k.Full("server" + nc + ns);
    if (CRYPTO_memcmp(proof.data(), reply.data() + kNonce, 32) != 0) return refused();
    RETURN_NOT_OK(SendHandshake(k.Full("client" + nc + ns), deadline));
    ASSIGN_OR_RETURN(std::string ack, ReceiveHandshake(1, deadline));
    if (ack != "\1") return refused();
  } else {
    ASSIGN_OR_RETURN(std::string hello, ReceiveHandshake(magic.size() + kNonce, deadline));
    if (hello.compare(0, magic.size(), magic) != 0) return refused();
    nc = hello.substr(magic.size());
    ns = RandomBytes(kNonce);
    RETURN_NOT_OK(SendHandshake(ns + k.Full("server" + nc + ns), deadline));
    ASSIGN_OR_RETURN(std::string proof, ReceiveHandshake(32, deadline));
    std::string want = k.Full("client" + nc + ns);
    bool ok = CRYPTO_memcmp(proof.data(), want.data(), 32) == 0;
    RETURN_NOT_OK(SendHandshake(ok ? "\1" : "\0", deadline));
    if (!ok) return refused();
  }
  send_seq_ = recv_seq_ = 0;
  if (stream_.IsLocalSocket()) {  // both ends see the same kind of socket
    send_mac_.reset();
    recv_mac_.reset();
    return Status::OK();
  }
  std::string c2s = k.Full("c2s" + nc + ns), s2c = k.Full("s2c" + nc + ns);
  send_mac_ = std::make_unique<FrameMac>(role == Role::kClient ? c2s : s2c);
  recv_mac_ = std::make_unique<FrameMac>(role == Role::kClient ? s2c : c2s);
  return Status::OK();
}

bool Connection::LooksIdle() {
  if (!pipe_) return stream_.LooksIdle();
  std::lock_guard<std::mutex> l(pipe_->mu);
  return !pipe_->closed && pipe_->sent[1 - side_].empty();
}

Status Connection::WaitReadable(int timeout_ms) {
  if (!pipe_) return stream_.WaitReadableWithin(timeout_ms);
  std::lock_guard<std::mutex> l(pipe_->mu);
  if (pipe_->closed || !pipe_->sent[1 - side_].empty()) return Status::OK();
  return Status::TimedOut("waiting in process: the other end sent nothing");
}

void Connection::Close() {
  if (pipe_) {
    std::lock_guard<std::mutex> l(pipe_->mu);
    pipe_->closed = true;
  }
  boost::system::error_code ec;
  if (socket_.is_open()) {
    socket_.shutdown(Socket::shutdown_both, ec);
  }
}

}  // namespace wattdb::net
