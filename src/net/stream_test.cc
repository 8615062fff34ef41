#include "net/stream.h"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

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

// Every test runs on a stream of each kind of reads.
class StreamTest : public ::testing::TestWithParam<Stream::Reads> {};

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A timeout starts when the call must wait: received bytes are read at once, a peer that
// stops mid-message or stops reading ends the call with TimedOut after the timeout.
TEST_P(StreamTest, CallsWithinATimeoutWaitNoLongerThanIt) {
  const Stream::Reads reads = GetParam();
  Pair p;
  Stream reader(p.a, reads), writer(p.b, reads);
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

// A wait takes its own deadline, not a longer one an earlier wait set on the socket.
TEST_P(StreamTest, AShortWaitAfterALongOneEndsAtItsOwnDeadline) {
  const Stream::Reads reads = GetParam();
  Pair p;
  Stream reader(p.a, reads), writer(p.b);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_TRUE(writer.WriteAll("x", 1, Stream::In(1000)).ok());
  });
  char c = 0;
  ASSERT_TRUE(reader.ReadExactWithin(&c, 1, 20000).ok());  // waits with a 20 s timeout
  late.join();
  EXPECT_EQ(c, 'x');
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(reader.WaitReadableWithin(100).IsTimedOut());
  EXPECT_LT(SecondsSince(t0), 5.0);
  t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(reader.ReadExactWithin(&c, 1, 100).IsTimedOut());
  EXPECT_LT(SecondsSince(t0), 5.0);
}

// After WaitReadable the reads of what arrived do not wait (a blocking-reads stream holds it
// in its buffer), and the peer's close is reported by the read, not by the wait.
TEST_P(StreamTest, WaitReadableKeepsWhatArrived) {
  const Stream::Reads reads = GetParam();
  Pair p;
  Stream reader(p.a, reads), writer(p.b);
  ASSERT_TRUE(writer.WriteAll("hello", 5, Stream::In(1000)).ok());
  ASSERT_TRUE(reader.WaitReadableWithin(1000).ok());
  EXPECT_EQ(reader.buffered(), reads == Stream::Reads::kBlocking ? 5u : 0u);
  EXPECT_FALSE(reader.LooksIdle());
  char buf[5];
  ASSERT_TRUE(reader.ReadExactWithin(buf, 5, 0).ok());
  EXPECT_EQ(std::string(buf, 5), "hello");
  EXPECT_TRUE(reader.LooksIdle());
  p.b.close();
  EXPECT_TRUE(reader.WaitReadableWithin(1000).ok());  // the close is there to read
  Status st = reader.ReadExactWithin(buf, 1, 1000);
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
}

// Shutting the socket down from another thread ends a read blocked in the kernel at once.
TEST_P(StreamTest, ShutdownEndsABlockedRead) {
  const Stream::Reads reads = GetParam();
  Pair p;
  Stream reader(p.a, reads);
  Status st;
  auto t0 = std::chrono::steady_clock::now();
  std::thread blocked([&] {
    char c;
    st = reader.ReadExactWithin(&c, 1, 60000);
  });
  ::shutdown(p.a.native_handle(), SHUT_RDWR);  // before or during its recv: either ends it
  blocked.join();
  EXPECT_EQ(st.code(), Status::Code::kIOError) << st.ToString();
  EXPECT_LT(SecondsSince(t0), 30.0);
}

INSTANTIATE_TEST_SUITE_P(Reads, StreamTest,
                         ::testing::Values(Stream::Reads::kPoll, Stream::Reads::kBlocking),
                         [](const auto& info) {
                           return info.param == Stream::Reads::kPoll ? "Poll" : "Blocking";
                         });

}  // namespace
}  // namespace wattdb::net
