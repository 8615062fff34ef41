#include "net/stream.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <string>
#include <vector>

namespace wattdb::net {
namespace {

// A connected pair of local stream sockets.
struct Pair {
  asio::io_context io;
  Socket a{io}, b{io};
  Pair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    a.assign(asio::generic::stream_protocol(AF_UNIX, 0), sv[0]);
    b.assign(asio::generic::stream_protocol(AF_UNIX, 0), sv[1]);
  }
};

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A timeout starts when the call must wait: received bytes are read at once, a peer that
// stops mid-message or stops reading ends the call with TimedOut after the timeout.
TEST(StreamTest, CallsWithinATimeoutWaitNoLongerThanIt) {
  Pair p;
  Stream reader(p.a), writer(p.b);
  ASSERT_TRUE(writer.WriteAll("abc", 3, Stream::In(1000)).ok());
  char buf[4] = {};
  ASSERT_TRUE(reader.ReadExactWithin(buf, 2, 200).ok());
  EXPECT_EQ(std::string(buf, 2), "ab");
  EXPECT_EQ(reader.buffered(), 1u);
  auto t0 = std::chrono::steady_clock::now();
  Status st = reader.ReadExactWithin(buf, 4, 200);  // one byte there, three never come
  double s = SecondsSince(t0);
  EXPECT_TRUE(st.IsTimedOut()) << st.ToString();
  EXPECT_GE(s, 0.15);
  EXPECT_LT(s, 5.0);
  // Nobody reads: the socket's buffers fill, then the write times out.
  std::vector<char> big(1 << 20, 'x');
  std::array<asio::const_buffer, 1> bufs = {asio::buffer(big)};
  t0 = std::chrono::steady_clock::now();
  Status ws;
  for (int i = 0; i < 64 && ws.ok(); i++) ws = writer.WriteGatherWithin(bufs, 200);
  s = SecondsSince(t0);
  EXPECT_TRUE(ws.IsTimedOut()) << ws.ToString();
  EXPECT_LT(s, 5.0);
}

}  // namespace
}  // namespace wattdb::net
