#include "rpc/exchange.h"

#include <atomic>
#include <set>

#include <gtest/gtest.h>

#include "common/codec.h"

namespace wattdb::rpc {
namespace {

// Segments 1..n of a table, each led by node 1 and followed by node 2, all read in this
// process. A follower read (opts.follower_epoch set) of a segment in `refused` fails as a
// follower behind a prepare does.
class ReplicatedMap : public PartMap {
 public:
  ReplicatedMap(int segments, std::set<SegmentId> refused) : refused_(std::move(refused)) {
    for (int i = 0; i < segments; i++) {
      std::string lo, hi;
      if (i > 0) EncodeKeyValue(Value::Int64(i * 100), &lo);
      if (i + 1 < segments) EncodeKeyValue(Value::Int64((i + 1) * 100), &hi);
      segs_.push_back({static_cast<SegmentId>(i + 1), 1, lo, hi, 7, {2}});
    }
  }
  std::vector<SegmentPlace> Segments(TableId, const std::string& lo,
                                     const std::string& hi) override {
    std::vector<SegmentPlace> out;
    for (const auto& s : segs_) {
      if ((hi.empty() || s.lo < hi) && (s.hi.empty() || lo < s.hi)) out.push_back(s);
    }
    return out;
  }
  Result<std::shared_ptr<NodeClient>> Client(NodeId) override {
    return Status::Unavailable("no nodes here");
  }
  NodeId ReadFrom(const SegmentPlace& s) override { return s.followers.front(); }
  bool IsLocal(NodeId) const override { return true; }
  Status RunLocal(SegmentId seg, const std::string&, const std::string&, const plan::PlanNode&,
                  const ExchangeOptions& opts, const std::function<Status(exec::Batch&)>& emit,
                  std::vector<exec::OperatorStats>*) override {
    if (opts.follower_epoch != 0) {
      EXPECT_EQ(opts.follower_epoch, 7u) << "the set's epoch goes with a follower read";
      follower_reads_++;
      if (refused_.count(seg)) return Status::Unavailable("a prepare is not resolved here");
    } else {
      leader_reads_++;
    }
    exec::Batch b;
    b.Reset(1);
    for (int i = 0; i < 3; i++) b.AppendRow({Value::Int64(static_cast<int64_t>(seg) * 100 + i)});
    return emit(b);
  }
  std::atomic<int> follower_reads_{0}, leader_reads_{0};

 private:
  std::set<SegmentId> refused_;
  std::vector<SegmentPlace> segs_;
};

plan::PlanPtr ExchangeOverScan() {
  auto scan = std::make_unique<plan::PlanNode>();
  scan->kind = plan::PlanNode::Kind::kScan;
  scan->table = 1;
  scan->table_name = "t";
  scan->types = {SqlType{TypeId::kInt64}};
  auto x = std::make_unique<plan::PlanNode>();
  x->kind = plan::PlanNode::Kind::kExchange;
  x->types = scan->types;
  x->children.push_back(std::move(scan));
  return x;
}

std::multiset<int64_t> ReadAll(ReplicatedMap& map, bool follower_reads) {
  plan::PlanPtr x = ExchangeOverScan();
  ExchangeOptions o;
  o.follower_reads = follower_reads;
  auto src = ExchangeSource::Open(map, *x, o);
  EXPECT_TRUE(src.ok()) << src.status().ToString();
  std::multiset<int64_t> got;
  if (!src.ok()) return got;
  exec::Batch b;
  while (true) {
    auto more = (*src)->Next(b);
    EXPECT_TRUE(more.ok()) << more.status().ToString();
    if (!more.ok() || !*more) break;
    for (size_t r = 0; r < b.rows; r++) got.insert(b.Row(r)[0].as_int());
  }
  return got;
}

TEST(ExchangeSource, AFollowerThatCannotAnswerLeavesItsSegmentToTheLeader) {
  std::multiset<int64_t> want;
  for (int seg = 1; seg <= 4; seg++) {
    for (int i = 0; i < 3; i++) want.insert(seg * 100 + i);
  }
  ReplicatedMap map(4, {2, 3});
  EXPECT_EQ(ReadAll(map, true), want) << "every row once, whichever copy answered";
  EXPECT_EQ(map.follower_reads_.load(), 4) << "each segment was tried on its follower";
  EXPECT_EQ(map.leader_reads_.load(), 2) << "the two it refused were read on the leader";

  ReplicatedMap off(4, {});
  EXPECT_EQ(ReadAll(off, false), want);
  EXPECT_EQ(off.follower_reads_.load(), 0) << "without follower reads only leaders answer";
  EXPECT_EQ(off.leader_reads_.load(), 4);
}

}  // namespace
}  // namespace wattdb::rpc
