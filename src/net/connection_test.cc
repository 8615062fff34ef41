#include "net/connection.h"

#include <gtest/gtest.h>

#include "net/tcp_server.h"
#include "proto/node_service.capnp.h"

namespace wattdb::net {
namespace {

// Echoes each message back; a raw frame is answered with its length.
void Echo(asio::ip::tcp::socket& s) {
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
    req.initCreateSegment().setLo(kj::arrayPtr(reinterpret_cast<const kj::byte*>(lo.data()), lo.size()));
    ASSERT_TRUE((*c)->Send(b).ok());
    auto r = (*c)->Receive();
    ASSERT_TRUE(r.ok());
    auto got = (*r)->Root<wattdb::proto::Response>().getSplitKey();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(got.begin()), got.size()), lo);
  }
  server.Stop();
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

}  // namespace
}  // namespace wattdb::net
