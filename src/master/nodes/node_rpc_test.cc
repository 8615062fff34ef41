#include "master/nodes/node_rpc.h"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "net/cluster_auth.h"
#include "net/tcp_server.h"
#include "proto/node_service.capnp.h"

namespace wattdb::master {
namespace {

using net::ClusterKey;
using net::Connection;

// A commit to two nodes, one of them in this process: the other node's request goes out
// before the node in this process does its part, so that their syncs overlap. The node in
// this process waits (up to 5 s) for the other to hold its request.
TEST(NodeRpc, ADistributedCommitReachesTheOtherNodesBeforeTheOneInThisProcess) {
  ClusterKey key = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
  std::mutex mu;
  std::condition_variable cv;
  bool remote_has_it = false;
  net::TcpServer remote("n2", "127.0.0.1", 0, [&](net::Socket& s) {
    Connection conn(&s);
    if (!conn.Authenticate(key, Connection::Role::kServer, 2000).ok()) return;
    while (conn.Receive().ok()) {
      {
        std::lock_guard<std::mutex> l(mu);
        remote_has_it = true;
      }
      cv.notify_all();
      capnp::MallocMessageBuilder b;
      b.initRoot<proto::Response>().setNone();
      if (!conn.Send(b).ok()) return;
    }
  });
  ASSERT_TRUE(remote.Start().ok());
  NodeClientOptions opts;
  opts.key = &key;
  NodeClient here(1, "127.0.0.1", 1, opts), there(2, "127.0.0.1", remote.port(), opts);
  bool overlapped = false;
  here.SetInline([&](Connection& conn) {
    if (!conn.Receive().ok()) return false;
    {
      std::unique_lock<std::mutex> l(mu);
      overlapped = cv.wait_for(l, std::chrono::seconds(5), [&] { return remote_has_it; });
    }
    capnp::MallocMessageBuilder b;
    b.initRoot<proto::Response>().setNone();
    return conn.Send(b).ok();
  });
  NodeClient* clients[] = {&here, &there};
  std::vector<uint64_t> incarnations;
  auto st = RpcCommitEach(clients, 42, 100, nullptr, &incarnations);
  ASSERT_EQ(st.size(), 2u);
  EXPECT_TRUE(st[0].ok()) << st[0].ToString();
  EXPECT_TRUE(st[1].ok()) << st[1].ToString();
  EXPECT_TRUE(overlapped)
      << "the node in this process worked before the other node had its request";
  remote.Stop();
}

}  // namespace
}  // namespace wattdb::master
