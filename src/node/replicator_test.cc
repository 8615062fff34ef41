#include "node/replicator.h"

#include <unistd.h>

#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/codec.h"
#include "node/participant.h"

namespace wattdb::node {
namespace {

// A follower in this process: its own store, reached directly.
class LocalPeer : public ReplicaPeer {
 public:
  LocalPeer(FollowerLog& log, storage::SegmentStore& store) : log_(log), store_(store) {}
  Status Send(const ReplicaRecord& r) override { return ApplyReplicaRecord(log_, store_, r); }

 private:
  FollowerLog& log_;
  storage::SegmentStore& store_;
};

class FailingPeer : public ReplicaPeer {
 public:
  Status Send(const ReplicaRecord&) override { return Status::Unavailable("connection refused"); }
};

class ReplicatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("wattdb_repl_{}", getpid());
    std::filesystem::remove_all(dir_);
    for (auto* s : {&leader_, &follower_}) {
      *s = std::move(
          storage::SegmentStore::Open((dir_ / (s == &leader_ ? "l" : "f")).string()).value());
      ASSERT_TRUE((*s)->CreateSegment({1, 1, "", ""}).ok());
      ASSERT_TRUE((*s)->CreateSegment({2, 1, "", ""}).ok());
    }
  }
  void TearDown() override {
    leader_.reset();
    follower_.reset();
    std::filesystem::remove_all(dir_);
  }
  static storage::WriteOp Op(SegmentId seg, int k, const std::string& v) {
    storage::WriteOp op;
    op.segment = seg;
    EncodeKeyValue(Value::Int64(k), &op.key);
    EncodeRow({Value::Int64(k), Value::Text(v)}, &op.row);
    return op;
  }
  // Applies `ops` on the leader at `ts`, then ships them.
  Status Commit(Replicator& r, Timestamp ts, const std::vector<storage::WriteOp>& ops) {
    RETURN_NOT_OK(leader_->Apply(ts, ops, 0, 0, true));
    return r.Ship(ts, ops);
  }
  static std::vector<storage::ScanRow> Rows(storage::SegmentStore& s, SegmentId seg, Timestamp ts) {
    auto scan = s.Scan(seg, "", "", ts);
    EXPECT_TRUE(scan.ok()) << scan.status().ToString();
    std::vector<storage::ScanRow> out, batch;
    while (true) {
      batch.clear();
      auto more = (*scan)->Next(1000, &batch);
      EXPECT_TRUE(more.ok());
      out.insert(out.end(), batch.begin(), batch.end());
      if (!more.ok() || !*more) break;
    }
    return out;
  }
  static bool Same(const std::vector<storage::ScanRow>& a, const std::vector<storage::ScanRow>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i].key != b[i].key || a[i].row != b[i].row) return false;
    }
    return true;
  }

  // A replicator that leads segment 1 in epoch 1 with the local follower (node 9), which
  // follows it.
  std::unique_ptr<Replicator> LeadToFollower() {
    auto r = std::make_unique<Replicator>(
        [this](NodeId) { return std::make_shared<LocalPeer>(log_, *follower_); });
    EXPECT_TRUE(r->Lead(1, 1, {9}, 1).ok());
    EXPECT_TRUE(log_.Follow(1, 1, 1).ok());
    return r;
  }

  std::filesystem::path dir_;
  std::unique_ptr<storage::SegmentStore> leader_, follower_;
  FollowerLog log_{30000};
};

TEST_F(ReplicatorTest, AFollowerHoldsEveryShippedCommitAtTheLeadersTimestamps) {
  Replicator r([&](NodeId) { return std::make_shared<LocalPeer>(log_, *follower_); });
  ASSERT_TRUE(r.Lead(1, 2, {9}, 1).ok());
  ASSERT_TRUE(log_.Follow(1, 2, 1).ok());
  ASSERT_TRUE(Commit(r, 10, {Op(1, 1, "a"), Op(1, 2, "b"), Op(2, 7, "not replicated")}).ok());
  ASSERT_TRUE(Commit(r, 20, {Op(1, 1, "a2")}).ok());
  EXPECT_EQ(log_.LastApplied(1), 2u);
  EXPECT_EQ(r.NextSeq(1), 3u);
  // Every snapshot reads the same rows on both: the versions carry the leader's timestamps.
  for (Timestamp ts : {15, 25}) {
    auto l = Rows(*leader_, 1, ts);
    auto f = Rows(*follower_, 1, ts);
    EXPECT_EQ(l.size(), 2u);
    EXPECT_TRUE(Same(l, f)) << "at " << ts;
  }
  EXPECT_TRUE(Rows(*follower_, 2, 25).empty()) << "segment 2 has no followers";
}

TEST_F(ReplicatorTest, ConcurrentCommitsAllReachTheFollower) {
  Replicator r([&](NodeId) { return std::make_shared<LocalPeer>(log_, *follower_); });
  ASSERT_TRUE(r.Lead(1, 1, {9}, 1).ok());
  ASSERT_TRUE(log_.Follow(1, 1, 1).ok());
  std::atomic<Timestamp> next_ts{100};
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int t = 0; t < 4; t++) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < 50; i++) {
        if (!Commit(r, next_ts++, {Op(1, t * 1000 + i, "v")}).ok()) failed++;
      }
    });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(log_.LastApplied(1), 200u);
  EXPECT_TRUE(Same(Rows(*leader_, 1, 1000), Rows(*follower_, 1, 1000)));
  EXPECT_EQ(Rows(*follower_, 1, 1000).size(), 200u);
}

TEST_F(ReplicatorTest, AFollowerThatFailsIsNamed) {
  Replicator r([&](NodeId n) -> std::shared_ptr<ReplicaPeer> {
    if (n == 3) return std::make_shared<FailingPeer>();
    return std::make_shared<LocalPeer>(log_, *follower_);
  });
  ASSERT_TRUE(r.Lead(1, 1, {3, 9}, 1).ok());
  ASSERT_TRUE(log_.Follow(1, 1, 1).ok());
  Status s = Commit(r, 10, {Op(1, 1, "a")});
  EXPECT_EQ(s.code(), Status::Code::kUnavailable);
  EXPECT_NE(s.message().find("segment 1 on node 3"), std::string::npos) << s.message();
  EXPECT_EQ(log_.LastApplied(1), 1u) << "the live follower has it";
}

// A peer that records when records are sent and when their answers are read.
class RecordingPeer : public ReplicaPeer {
 public:
  RecordingPeer(NodeId n, std::vector<std::string>& events) : n_(n), events_(events) {}
  Status Send(const ReplicaRecord& r) override { return Start(r)->Finish(); }
  std::unique_ptr<Pending> Start(const ReplicaRecord& r) override {
    events_.push_back(fmt::format("send {} to {}", r.seq, n_));
    struct Answer : Pending {
      Answer(std::string what, std::vector<std::string>& events) : what(what), events(events) {}
      Status Finish() override {
        events.push_back(what);
        return Status::OK();
      }
      std::string what;
      std::vector<std::string>& events;
    };
    return std::make_unique<Answer>(fmt::format("answer {} from {}", r.seq, n_), events_);
  }

 private:
  NodeId n_;
  std::vector<std::string>& events_;
};

TEST_F(ReplicatorTest, EveryFollowerHasTheRecordBeforeTheFirstAnswerIsAwaited) {
  std::vector<std::string> events;
  Replicator r([&](NodeId n) { return std::make_shared<RecordingPeer>(n, events); });
  ASSERT_TRUE(r.Lead(1, 1, {2, 3}, 1).ok());
  Replicator::InFlight f = r.Begin(r.Number(10, {Op(1, 1, "a")}));
  events.push_back("local sync");
  EXPECT_TRUE(Replicator::Finish(f).empty());
  EXPECT_EQ(events, (std::vector<std::string>{"send 1 to 2", "send 1 to 3", "local sync",
                                              "answer 1 from 2", "answer 1 from 3"}));
}

// A follower that sleeps leaves the set; the leader keeps what it misses and catches it up
// when it wakes, in the same epoch, with no copy of the segment. Past the bound, it cannot.
TEST_F(ReplicatorTest, ASleepingFollowerIsCaughtUpFromTheKeptRecords) {
  auto r = LeadToFollower();
  ASSERT_TRUE(Commit(*r, 10, {Op(1, 1, "a")}).ok());
  ASSERT_TRUE(r->Lead(1, 1, {}, 0, /*keep_bytes=*/1 << 20).ok());  // node 9 sleeps
  for (int i = 2; i <= 5; i++) ASSERT_TRUE(Commit(*r, 10 * i, {Op(1, i, "b")}).ok());
  EXPECT_EQ(log_.LastApplied(1), 1u) << "shipped to no one";
  EXPECT_EQ(r->CatchUp(1, 9, 1).code(), Status::Code::kNotFound) << "record 1 was not kept";
  ASSERT_TRUE(r->CatchUp(1, 9, 2).ok());
  EXPECT_EQ(log_.LastApplied(1), 5u);
  EXPECT_TRUE(Same(Rows(*leader_, 1, 1000), Rows(*follower_, 1, 1000)));
  EXPECT_EQ(r->Positions()[1].offset, log_.Positions()[1].offset) << "no byte behind";
  // Back in the set; the next commit ships as before.
  ASSERT_TRUE(r->Lead(1, 1, {9}, 0).ok());
  ASSERT_TRUE(Commit(*r, 60, {Op(1, 6, "c")}).ok());
  EXPECT_EQ(log_.LastApplied(1), 6u);
  // A bound of a few bytes keeps only the newest record.
  ASSERT_TRUE(r->Lead(1, 1, {}, 0, /*keep_bytes=*/1).ok());
  ASSERT_TRUE(Commit(*r, 70, {Op(1, 7, "d")}).ok());
  ASSERT_TRUE(Commit(*r, 80, {Op(1, 8, "e")}).ok());
  EXPECT_EQ(r->CatchUp(1, 9, 7).code(), Status::Code::kNotFound);
}

// A commit whose local apply failed is kept for a sleeping copy as it went out: empty.
TEST_F(ReplicatorTest, AKeptRecordOfACommitNotAppliedHereCatchesUpEmpty) {
  auto r = LeadToFollower();
  ASSERT_TRUE(r->Lead(1, 1, {}, 0, /*keep_bytes=*/1 << 20).ok());
  Replicator::Outgoing out = r->Number(10, {Op(1, 1, "never applied")});
  ASSERT_FALSE(out.empty());
  r->Blank(out);
  ASSERT_TRUE(r->CatchUp(1, 9, 1).ok());
  EXPECT_EQ(log_.LastApplied(1), 1u) << "the number is used";
  EXPECT_TRUE(Rows(*follower_, 1, 1000).empty()) << "the writes are not";
}

TEST_F(ReplicatorTest, ADeposedLeaderCannotReplicate) {
  Replicator old_leader([&](NodeId) { return std::make_shared<LocalPeer>(log_, *follower_); });
  ASSERT_TRUE(old_leader.Lead(1, 1, {9}, 1).ok());
  ASSERT_TRUE(log_.Follow(1, 1, 1).ok());
  ASSERT_TRUE(Commit(old_leader, 10, {Op(1, 1, "a")}).ok());
  // The master moves the segment to a new epoch and tells the follower first.
  ASSERT_TRUE(log_.Follow(1, 2, 2).ok());
  Status s = Commit(old_leader, 20, {Op(1, 1, "stale")});
  EXPECT_EQ(s.code(), Status::Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("epoch"), std::string::npos) << s.message();
  auto f = Rows(*follower_, 1, 100);
  ASSERT_EQ(f.size(), 1u);
  std::vector<Value> row;
  ASSERT_TRUE(DecodeRow(f[0].row, &row).ok());
  EXPECT_EQ(row[1].ToText(), "a") << "the deposed leader's write never reached the follower";
  EXPECT_TRUE(old_leader.Lead(1, 1, {}, 1).ok()) << "the same epoch may be told again";
  EXPECT_TRUE(old_leader.Lead(1, 0, {}, 1).IsStale());
}

// A transaction over several nodes, prepared durably on a leader: the follower keeps a copy
// of the prepare; should the leader be lost before the commit, the follower, leading now,
// holds the transaction in doubt with its keys locked and commits it from the master's word.
TEST_F(ReplicatorTest, AFollowerThatTakesTheLeadHoldsTheDurablePreparesOfItsLeader) {
  auto r = LeadToFollower();
  Participant leader(*leader_);
  leader.set_replicator(r.get());
  auto prepare = [&](Participant& p, uint64_t txn, std::vector<storage::WriteOp> ops) {
    std::vector<TxnWrite> writes;
    for (auto& op : ops) writes.push_back({std::move(op), WriteCheck::kInsert, {}});
    std::vector<ReplicaFailure> lagging;
    PrepareOptions opts;
    opts.durable = true;
    opts.min_commit_ts = 50;
    opts.lagging = &lagging;
    Status st = p.Prepare(txn, 40, std::move(writes), opts);
    EXPECT_TRUE(lagging.empty());
    return st;
  };
  ASSERT_TRUE(prepare(leader, 7, {Op(1, 1, "a"), Op(1, 2, "b"), Op(2, 5, "unreplicated")}).ok());
  ASSERT_TRUE(prepare(leader, 8, {Op(1, 3, "aborted")}).ok());
  ASSERT_TRUE(leader.Abort(8));
  auto copies = follower_->ListReplicaPrepared(1);
  ASSERT_TRUE(copies.ok());
  ASSERT_EQ(copies->size(), 1u) << "txn 8's copy went with its abort";
  EXPECT_EQ((*copies)[0].first, 7u);
  EXPECT_TRUE(follower_->ListReplicaPrepared(2)->empty());

  // The leader is lost; the follower's node leads segment 1.
  Participant successor(*follower_, std::chrono::milliseconds(50));
  ASSERT_TRUE(successor.AdoptReplicaPrepares(1).ok());
  ASSERT_TRUE(successor.AdoptReplicaPrepares(1).ok()) << "idempotent";
  EXPECT_EQ(successor.InDoubt(), std::vector<uint64_t>{7});
  EXPECT_TRUE(follower_->ListReplicaPrepared(1)->empty()) << "the copy became a prepare";
  std::vector<TxnWrite> rival;
  rival.push_back({Op(1, 1, "rival"), WriteCheck::kNone, {}});
  EXPECT_FALSE(successor.Prepare(9, 60, std::move(rival), {.wait = false}).ok())
      << "the prepared key is locked";
  // A restart of the successor keeps it prepared (a durable prepare record of its own).
  {
    Participant restarted(*follower_);
    ASSERT_TRUE(restarted.Recover().ok());
    EXPECT_EQ(restarted.InDoubt(), std::vector<uint64_t>{7});
  }
  ASSERT_TRUE(successor.Commit(7, 60).ok());
  auto rows = Rows(*follower_, 1, 100);
  EXPECT_EQ(rows.size(), 2u);
  EXPECT_TRUE(Rows(*follower_, 1, 55).empty()) << "committed at the master's timestamp";
  EXPECT_TRUE(successor.InDoubt().empty());
}

// A commit of a durably prepared transaction tells the follower to drop its copy.
TEST_F(ReplicatorTest, ACommitEndsTheFollowersCopyOfThePrepare) {
  auto r = LeadToFollower();
  Participant leader(*leader_);
  leader.set_replicator(r.get());
  std::vector<TxnWrite> writes;
  writes.push_back({Op(1, 1, "a"), WriteCheck::kInsert, {}});
  ASSERT_TRUE(leader.Prepare(7, 40, std::move(writes), {.durable = true}).ok());
  EXPECT_EQ(follower_->ListReplicaPrepared(1)->size(), 1u);
  std::vector<ReplicaFailure> lagging;
  ASSERT_TRUE(leader.Commit(7, 60, nullptr, 0, false, &lagging).ok());
  EXPECT_TRUE(lagging.empty());
  EXPECT_TRUE(follower_->ListReplicaPrepared(1)->empty());
  EXPECT_EQ(Rows(*follower_, 1, 100).size(), 1u);
  EXPECT_EQ(log_.LastApplied(1), 2u) << "the prepare's record, then the commit's";
}

}  // namespace
}  // namespace wattdb::node
