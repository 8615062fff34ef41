#include "net/connection.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <openssl/evp.h>

#include "common/sqlstate.h"
#include "net/tcp_server.h"
#include "proto/node_service.capnp.h"

namespace wattdb::net {
namespace {

// Echoes each message back; a raw frame is answered with its length.
void Echo(Socket& s) {
  Connection c(&s);
  while (true) {
    auto m = c.Receive();
    if (!m.ok()) return;
    auto req = (*m)->Root<wattdb::proto::Request>();
    capnp::MallocMessageBuilder b;
    auto resp = b.initRoot<wattdb::proto::Response>();
    resp.setSplitKey(req.getCreateSegment().getLo());
    if (!c.Send(b).ok()) return;
  }
}

TEST(Connection, RoundTripsMessages) {
  TcpServer server("echo", "127.0.0.1", 0, Echo);
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  auto c = Connection::Connect(io, "127.0.0.1", server.port());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int i = 0; i < 3; i++) {
    capnp::MallocMessageBuilder b;
    auto req = b.initRoot<wattdb::proto::Request>();
    std::string lo = "key" + std::to_string(i);
    req.initCreateSegment().setLo(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(lo.data()), lo.size()));
    ASSERT_TRUE((*c)->Send(b).ok());
    auto r = (*c)->Receive();
    ASSERT_TRUE(r.ok());
    auto got = (*r)->Root<wattdb::proto::Response>().getSplitKey();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.begin()), got.size()), lo);
  }
  server.Stop();
}

// One echo round trip on `c`; the echoed key.
std::string EchoOnce(Connection& c, const std::string& key) {
  capnp::MallocMessageBuilder b;
  b.initRoot<wattdb::proto::Request>().initCreateSegment().setLo(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(key.data()), key.size()));
  if (!c.Send(b).ok()) return "(send failed)";
  auto r = c.Receive();
  if (!r.ok()) return "(receive failed)";
  auto got = (*r)->Root<wattdb::proto::Response>().getSplitKey();
  return std::string(reinterpret_cast<const char*>(got.begin()), got.size());
}

// A server with a local alias is reached through it by a client naming its loopback address;
// one without is reached over TCP; both serve the same conversation.
TEST(Connection, LoopbackClientsUseTheLocalAliasWhenTheServerHasOne) {
  TcpServer with("echo", "127.0.0.1", 0, Echo), without("echo", "127.0.0.1", 0, Echo);
  with.set_local_alias(true);
  ASSERT_TRUE(with.Start().ok());
  ASSERT_TRUE(without.Start().ok());
  asio::io_context io;
  auto a = Connection::Connect(io, "127.0.0.1", with.port());
  auto b = Connection::Connect(io, "127.0.0.1", without.port());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->peer(), "local");
  EXPECT_EQ((*b)->peer(), fmt::format("127.0.0.1:{}", without.port()));
  EXPECT_EQ(EchoOnce(**a, "over local"), "over local");
  EXPECT_EQ(EchoOnce(**b, "over tcp"), "over tcp");
  // The alias belongs to the address as well as the port: a server on another loopback
  // address with the same port number is a different server.
  TcpServer other("echo", "127.0.0.2", with.port(), [](Socket& s) {
    Connection c(&s);
    auto m = c.Receive();
    if (!m.ok()) return;
    capnp::MallocMessageBuilder b;
    b.initRoot<wattdb::proto::Response>().setSplitKey(kj::StringPtr("other").asBytes());
    (void)c.Send(b);
  });
  other.set_local_alias(true);
  ASSERT_TRUE(other.Start().ok()) << "127.0.0.2 is loopback on Linux";
  auto o = Connection::Connect(io, "127.0.0.2", with.port());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ((*o)->peer(), "local");
  EXPECT_EQ(EchoOnce(**o, "x"), "other");
  EXPECT_EQ(EchoOnce(**a, "still the first"), "still the first");
  // Stop closes the local listener too (it returns, and a new client gets no answer there).
  with.Stop();
  auto gone = Connection::Connect(io, "127.0.0.1", with.port(), 500);
  EXPECT_FALSE(gone.ok());
}

TEST(Connection, GarbageClosesOnlyThatConnection) {
  TcpServer server("echo", "127.0.0.1", 0, Echo);
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  // A frame claiming 7 bytes (not word-aligned), then junk.
  asio::ip::tcp::socket raw(io);
  raw.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  const char junk[] = "\x07\x00\x00\x00\x01garbage";
  asio::write(raw, asio::buffer(junk, sizeof(junk) - 1));
  char b;
  boost::system::error_code ec;
  raw.read_some(asio::buffer(&b, 1), ec);
  EXPECT_TRUE(ec) << "server should have closed the garbage connection";
  // A well-formed frame header whose segment table lies about sizes.
  asio::ip::tcp::socket raw2(io);
  raw2.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  const char lie[] = "\x08\x00\x00\x00\x01\x00\x00\x00\x00\xff\x00\x00\x00";
  asio::write(raw2, asio::buffer(lie, sizeof(lie) - 1));
  raw2.read_some(asio::buffer(&b, 1), ec);
  EXPECT_TRUE(ec);
  // The server still serves a good client.
  auto c = Connection::Connect(io, "127.0.0.1", server.port());
  ASSERT_TRUE(c.ok());
  capnp::MallocMessageBuilder mb;
  mb.initRoot<wattdb::proto::Request>().initCreateSegment();
  ASSERT_TRUE((*c)->Send(mb).ok());
  EXPECT_TRUE((*c)->Receive().ok());
}

// A peer that does not answer within the deadline makes Receive fail with TimedOut instead
// of blocking forever.
TEST(Connection, ReceiveHasADeadline) {
  std::atomic<bool> release{false};
  TcpServer server("mute", "127.0.0.1", 0, [&](Socket&) {
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  auto c = Connection::Connect(io, "127.0.0.1", server.port());
  ASSERT_TRUE(c.ok());
  (*c)->SetTimeouts(200, 200);
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*c)->Receive();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.status().IsTimedOut()) << r.status().ToString();
  EXPECT_GE(s, 0.15);
  EXPECT_LT(s, 5.0);
  release = true;
  server.Stop();
}

// A peer that sent half a frame and then nothing (a process stopped midway): the receive
// waits out its deadline, unless an interrupt flag set meanwhile ends it first (57014).
TEST(Connection, AnInterruptEndsAReceiveStuckInAHalfFrame) {
  std::atomic<bool> release{false};
  TcpServer server("half", "127.0.0.1", 0, [&](Socket& s) {
    Stream st(s);
    const char half[] = {64, 0, 0, 0, 1, 0, 0, 0};  // a 64-byte message frame, 3 bytes of it
    (void)st.WriteAll(half, sizeof(half), Stream::In(1000));
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  auto c = Connection::Connect(io, "127.0.0.1", server.port());
  ASSERT_TRUE(c.ok());
  (*c)->SetTimeouts(30000, 30000);
  std::atomic<bool> cancel{false};
  (*c)->SetInterrupt(&cancel);
  std::thread canceler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto r = (*c)->Receive();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  canceler.join();
  EXPECT_EQ(r.status().sqlstate(), sqlstate::kQueryCanceled) << r.status().ToString();
  EXPECT_GE(s, 0.15);
  EXPECT_LT(s, 10.0);  // the deadline is 30 s
  release = true;
  server.Stop();
}

ClusterKey Key(char fill) { return ClusterKey::FromBytes(std::string(kClusterKeyBytes, fill)); }

// Echoes messages on connections that authenticate with `key`.
TcpServer::Handler AuthEcho(const ClusterKey& key, std::atomic<int>* refused) {
  return [&key, refused](Socket& s) {
    Connection c(&s);
    if (!c.Authenticate(key, Connection::Role::kServer, 2000).ok()) {
      (*refused)++;
      return;
    }
    while (true) {
      auto m = c.Receive();
      if (!m.ok()) return;
      capnp::MallocMessageBuilder b;
      b.initRoot<wattdb::proto::Response>().setSplitKey(
          (*m)->Root<wattdb::proto::Request>().getCreateSegment().getLo());
      if (!c.Send(b).ok()) return;
    }
  };
}

TEST(Connection, ClusterKeyAuthenticatesBothSidesAndEveryFrame) {
  ClusterKey key = Key('k');
  std::atomic<int> refused{0};
  TcpServer server("auth", "127.0.0.1", 0, AuthEcho(key, &refused));
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  auto send = [](Connection& c, const std::string& lo) {
    capnp::MallocMessageBuilder b;
    b.initRoot<wattdb::proto::Request>().initCreateSegment().setLo(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(lo.data()), lo.size()));
    return c.Send(b);
  };
  {  // Same key: messages flow.
    auto c = Connection::Connect(io, "127.0.0.1", server.port());
    ASSERT_TRUE((*c)->Authenticate(key, Connection::Role::kClient, 2000).ok());
    for (int i = 0; i < 3; i++) {
      ASSERT_TRUE(send(**c, "x" + std::to_string(i)).ok());
      ASSERT_TRUE((*c)->Receive().ok());
    }
  }
  {  // Another key: refused on both sides.
    auto c = Connection::Connect(io, "127.0.0.1", server.port());
    EXPECT_FALSE((*c)->Authenticate(Key('x'), Connection::Role::kClient, 2000).ok());
  }
  {  // No handshake at all: the first request is refused, nothing answered.
    auto c = Connection::Connect(io, "127.0.0.1", server.port());
    ASSERT_TRUE(send(**c, "rogue").ok());
    EXPECT_FALSE((*c)->Receive().ok());
  }
  for (int i = 0; i < 100 && refused < 2; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(refused.load(), 2);
  server.Stop();
}

// A frame altered in flight fails its MAC: the receiver drops the connection.
TEST(Connection, TamperedFrameIsRejected) {
  ClusterKey key = Key('k');
  std::atomic<bool> rejected{false};
  TcpServer server("auth", "127.0.0.1", 0, [&](Socket& s) {
    Connection c(&s);
    if (!c.Authenticate(key, Connection::Role::kServer, 2000).ok()) return;
    auto m = c.Receive();
    rejected = !m.ok() && m.status().code() == Status::Code::kCorruption;
  });
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  Socket raw(io);
  raw.connect(asio::generic::stream_protocol::endpoint(
      asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), server.port())));
  // Authenticate on a Connection that borrows the socket, then write a frame by hand.
  Connection c(&raw);
  ASSERT_TRUE(c.Authenticate(key, Connection::Role::kClient, 2000).ok());
  std::string frame("\x08\x00\x00\x00\x01", 5);
  frame += std::string("\x00\x00\x00\x00\x00\x00\x00\x00", 8);  // an empty message
  frame += std::string(kFrameMacBytes, '\x42');                 // a MAC made up
  boost::system::error_code ec;
  asio::write(raw, asio::buffer(frame), ec);
  for (int i = 0; i < 200 && !rejected; i++)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_TRUE(rejected.load());
  server.Stop();
}

// Over a local socket the handshake still proves the key, and frames then go without a MAC:
// a frame written by hand with none is answered, and the answer carries none.
TEST(Connection, LocalSocketFramesCarryNoMacAfterTheHandshake) {
  ClusterKey key = Key('k');
  std::atomic<int> refused{0};
  TcpServer server("auth", "127.0.0.1", 0, AuthEcho(key, &refused));
  server.set_local_alias(true);
  ASSERT_TRUE(server.Start().ok());
  asio::io_context io;
  {  // Another key is refused as over TCP.
    auto c = Connection::Connect(io, "127.0.0.1", server.port());
    ASSERT_TRUE(c.ok());
    ASSERT_EQ((*c)->peer(), "local");
    EXPECT_FALSE((*c)->Authenticate(Key('x'), Connection::Role::kClient, 2000).ok());
  }
  auto raw = Connect(io, "127.0.0.1", server.port(), 2000);
  ASSERT_TRUE(raw.ok());
  Connection c(&*raw);
  ASSERT_EQ(c.peer(), "local");
  ASSERT_TRUE(c.Authenticate(key, Connection::Role::kClient, 2000).ok());
  capnp::MallocMessageBuilder b;
  b.initRoot<wattdb::proto::Request>().initCreateSegment().setLo(
      kj::StringPtr("by hand").asBytes());
  auto words = capnp::messageToFlatArray(b);
  auto bytes = words.asBytes();
  uint32_t n = static_cast<uint32_t>(bytes.size());
  std::string frame(reinterpret_cast<const char*>(&n), 4);
  frame += '\x01';
  frame.append(reinterpret_cast<const char*>(bytes.begin()), bytes.size());  // and no MAC
  boost::system::error_code ec;
  asio::write(*raw, asio::buffer(frame), ec);
  ASSERT_FALSE(ec);
  // The reply: a header, then exactly its payload, then nothing more.
  auto reply = c.Receive();
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  auto split = (*reply)->Root<wattdb::proto::Response>().getSplitKey();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(split.begin()), split.size()), "by hand");
  EXPECT_TRUE(c.LooksIdle());
  server.Stop();
}

// A frame's tag depends on the key, the sequence number, the header and every payload byte.
// An in-memory pair carries messages both ways in order, never waits, and reports a missing
// message or a closed end at once.
TEST(Connection, MemoryPairCarriesMessagesWithoutWaiting) {
  asio::io_context io;
  auto [a, b] = MemoryPair(io);
  EXPECT_TRUE(a->InMemory());
  EXPECT_TRUE(b->LooksIdle());
  for (std::string key : {"one", "two"}) {
    capnp::MallocMessageBuilder m;
    m.initRoot<wattdb::proto::Request>().initCreateSegment().setLo(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(key.data()), key.size()));
    ASSERT_TRUE(a->Send(m).ok());
  }
  EXPECT_FALSE(b->LooksIdle());
  EXPECT_TRUE(b->WaitReadable(1).ok());
  EXPECT_TRUE(a->WaitReadable(1).IsTimedOut()) << "nothing was sent to a";
  for (std::string key : {"one", "two"}) {
    auto r = b->Receive();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto got = (*r)->Root<wattdb::proto::Request>().getCreateSegment().getLo();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.begin()), got.size()), key);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto none = b->Receive();  // a receive timeout would be 30 s
  EXPECT_FALSE(none.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(EchoOnce(*a, "x"), "(receive failed)") << "b never answered";
  ASSERT_TRUE(b->Receive().ok());  // the message EchoOnce sent
  EXPECT_FALSE(a->SendRaw("x", 1).ok());
  b->Close();
  EXPECT_FALSE(a->LooksIdle());
  capnp::MallocMessageBuilder m;
  m.initRoot<wattdb::proto::Request>().setAbort(1);
  EXPECT_FALSE(a->Send(m).ok()) << "the other end closed";
  EXPECT_FALSE(a->Receive().ok());
}

TEST(FrameMac, TagCoversKeySequenceHeaderAndPayload) {
  FrameMac a(std::string(kClusterKeyBytes, 'a')), a2(std::string(kClusterKeyBytes, 'a'));
  FrameMac b(std::string(kClusterKeyBytes, 'b'));
  std::string hdr("\x05\x00\x00\x00\x01", 5), payload(100000, 'p');
  auto tag = a.Frame(7, hdr.data(), hdr.size(), payload.data(), payload.size());
  EXPECT_EQ(tag,
            a2.Frame(7, hdr.data(), hdr.size(), payload.data(), payload.size()));  // the receiver's
  EXPECT_EQ(tag,
            a.Frame(7, hdr.data(), hdr.size(), payload.data(), payload.size()));  // deterministic
  EXPECT_NE(tag, b.Frame(7, hdr.data(), hdr.size(), payload.data(), payload.size()));
  EXPECT_NE(tag, a.Frame(8, hdr.data(), hdr.size(), payload.data(), payload.size()));
  std::string hdr2 = hdr;
  hdr2[4] = 2;
  EXPECT_NE(tag, a.Frame(7, hdr2.data(), hdr2.size(), payload.data(), payload.size()));
  std::string flipped = payload;
  flipped[77777] ^= 1;
  EXPECT_NE(tag, a.Frame(7, hdr.data(), hdr.size(), flipped.data(), flipped.size()));
  EXPECT_NE(tag, a.Frame(7, hdr.data(), hdr.size(), payload.data(), payload.size() - 1));
}

// The tag is AES-256-GCM's over the frame as additional data with no plaintext, nonce = 4
// zero bytes || big-endian sequence number: the GCM specification's test case 13 (zero key,
// zero nonce, nothing authenticated), and OpenSSL's own GCM over header and payload.
TEST(FrameMac, TagIsAes256GcmOverTheFrameAsAdditionalData) {
  FrameMac zero(std::string(kClusterKeyBytes, '\0'));
  auto empty = zero.Frame(0, nullptr, 0, nullptr, 0);
  const unsigned char kCase13[16] = {0x53, 0x0f, 0x8a, 0xfb, 0xc7, 0x45, 0x36, 0xb9,
                                     0xa9, 0x63, 0xb4, 0xf1, 0xc4, 0xcb, 0x73, 0x8b};
  EXPECT_EQ(std::string(empty.begin(), empty.end()),
            std::string(std::begin(kCase13), std::end(kCase13)));

  std::string key(kClusterKeyBytes, '\0');
  for (size_t i = 0; i < key.size(); i++) key[i] = static_cast<char>(i * 7 + 1);
  std::string hdr("\x09\x00\x01\x00\x03", 5), payload(1000, '\0');
  for (size_t i = 0; i < payload.size(); i++) payload[i] = static_cast<char>(i * 31);
  const uint64_t seq = 0x0102030405060708ULL;
  FrameMac mac(key);
  auto tag = mac.Frame(seq, hdr.data(), hdr.size(), payload.data(), payload.size());
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  unsigned char iv[12] = {0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  int len = 0;
  ASSERT_EQ(EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr,
                               reinterpret_cast<const unsigned char*>(key.data()), iv),
            1);
  std::string aad = hdr + payload;
  EVP_EncryptUpdate(c, nullptr, &len, reinterpret_cast<const unsigned char*>(aad.data()),
                    static_cast<int>(aad.size()));
  unsigned char none[16], want[16];
  EVP_EncryptFinal_ex(c, none, &len);
  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, want);
  EVP_CIPHER_CTX_free(c);
  EXPECT_EQ(std::string(tag.begin(), tag.end()), std::string(std::begin(want), std::end(want)));
}

}  // namespace
}  // namespace wattdb::net
