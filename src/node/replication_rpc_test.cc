// Replication between two node servers of this process, over their data ports: the master's
// lead and follow requests, a leader's records shipped as replicaApply, and a deposed
// leader's refused (docs/design/replication.md).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "net/message_builder.h"
#include "node/node_server.h"
#include "node/wire.h"
#include "rpc/scan_stream.h"

namespace wattdb::node {
namespace {

class ReplicationRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_repl_rpc_{}", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (NodeId id : {1u, 2u}) {
      NodeOptions o;
      o.self.id = id;
      o.self.host = "127.0.0.1";
      o.self.port = 0;
      o.data_dir = (dir_ / fmt::format("n{}", id)).string();
      o.master_host = "127.0.0.1";
      o.master_port = 1;  // no master: the link retries meanwhile
      o.local_sockets = false;
      o.column_cache_bytes = 0;
      o.rpc_timeout_ms = 5000;
      o.key_file = (dir_ / "cluster.key").string();
      servers_.push_back(std::make_unique<NodeServer>(o));
      ASSERT_TRUE(servers_.back()->Start().ok());
    }
    key_ = std::make_unique<net::ClusterKey>(
        net::ClusterKey::LoadOrCreate((dir_ / "cluster.key").string()).value());
    for (size_t i = 0; i < 2; i++) {
      clients_.push_back(std::make_unique<rpc::NodeClient>(
          static_cast<NodeId>(i + 1), "127.0.0.1", servers_[i]->port(),
          rpc::NodeClientOptions{2000, 5000, key_.get()}));
      storage::SegmentMeta m;
      m.id = 1;
      m.table = 1;
      net::MessageBuilder mb;
      MetaTo(mb.initRoot<proto::Request>().initCreateSegment(), m);
      ASSERT_TRUE(Call(i, mb).ok());
    }
  }
  void TearDown() override {
    clients_.clear();
    for (auto& s : servers_) s->Stop();
    servers_.clear();
    std::filesystem::remove_all(dir_);
  }
  Status Call(size_t node, capnp::MessageBuilder& mb) {
    auto reply = clients_[node]->Call(mb);
    if (!reply.ok()) return reply.status();
    return FromProto((*reply)->Root<proto::Response>().getStatus());
  }
  Status Follow(size_t node, uint64_t epoch, uint64_t next_seq) {
    net::MessageBuilder mb;
    auto f = mb.initRoot<proto::Request>().initFollow();
    f.setSegment(1);
    f.setEpoch(epoch);
    f.setNextSeq(next_seq);
    return Call(node, mb);
  }
  // Node 1 leads segment 1 in `epoch` with `follower` (node id, its data port).
  Status Lead(uint64_t epoch, NodeId follower, uint16_t port) {
    net::MessageBuilder mb;
    auto l = mb.initRoot<proto::Request>().initLead();
    l.setSegment(1);
    l.setEpoch(epoch);
    l.setNextSeq(1);
    auto fs = l.initFollowers(1);
    fs[0].setNode(follower);
    fs[0].setHost("127.0.0.1");
    fs[0].setPort(port);
    return Call(0, mb);
  }
  static storage::WriteOp Op(int k, const std::string& v) {
    storage::WriteOp op;
    op.segment = 1;
    EncodeKeyValue(Value::Int64(k), &op.key);
    EncodeRow({Value::Int64(k), Value::Text(v)}, &op.row);
    return op;
  }
  std::vector<std::string> Rows(size_t node, Timestamp ts) {
    auto s = rpc::ScanStream::Open(*clients_[node], 1, "", "", ts, 1000);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    std::vector<std::string> out, keys, rows;
    bool last = false;
    while (s.ok() && !last) {
      keys.clear();
      rows.clear();
      Status st = (*s)->Next(&keys, &rows, &last);
      EXPECT_TRUE(st.ok()) << st.ToString();
      if (!st.ok()) break;
      out.insert(out.end(), rows.begin(), rows.end());
    }
    return out;
  }

  // A one-round transaction on node 1 (prepare and commit at `ts`) writing `op`; `lagging`
  // receives the reply's replica failures as "segment/node".
  Status CommitOnLeader(uint64_t txn, Timestamp ts, const storage::WriteOp& op,
                        std::vector<std::string>* lagging) {
    net::MessageBuilder mb;
    auto p = mb.initRoot<proto::Request>().initPrepare();
    p.setTxn(txn);
    p.setSnapshotTs(ts - 1);
    p.setCommitTs(ts);
    auto w = p.initWrites(1);
    w[0].setSegment(op.segment);
    w[0].setKey(Bytes(op.key));
    w[0].setKind(1);
    w[0].setRow(Bytes(op.row));
    auto reply = clients_[0]->Call(mb);
    if (!reply.ok()) return reply.status();
    auto resp = (*reply)->Root<proto::Response>();
    for (auto f : resp.getReplicaFailures())
      lagging->push_back(fmt::format("{}/{}", f.getSegment(), f.getNode()));
    return FromProto(resp.getStatus());
  }

  std::filesystem::path dir_;
  std::vector<std::unique_ptr<NodeServer>> servers_;
  std::unique_ptr<net::ClusterKey> key_;
  std::vector<std::unique_ptr<rpc::NodeClient>> clients_;
};

TEST_F(ReplicationRpcTest, ALeadersRecordsReachItsFollowerOverTheNetwork) {
  ASSERT_TRUE(Follow(1, 2, 1).ok());
  ASSERT_TRUE(Lead(2, 2, servers_[1]->port()).ok());
  Replicator& r = servers_[0]->replicator();
  ASSERT_TRUE(r.Ship(10, {Op(1, "a"), Op(2, "b")}).ok());
  ASSERT_TRUE(r.Ship(20, {Op(1, "a2")}).ok());
  auto at15 = Rows(1, 15), at25 = Rows(1, 25);
  ASSERT_EQ(at15.size(), 2u);
  ASSERT_EQ(at25.size(), 2u);
  std::vector<Value> row;
  ASSERT_TRUE(DecodeRow(at15[0], &row).ok());
  EXPECT_EQ(row[1].ToText(), "a") << "the follower's versions carry the leader's timestamps";
  ASSERT_TRUE(DecodeRow(at25[0], &row).ok());
  EXPECT_EQ(row[1].ToText(), "a2");
  EXPECT_EQ(r.NextSeq(1), 3u);
}

TEST_F(ReplicationRpcTest, AFollowerInANewerEpochRefusesTheOldLeader) {
  ASSERT_TRUE(Follow(1, 2, 1).ok());
  ASSERT_TRUE(Lead(2, 2, servers_[1]->port()).ok());
  Replicator& r = servers_[0]->replicator();
  ASSERT_TRUE(r.Ship(10, {Op(1, "a")}).ok());
  ASSERT_TRUE(Follow(1, 3, 2).ok()) << "the master's new epoch reaches the follower first";
  Status s = r.Ship(20, {Op(1, "deposed")});
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("node 2"), std::string::npos) << s.message();
  auto rows = Rows(1, 100);
  ASSERT_EQ(rows.size(), 1u);
  std::vector<Value> row;
  ASSERT_TRUE(DecodeRow(rows[0], &row).ok());
  EXPECT_EQ(row[1].ToText(), "a");
}

TEST_F(ReplicationRpcTest, AFollowerThatStopsIsNamedWithinTheDeadline) {
  ASSERT_TRUE(Follow(1, 2, 1).ok());
  ASSERT_TRUE(Lead(2, 2, servers_[1]->port()).ok());
  Replicator& r = servers_[0]->replicator();
  ASSERT_TRUE(r.Ship(10, {Op(1, "a")}).ok());
  servers_[1]->Stop();  // as a follower process killed: its port closes
  auto t0 = std::chrono::steady_clock::now();
  Status s = r.Ship(20, {Op(1, "b")});
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("segment 1 on node 2"), std::string::npos) << s.message();
  EXPECT_LT(ms, 30000) << "bounded by the connect and reply deadlines";
}

TEST_F(ReplicationRpcTest, AFollowerThatNeverAnswersIsNamedWithinTheDeadline) {
  // A port that takes connections (the kernel's backlog) and never says a word: as a frozen
  // follower's.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(fd, 16), 0);
  socklen_t len = sizeof(a);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ASSERT_TRUE(Lead(2, 3, ntohs(a.sin_port)).ok());
  auto t0 = std::chrono::steady_clock::now();
  Status s = servers_[0]->replicator().Ship(10, {Op(1, "a")});
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  close(fd);
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("segment 1 on node 3"), std::string::npos) << s.message();
  EXPECT_LT(ms, 30000) << "bounded by the connect and reply deadlines";
}

TEST_F(ReplicationRpcTest, BadReplicationRequestsAreRefused) {
  EXPECT_EQ(Lead(2, 1, servers_[0]->port()).code(), Status::Code::kInvalidArgument)
      << "a node cannot follow itself";
  net::MessageBuilder mb;
  auto f = mb.initRoot<proto::Request>().initFollow();
  f.setSegment(99);
  f.setEpoch(1);
  f.setNextSeq(1);
  EXPECT_EQ(Call(1, mb).code(), Status::Code::kNotFound) << "no such segment here";
  // A record for a segment the node does not follow.
  net::MessageBuilder ab;
  auto a = ab.initRoot<proto::Request>().initReplicaApply();
  a.setSegment(1);
  a.setEpoch(1);
  a.setSeq(1);
  a.setTs(5);
  EXPECT_EQ(Call(1, ab).code(), Status::Code::kNotFound);
  ASSERT_TRUE(Follow(1, 1, 1).ok());
  // A record holding another segment's write, or a bad kind.
  net::MessageBuilder bb;
  auto b = bb.initRoot<proto::Request>().initReplicaApply();
  b.setSegment(1);
  b.setEpoch(1);
  b.setSeq(1);
  b.setTs(5);
  auto w = b.initWrites(1);
  w[0].setSegment(7);
  w[0].setKind(1);
  EXPECT_EQ(Call(1, bb).code(), Status::Code::kInvalidArgument);
  EXPECT_TRUE(Rows(1, 100).empty());
}

// A commit on the leader reaches the follower before it is answered; with the follower gone
// the commit stands on the leader and its reply names the follower that missed it.
TEST_F(ReplicationRpcTest, ACommitShipsToTheFollowerAndNamesOneThatMissedIt) {
  ASSERT_TRUE(Follow(1, 2, 1).ok());
  ASSERT_TRUE(Lead(2, 2, servers_[1]->port()).ok());
  std::vector<std::string> lagging;
  ASSERT_TRUE(CommitOnLeader(101, 10, Op(1, "a"), &lagging).ok());
  EXPECT_TRUE(lagging.empty());
  ASSERT_EQ(Rows(1, 11).size(), 1u) << "on the follower once the commit is answered";
  EXPECT_EQ(servers_[0]->replicator().NextSeq(1), 2u);
  servers_[1]->Stop();
  ASSERT_TRUE(CommitOnLeader(102, 20, Op(2, "b"), &lagging).ok());
  EXPECT_EQ(lagging, std::vector<std::string>{"1/2"});
  EXPECT_EQ(Rows(0, 21).size(), 2u);
}

}  // namespace
}  // namespace wattdb::node
