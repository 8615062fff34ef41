// Replication to a follower that is a real wattdb-node process, killed (-9) and frozen
// (SIGSTOP) (docs/design/replication.md): every record the follower acknowledged survives its
// kill; a frozen follower is named within the leader's deadline instead of hanging it; a
// restarted follower takes no record until the master tells it to follow again.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "common/subprocess.h"
#include "net/message_builder.h"
#include "node/node_server.h"
#include "node/wire.h"
#include "rpc/scan_stream.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using node::FromProto;

uint16_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class ReplicaProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_repl_proc_{}", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    port_ = FreePort();
    std::ofstream(dir_ / "cluster.toml")
        << fmt::format(R"([cluster]
data_dir = "{0}"
key_file = "{0}/cluster.key"
rpc_timeout_ms = 3000
local_sockets = false
column_cache_mb = 0
[master]
host = "127.0.0.1"
cluster_port = {1}
[[node]]
id = 1
port = {2}
power = "master"
[[node]]
id = 2
host = "127.0.0.1"
port = {3}
power = "local"
)",
                       dir_.string(), FreePort(), FreePort(), port_);
    node::NodeOptions o;
    o.self.id = 1;
    o.self.host = "127.0.0.1";
    o.data_dir = (dir_ / "leader").string();
    o.master_host = "127.0.0.1";
    o.master_port = 1;  // no master
    o.local_sockets = false;
    o.column_cache_bytes = 0;
    o.rpc_timeout_ms = 3000;
    o.key_file = (dir_ / "cluster.key").string();
    leader_ = std::make_unique<node::NodeServer>(o);
    ASSERT_TRUE(leader_->Start().ok());
    key_ = std::make_unique<net::ClusterKey>(net::ClusterKey::LoadOrCreate(o.key_file).value());
    ASSERT_TRUE(StartFollower());
    client_ = std::make_unique<rpc::NodeClient>(2, "127.0.0.1", port_,
                                                rpc::NodeClientOptions{2000, 3000, key_.get()});
    storage::SegmentMeta m;
    m.id = 1;
    m.table = 1;
    net::MessageBuilder mb;
    node::MetaTo(mb.initRoot<proto::Request>().initCreateSegment(), m);
    ASSERT_TRUE(Call(mb).ok());
    ASSERT_TRUE(Follow(1).ok());
    net::MessageBuilder lb;
    auto l = lb.initRoot<proto::Request>().initLead();
    l.setSegment(1);
    l.setEpoch(1);
    l.setNextSeq(1);
    auto f = l.initFollowers(1);
    f[0].setNode(2);
    f[0].setHost("127.0.0.1");
    f[0].setPort(port_);
    auto leader = std::make_unique<rpc::NodeClient>(1, "127.0.0.1", leader_->port(),
                                                    rpc::NodeClientOptions{2000, 3000, key_.get()});
    net::MessageBuilder cb;  // the leader holds the segment too
    node::MetaTo(cb.initRoot<proto::Request>().initCreateSegment(), m);
    ASSERT_TRUE(leader->Call(cb).ok());
    auto reply = leader->Call(lb);
    ASSERT_TRUE(reply.ok());
    Status led = FromProto((*reply)->Root<proto::Response>().getStatus());
    ASSERT_TRUE(led.ok()) << led.ToString();
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGCONT);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    client_.reset();
    if (leader_) leader_->Stop();
    std::filesystem::remove_all(dir_);
  }
  // Starts the follower's process and waits (10 s at most) until it answers.
  bool StartFollower() {
    auto pid = Spawn({WATTDB_BIN_DIR "/wattdb-node", "--config", (dir_ / "cluster.toml").string(),
                      "--id", "2", "--log-level", "warn"},
                     {.output_file = (dir_ / "follower.log").string()});
    if (!pid.ok()) return false;
    pid_ = *pid;
    for (int i = 0; i < 200; i++) {
      rpc::NodeClient c(2, "127.0.0.1", port_, rpc::NodeClientOptions{500, 1000, key_.get()});
      net::MessageBuilder mb;
      mb.initRoot<proto::Request>().setPing();
      if (c.Call(mb).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  Status Call(capnp::MessageBuilder& mb) {
    auto reply = client_->Call(mb);
    if (!reply.ok()) return reply.status();
    return FromProto((*reply)->Root<proto::Response>().getStatus());
  }
  Status Follow(uint64_t epoch) {
    net::MessageBuilder mb;
    auto f = mb.initRoot<proto::Request>().initFollow();
    f.setSegment(1);
    f.setEpoch(epoch);
    f.setNextSeq(1);
    return Call(mb);
  }
  static storage::WriteOp Op(int k) {
    storage::WriteOp op;
    op.segment = 1;
    EncodeKeyValue(Value::Int64(k), &op.key);
    EncodeRow({Value::Int64(k), Value::Text(fmt::format("row {}", k))}, &op.row);
    return op;
  }
  size_t FollowerRows() {
    client_->Reset("127.0.0.1", port_);
    auto s = rpc::ScanStream::Open(*client_, 1, "", "", 1'000'000, 1000);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    if (!s.ok()) return 0;
    size_t n = 0;
    bool last = false;
    std::vector<std::string> keys, rows;
    while (!last) {
      keys.clear();
      rows.clear();
      Status st = (*s)->Next(&keys, &rows, &last);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) break;
      n += rows.size();
    }
    return n;
  }

  std::filesystem::path dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
  std::unique_ptr<node::NodeServer> leader_;
  std::unique_ptr<net::ClusterKey> key_;
  std::unique_ptr<rpc::NodeClient> client_;
};

TEST_F(ReplicaProcessTest, AcknowledgedRecordsSurviveAKillOfTheFollower) {
  node::Replicator& r = leader_->replicator();
  for (int i = 1; i <= 100; i++) ASSERT_TRUE(r.Ship(100 + i, {Op(i)}).ok()) << i;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
  Status down = r.Ship(300, {Op(1000)});
  EXPECT_EQ(down.code(), Status::Code::kUnavailable) << down.ToString();
  ASSERT_TRUE(StartFollower());
  EXPECT_EQ(FollowerRows(), 100u) << "every acknowledged record is in the restarted follower";
  // It lost what the master told it: it takes no record until told to follow again.
  Status after = r.Ship(301, {Op(1001)});
  EXPECT_EQ(after.code(), Status::Code::kUnavailable) << after.ToString();
  EXPECT_NE(after.message().find("not followed"), std::string::npos) << after.message();
  EXPECT_EQ(FollowerRows(), 100u);
}

TEST_F(ReplicaProcessTest, AFrozenFollowerIsNamedWithinTheDeadlineAndLosesNothing) {
  node::Replicator& r = leader_->replicator();
  for (int i = 1; i <= 20; i++) ASSERT_TRUE(r.Ship(100 + i, {Op(i)}).ok()) << i;
  kill(pid_, SIGSTOP);
  // Stopped before the record goes (a signal takes effect a moment later).
  ASSERT_TRUE(testing::AwaitProcState(pid_, 'T', 2000));
  auto t0 = std::chrono::steady_clock::now();
  Status s = r.Ship(200, {Op(500)});
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("segment 1 on node 2"), std::string::npos) << s.message();
  EXPECT_LT(ms, 30000) << "bounded by the leader's reply deadline (3 s)";
  kill(pid_, SIGCONT);
  // The 20 acknowledged records are there; the one sent while frozen may have been applied
  // after the resume (the master's new epoch fences such a follower: FollowerLog).
  size_t n = FollowerRows();
  EXPECT_GE(n, 20u);
  EXPECT_LE(n, 21u);
}

}  // namespace
}  // namespace wattdb::testing
