#include "rpc/scan_stream.h"

#include <functional>

#include <gtest/gtest.h>

#include "net/cluster_auth.h"
#include "net/tcp_server.h"
#include "proto/node_service.capnp.h"
#include "query/exec/batch_codec.h"
#include "rpc/proto_util.h"

namespace wattdb::rpc {
namespace {

using net::ClusterKey;
using net::Connection;
using net::TcpServer;

// A batch of one int column and one text column: rows [from, from + n).
exec::Batch Rows(int from, int n) {
  exec::Batch b;
  b.Reset(2);
  for (int i = from; i < from + n; i++) {
    b.cols[0].Append(Value::Int64(i));
    b.cols[1].Append(Value::Text("row " + std::to_string(i)));
    b.rows++;
  }
  return b;
}

// One reply frame: `batches` back to back, with their sizes when `sizes` (else none).
struct Frame {
  std::vector<exec::Batch> batches;
  bool sizes = true;
  std::string resume;
  bool last = false;
  uint64_t cpu = 0;
  std::function<void(proto::Response::ScanBatch::Builder)> tamper;
};

// A node that answers one scan request with `frames`.
class FakeNode {
 public:
  explicit FakeNode(std::vector<Frame> frames)
      : frames_(std::move(frames)),
        server_("n", "127.0.0.1", 0, [this](net::Socket& s) { Serve(s); }) {
    EXPECT_TRUE(server_.Start().ok());
    opts_.key = &key_;
    opts_.io_ms = 5000;
    client_ = std::make_unique<NodeClient>(1, "127.0.0.1", server_.port(), opts_);
  }
  ~FakeNode() { server_.Stop(); }
  std::unique_ptr<ScanStream> Open() {
    capnp::MallocMessageBuilder mb;
    mb.initRoot<proto::Request>().initScan().setSegment(1);
    auto s = ScanStream::Start(*client_, mb);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }

 private:
  void Serve(net::Socket& s) {
    Connection c(&s);
    if (!c.Authenticate(key_, Connection::Role::kServer, 2000).ok() || !c.Receive().ok()) return;
    for (const Frame& f : frames_) {
      std::string bytes;
      std::vector<uint32_t> sizes;
      for (const auto& b : f.batches) {
        size_t before = bytes.size();
        exec::EncodeBatch(b, &bytes);
        sizes.push_back(static_cast<uint32_t>(bytes.size() - before));
      }
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      resp.setCpuNanos(f.cpu);
      resp.initStatus();
      auto b = resp.initScanBatch();
      b.setLast(f.last);
      if (!f.batches.empty()) b.setColumns(Bytes(bytes));
      if (f.sizes && f.batches.size() > 1) {
        auto l = b.initColumnSizes(sizes.size());
        for (size_t i = 0; i < sizes.size(); i++) l.set(i, sizes[i]);
      }
      b.setResumeKey(Bytes(f.resume));
      if (f.last) b.setStats(Bytes(exec::EncodeOperatorStats({{42, 3, 1.5}})));
      if (f.tamper) f.tamper(b);
      if (!c.Send(mb).ok()) return;
    }
  }

  std::vector<Frame> frames_;
  ClusterKey key_ = ClusterKey::FromBytes(std::string(net::kClusterKeyBytes, 'k'));
  NodeClientOptions opts_;
  TcpServer server_;
  std::unique_ptr<NodeClient> client_;
};

struct Got {
  Status st;
  exec::Batch batch;
  std::string resume;
  bool last = false;
  uint64_t cpu = 0;
  std::vector<exec::OperatorStats> stats;
};

Got Next(ScanStream& s) {
  Got g;
  g.st = s.NextColumns(&g.batch, &g.resume, &g.last, &g.cpu, &g.stats);
  return g;
}

// A reply may carry several batches: each is read on its own, in order; the reply's CPU comes
// with its first, its resume key with its last, and the stream's counters with the very last.
TEST(ScanStream, AReplyOfSeveralBatchesIsReadOneBatchAtATime) {
  FakeNode node({{{Rows(0, 3), Rows(3, 4096), Rows(4099, 1)}, true, "k1", false, 700},
                 {{Rows(4100, 2)}, true, "k2", false, 80},
                 {{Rows(4102, 5), Rows(4107, 6)}, true, "k3", true, 9}});
  auto s = node.Open();
  ASSERT_TRUE(s);
  struct Want {
    int from, n;
    const char* resume;
    bool last;
    uint64_t cpu;
  };
  const Want want[] = {{0, 3, "", false, 700},    {3, 4096, "", false, 0},
                       {4099, 1, "k1", false, 0}, {4100, 2, "k2", false, 80},
                       {4102, 5, "", false, 9},   {4107, 6, "k3", true, 0}};
  for (const Want& w : want) {
    Got g = Next(*s);
    ASSERT_TRUE(g.st.ok()) << g.st.ToString();
    ASSERT_EQ(g.batch.rows, static_cast<size_t>(w.n));
    EXPECT_EQ(g.batch.cols[0].GetValue(0).as_int(), w.from);
    EXPECT_EQ(g.batch.cols[1].GetValue(w.n - 1).as_text(),
              "row " + std::to_string(w.from + w.n - 1));
    EXPECT_EQ(g.resume, w.resume);
    EXPECT_EQ(g.last, w.last);
    EXPECT_EQ(g.cpu, w.cpu);
    ASSERT_EQ(g.stats.size(), w.last ? 1u : 0u);
    if (w.last) {
      EXPECT_EQ(g.stats[0].rows, 42u);
    }
  }
  EXPECT_FALSE(Next(*s).st.ok()) << "read past the last reply";
}

// Sizes that do not cut the reply's bytes into batches exactly are Corruption.
TEST(ScanStream, BatchSizesThatDoNotAddUpAreCorruption) {
  auto sizes = [](std::vector<uint32_t> v) {
    return [v](proto::Response::ScanBatch::Builder b) {
      auto l = b.initColumnSizes(v.size());
      for (size_t i = 0; i < v.size(); i++) l.set(i, v[i]);
    };
  };
  std::string enc;
  exec::EncodeBatch(Rows(0, 3), &enc);
  const uint32_t n = static_cast<uint32_t>(enc.size());
  const std::vector<std::function<void(proto::Response::ScanBatch::Builder)>> tampers = {
      sizes({n, n + 1}),  // one byte too many
      sizes({n, n - 1}),  // one too few
      sizes({0, n, n}),   // an empty batch
      [&](proto::Response::ScanBatch::Builder b) {
        (void)b.disownColumns();
        sizes({n})(b);
      },                      // sizes without bytes
      sizes({n - 1, n + 1}),  // the right total, cut wrong
  };
  for (size_t i = 0; i < tampers.size(); i++) {
    FakeNode node({{{Rows(0, 3), Rows(3, 3)}, true, "k", true, 1, tampers[i]}});
    auto s = node.Open();
    ASSERT_TRUE(s);
    Status st;
    for (int k = 0; k < 3 && st.ok(); k++) st = Next(*s).st;
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << "case " << i << ": " << st.ToString();
  }
  // Untampered, the same frame reads whole.
  FakeNode node({{{Rows(0, 3), Rows(3, 3)}, true, "k", true, 1}});
  auto s = node.Open();
  ASSERT_TRUE(s);
  EXPECT_TRUE(Next(*s).st.ok());
  Got g = Next(*s);
  EXPECT_TRUE(g.st.ok() && g.last && g.batch.rows == 3) << g.st.ToString();
}

}  // namespace
}  // namespace wattdb::rpc
