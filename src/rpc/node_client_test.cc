#include "rpc/node_client.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "net/cluster_auth.h"
#include "net/tcp_server.h"
#include "proto/node_service.capnp.h"

namespace wattdb::rpc {
namespace {

using net::ClusterKey;
using net::Connection;
using net::TcpServer;

std::string Text(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

void Build(capnp::MallocMessageBuilder& b, const std::string& text) {
  b.initRoot<proto::Request>().initCreateSegment().setLo(
      kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
}

// Two servers that answer a request only once both have received one (or after 5 s): a
// client that waits for one reply before sending the other request gets a late answer,
// flagged "late" in the reply.
struct Rendezvous {
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;

  TcpServer::Handler Handler(const ClusterKey& key) {
    return [this, &key](net::Socket& s) {
      Connection c(&s);
      if (!c.Authenticate(key, Connection::Role::kServer, 2000).ok()) return;
      while (true) {
        auto m = c.Receive();
        if (!m.ok()) return;
        std::string text = Text((*m)->Root<proto::Request>().getCreateSegment().getLo());
        bool met;
        {
          std::unique_lock<std::mutex> l(mu);
          arrived++;
          cv.notify_all();
          met = cv.wait_for(l, std::chrono::seconds(5), [&] { return arrived >= 2; });
        }
        if (!met) text += " late";
        capnp::MallocMessageBuilder b;
        b.initRoot<proto::Response>().setSplitKey(
            kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
        if (!c.Send(b).ok()) return;
      }
    };
  }
};

std::string Reply(Result<std::unique_ptr<net::ReceivedMessage>> r) {
  if (!r.ok()) return r.status().ToString();
  return Text((*r)->Root<proto::Response>().getSplitKey());
}

TEST(NodeClient, StartSendsBeforeAnyReplyIsAwaited) {
  ClusterKey key = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
  Rendezvous meet;
  TcpServer a("a", "127.0.0.1", 0, meet.Handler(key)), b("b", "127.0.0.1", 0, meet.Handler(key));
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(b.Start().ok());
  NodeClientOptions opts;
  opts.key = &key;
  opts.io_ms = 10000;
  NodeClient ca(1, "127.0.0.1", a.port(), opts), cb(2, "127.0.0.1", b.port(), opts);
  capnp::MallocMessageBuilder ra, rb;
  Build(ra, "to a");
  Build(rb, "to b");
  auto pa = ca.Start(ra);
  ASSERT_TRUE(pa.ok()) << pa.status().ToString();
  auto pb = cb.Start(rb);
  ASSERT_TRUE(pb.ok()) << pb.status().ToString();
  EXPECT_EQ(Reply(pa->Finish()), "to a");
  EXPECT_EQ(Reply(pb->Finish()), "to b");
  EXPECT_FALSE(pa->Finish().ok());  // once
  a.Stop();
  b.Stop();
}

// A request whose reply was never read leaves no stale reply for the connection's next
// borrower: its connection is dropped.
TEST(NodeClient, UnfinishedCallDoesNotLeaveItsReplyBehind) {
  ClusterKey key = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
  Rendezvous meet;
  meet.arrived = 2;  // answer at once
  TcpServer server("s", "127.0.0.1", 0, meet.Handler(key));
  ASSERT_TRUE(server.Start().ok());
  NodeClientOptions opts;
  opts.key = &key;
  NodeClient c(1, "127.0.0.1", server.port(), opts);
  {
    capnp::MallocMessageBuilder r;
    Build(r, "first");
    auto p = c.Start(r);
    ASSERT_TRUE(p.ok());
  }
  for (std::string text : {"second", "third"}) {
    capnp::MallocMessageBuilder r;
    Build(r, text);
    EXPECT_EQ(Reply(c.Call(r)), text);
  }
  server.Stop();
}

// A node in the caller's process (SetInline): small requests of the kinds it takes run on the
// caller's thread; other kinds, and requests too big for a socket buffer, go to the data port.
TEST(NodeClient, InProcessRequestsRunOnTheCallersThread) {
  ClusterKey key = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
  // The data port answers every request with "network".
  TcpServer server("s", "127.0.0.1", 0, [&key](net::Socket& s) {
    Connection conn(&s);
    if (!conn.Authenticate(key, Connection::Role::kServer, 2000).ok()) return;
    while (conn.Receive().ok()) {
      capnp::MallocMessageBuilder b;
      auto resp = b.initRoot<proto::Response>();
      resp.setSplitKey(kj::arrayPtr(reinterpret_cast<const kj::byte*>("network"), 7));
      resp.setCpuNanos(5000);
      if (!conn.Send(b).ok()) return;
    }
  });
  ASSERT_TRUE(server.Start().ok());
  NodeClientOptions opts;
  opts.key = &key;
  uint64_t booked = 0;  // node CPU told to the statement
  opts.on_cpu = [&](NodeId, uint64_t nanos) { booked += nanos; };
  NodeClient c(1, "127.0.0.1", server.port(), opts);
  EXPECT_FALSE(c.InProcess());
  {
    capnp::MallocMessageBuilder r;
    Build(r, "a segment");
    EXPECT_EQ(Reply(c.Call(r)), "network");
    EXPECT_EQ(booked, 5000u);
  }
  std::thread::id served_on;
  int served = 0;
  c.SetInline([&](Connection& conn) {
    served_on = std::this_thread::get_id();
    served++;
    auto m = conn.Receive();
    if (!m.ok()) return false;
    uint64_t txn = (*m)->Root<proto::Request>().getAbort();
    if (txn == 99) return false;  // gives up without a reply
    capnp::MallocMessageBuilder b;
    std::string text = "in process " + std::to_string(txn);
    b.initRoot<proto::Response>().setSplitKey(
        kj::arrayPtr(reinterpret_cast<const kj::byte*>(text.data()), text.size()));
    return conn.Send(b).ok();
  });
  EXPECT_TRUE(c.InProcess());
  for (uint64_t txn : {7, 8}) {  // the second reuses the first's socket pair
    capnp::MallocMessageBuilder r;
    r.initRoot<proto::Request>().setAbort(txn);
    EXPECT_EQ(Reply(c.Call(r)), "in process " + std::to_string(txn));
  }
  EXPECT_EQ(served, 2);
  EXPECT_EQ(served_on, std::this_thread::get_id());
  // A handler that gives up: the call fails at once, not at its deadline.
  {
    capnp::MallocMessageBuilder r;
    r.initRoot<proto::Request>().setAbort(99);
    auto reply = c.Call(r);
    ASSERT_FALSE(reply.ok());
    EXPECT_NE(reply.status().code(), Status::Code::kTimedOut) << reply.status().ToString();
  }
  // Other kinds go to the data port.
  capnp::MallocMessageBuilder other;
  Build(other, "a segment");
  EXPECT_EQ(Reply(c.Call(other)), "network");
  EXPECT_EQ(booked, 5000u) << "a node in this process spends this process's CPU: nothing to book";
  // A request of an in-process kind runs in process whatever its size (a bulk prepare).
  capnp::MallocMessageBuilder big;
  auto p = big.initRoot<proto::Request>().initPrepare();
  std::string row(100 << 10, 'x');
  auto writes = p.initWrites(1);
  writes[0].setRow(kj::arrayPtr(reinterpret_cast<const kj::byte*>(row.data()), row.size()));
  int before = served;
  EXPECT_EQ(Reply(c.Call(big)), "in process 0");
  EXPECT_EQ(served, before + 1);
  server.Stop();
}

// A client that held several in-process calls at once keeps their socket pairs; it closes them
// when destroyed, before the I/O context they were made on (the master's shutdown after load).
TEST(NodeClient, IdleInProcessPairsCloseBeforeTheClient) {
  for (int round = 0; round < 20; round++) {
    ClusterKey key = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
    NodeClientOptions opts;
    opts.key = &key;
    auto c = std::make_unique<NodeClient>(1, "127.0.0.1", 1, opts);
    c->SetInline([&](Connection& conn) {
      auto m = conn.Receive();
      if (!m.ok()) return false;
      capnp::MallocMessageBuilder b;
      b.initRoot<proto::Response>();
      return conn.Send(b).ok();
    });
    std::vector<NodeClient::Pending> open;
    for (uint64_t txn = 1; txn <= 8; txn++) {  // all held at once: 8 socket pairs
      capnp::MallocMessageBuilder r;
      r.initRoot<proto::Request>().setAbort(txn);
      auto p = c->Start(r);
      ASSERT_TRUE(p.ok()) << p.status().ToString();
      open.push_back(std::move(*p));
    }
    for (auto& p : open) ASSERT_TRUE(p.Finish().ok());
    open.clear();  // the pairs go back to the client's pool
    c.reset();
  }
}

}  // namespace
}  // namespace wattdb::rpc
