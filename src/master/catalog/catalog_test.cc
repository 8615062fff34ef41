#include "master/catalog/catalog.h"

#include <filesystem>

#include <gtest/gtest.h>

#include "common/bytes.h"
#include "common/codec.h"
#include "common/sqlstate.h"
#include "master/catalog/database_catalog.h"

namespace wattdb::master {
namespace {

class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / fmt::format("wattdb_catalog_{}", getpid()))
               .string();
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    cat_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    cat_.reset();
    auto c = Catalog::Open(dir_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    cat_ = std::move(c).value();
  }
  static std::string K(int64_t v) {
    std::string k;
    EncodeKeyValue(Value::Int64(v), &k);
    return k;
  }
  TableSchema Schema(const std::string& name) {
    TableSchema t;
    t.name = name;
    t.columns = {{"id", {TypeId::kInt64}, true}, {"v", {TypeId::kText}}};
    t.key_columns = {0};
    return t;
  }
  std::string dir_;
  std::unique_ptr<Catalog> cat_;
};

TEST_F(CatalogTest, PartitionMapSurvivesRestart) {
  TableSchema t = Schema("acc");
  auto first = cat_->CreateTable(&t, 2);
  ASSERT_TRUE(first.ok());
  auto s2 = cat_->NextSegmentId();
  auto s3 = cat_->NextSegmentId();
  ASSERT_TRUE(cat_->ApplySplit(first->id, *s2, K(100)).ok());
  ASSERT_TRUE(cat_->ApplySplit(*s2, *s3, K(200)).ok());
  ASSERT_TRUE(cat_->SetOwner(*s3, 3).ok());
  ASSERT_TRUE(cat_->SetNodeState(1, NodeAdminState::kOff).ok());
  auto before = cat_->AllSegments();
  Reopen();
  auto after = cat_->AllSegments();
  ASSERT_EQ(before.size(), 3u);
  ASSERT_EQ(after.size(), 3u);
  for (size_t i = 0; i < before.size(); i++) {
    EXPECT_EQ(before[i].id, after[i].id);
    EXPECT_EQ(before[i].lo, after[i].lo);
    EXPECT_EQ(before[i].hi, after[i].hi);
    EXPECT_EQ(before[i].node, after[i].node);
  }
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(150))->id, *s2);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(99))->id, first->id);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(1000))->node, 3u);
  EXPECT_EQ(cat_->SegmentsOverlapping(t.id, K(120), K(250)).size(), 2u);
  EXPECT_EQ(cat_->GetNodeState(1), NodeAdminState::kOff);
  EXPECT_EQ(cat_->GetTable("acc")->columns.size(), 2u);
  EXPECT_EQ(cat_->GetTable("nope").status().sqlstate(), sqlstate::kUndefinedTable);
}

// A database's view remembers tables while the schema version holds: every change through
// any view of the catalog (another database's, or the catalog itself) shows at once.
TEST_F(CatalogTest, ADatabaseViewSeesEveryTableChangeAtOnce) {
  DatabaseCatalog db(*cat_, kDefaultDatabase), other(*cat_, "other");
  ASSERT_TRUE(cat_->CreateDatabase("other").ok());
  TableSchema t = Schema("acc");
  ASSERT_TRUE(db.CreateTable(&t, 1).ok());
  for (int i = 0; i < 3; i++) EXPECT_EQ(db.GetTable("acc")->columns.size(), 2u);
  EXPECT_EQ(db.GetTable("acc")->name, "acc");
  // A column added through the shared catalog.
  TableSchema wider = *cat_->GetTable("acc");
  wider.columns.push_back({"w", {TypeId::kDouble}});
  ASSERT_TRUE(cat_->UpdateTable(wider).ok());
  EXPECT_EQ(db.GetTable("acc")->columns.size(), 3u);
  // An index: seen by readers at or after its ready timestamp only, as before.
  IndexDef ix;
  ix.name = "acc_v";
  ix.spec.id = 1;
  ix.spec.columns = {1};
  ix.spec.desc = {false};
  ix.ready_ts = 50;
  wider.indexes.push_back(ix);
  ASSERT_TRUE(cat_->UpdateTable(wider).ok());
  db.set_read_snapshot(40);
  EXPECT_TRUE(db.GetTable("acc")->indexes.empty());
  db.set_read_snapshot(60);
  EXPECT_EQ(db.GetTable("acc")->indexes.size(), 1u);
  // Dropped and made again with another schema: the new table.
  ASSERT_TRUE(db.DropTable("acc").ok());
  EXPECT_EQ(db.GetTable("acc").status().sqlstate(), sqlstate::kUndefinedTable);
  TableSchema again = Schema("acc");
  again.columns.pop_back();
  ASSERT_TRUE(db.CreateTable(&again, 1).ok());
  EXPECT_EQ(db.GetTable("acc")->columns.size(), 1u);
  EXPECT_EQ(db.GetTable("acc")->id, again.id);
  // Databases stay apart.
  EXPECT_EQ(other.GetTable("acc").status().sqlstate(), sqlstate::kUndefinedTable);
  TableSchema mine = Schema("acc");
  ASSERT_TRUE(other.CreateTable(&mine, 1).ok());
  EXPECT_EQ(other.GetTable("acc")->id, mine.id);
  EXPECT_EQ(db.GetTable("acc")->id, again.id);
}

// Lookups by id (the write path asks whether a table has a unique index) follow every
// change of the tables, and a restart.
TEST_F(CatalogTest, LookupsByIdFollowTableChanges) {
  TableSchema a = Schema("a");
  TableSchema b = Schema("b");
  ASSERT_TRUE(cat_->CreateTable(&a, 1).ok());
  ASSERT_TRUE(cat_->CreateTable(&b, 1).ok());
  EXPECT_EQ(cat_->TableById(a.id)->name, "a");
  EXPECT_FALSE(cat_->HasUniqueIndex(a.id));
  IndexDef ix;
  ix.name = "a_v";
  ix.spec.id = 1;
  ix.spec.columns = {1};
  ix.spec.desc = {false};
  ix.unique = true;
  a.indexes.push_back(ix);
  ASSERT_TRUE(cat_->UpdateTable(a).ok());
  EXPECT_TRUE(cat_->HasUniqueIndex(a.id));
  EXPECT_FALSE(cat_->HasUniqueIndex(b.id));
  Reopen();
  EXPECT_TRUE(cat_->HasUniqueIndex(a.id));
  EXPECT_EQ(cat_->TableById(b.id)->name, "b");
  // b's rows replaced by a staged table's (as TRUNCATE does): b now has the staged id.
  TableSchema staged = Schema("b_staged");
  ASSERT_TRUE(cat_->CreateTable(&staged, 1).ok());
  ASSERT_TRUE(cat_->ReplaceTable("b", "b_staged").ok());
  EXPECT_FALSE(cat_->TableById(b.id).has_value());
  EXPECT_EQ(cat_->TableById(staged.id)->name, "b");
  ASSERT_TRUE(cat_->DropTable("a").ok());
  EXPECT_FALSE(cat_->HasUniqueIndex(a.id));
  EXPECT_FALSE(cat_->TableById(a.id).has_value());
}

TEST_F(CatalogTest, CountersNeverRepeatAcrossRestarts) {
  std::set<uint64_t> seen;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 10; i++) {
      auto ts = cat_->NextTimestamp();
      ASSERT_TRUE(ts.ok());
      EXPECT_TRUE(seen.insert(*ts).second);
    }
    Reopen();
  }
  auto last = *seen.rbegin();
  EXPECT_GT(*cat_->NextTimestamp(), last);
}

// A cut into pieces: consecutive fresh ids, the intent with its piece count survives a
// restart, and the pieces are recorded with the intent's end in one write.
TEST_F(CatalogTest, ASplitIntoPiecesIsLoggedAndRecordedAtOnce) {
  TableSchema t = Schema("p");
  auto seg = cat_->CreateTable(&t, 1);
  ASSERT_TRUE(seg.ok());
  auto single = cat_->NextSegmentId();
  auto first = cat_->NextSegmentIds(100);  // more than a counter block
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_GT(*first, *single);
  ASSERT_TRUE(cat_->LogSplitIntent({seg->id, *first, 1, 3}).ok());
  Reopen();
  EXPECT_GE(*cat_->NextSegmentId(), *first + 100)
      << "ids of the block must not be handed out again";
  ASSERT_EQ(cat_->PendingSplits().size(), 1u);
  EXPECT_EQ(cat_->PendingSplits()[0].pieces, 3u);
  EXPECT_EQ(cat_->PendingSplits()[0].new_id, *first);
  // Keys out of order are refused and change nothing.
  EXPECT_FALSE(cat_->ApplySplits(seg->id, *first, {K(300), K(200)}).ok());
  EXPECT_EQ(cat_->AllSegments().size(), 1u);
  auto before = cat_->GetSegment(seg->id);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(cat_->SegmentIs(*before));
  ASSERT_TRUE(
      cat_->ApplySplits(seg->id, *first, {K(100), K(200)}).ok());  // fewer pieces than asked
  EXPECT_FALSE(cat_->SegmentIs(*before))
      << "the split narrowed its range: a routing by it is stale";
  EXPECT_TRUE(cat_->SegmentIs(*cat_->GetSegment(seg->id)));
  EXPECT_FALSE(cat_->SegmentIs(SegmentEntry{*first + 50, t.id, "", "", before->node}))
      << "no such segment";
  EXPECT_TRUE(cat_->PendingSplits().empty());
  Reopen();
  EXPECT_TRUE(cat_->PendingSplits().empty());
  ASSERT_EQ(cat_->AllSegments().size(), 3u);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(99))->id, seg->id);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(100))->id, *first);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(199))->id, *first);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(200))->id, *first + 1);
  EXPECT_EQ(cat_->SegmentForKey(t.id, K(1 << 30))->id, *first + 1);
  EXPECT_EQ(cat_->GetSegment(*first + 1)->hi, "");
  // A one-piece intent is stored as before pieces existed, and reads back as one piece.
  ASSERT_TRUE(cat_->LogSplitIntent({seg->id, *first + 2, 1}).ok());
  Reopen();
  ASSERT_EQ(cat_->PendingSplits().size(), 1u);
  EXPECT_EQ(cat_->PendingSplits()[0].pieces, 1u);
}

TEST_F(CatalogTest, MoveIntentsAndTrashAreLogged) {
  TableSchema t = Schema("m");
  auto seg = cat_->CreateTable(&t, 1);
  ASSERT_TRUE(cat_->LogMoveIntent({seg->id, 1, 2}).ok());
  Reopen();
  ASSERT_EQ(cat_->PendingMoves().size(), 1u);
  EXPECT_EQ(cat_->PendingMoves()[0].to, 2u);
  ASSERT_TRUE(cat_->SetOwner(seg->id, 2).ok());  // clears the intent atomically
  EXPECT_TRUE(cat_->PendingMoves().empty());
  ASSERT_TRUE(cat_->DropTable("m").ok());
  Reopen();
  EXPECT_EQ(cat_->Trash().size(), 1u);
  EXPECT_TRUE(cat_->AllSegments().empty());
  ASSERT_TRUE(cat_->ClearTrash(seg->id).ok());
  Reopen();
  EXPECT_TRUE(cat_->Trash().empty());
  TableSchema again = Schema("m");
  EXPECT_TRUE(cat_->CreateTable(&again, 1).ok());
  EXPECT_EQ(cat_->CreateTable(&again, 1).status().sqlstate(), sqlstate::kDuplicateTable);
}

TEST_F(CatalogTest, ReplicaSetsPersistAndEveryChangeIsANewEpoch) {
  TableSchema t = Schema("r");
  auto seg = cat_->CreateTable(&t, 1);
  ASSERT_TRUE(seg.ok());
  EXPECT_EQ(seg->epoch, 1u);
  EXPECT_TRUE(seg->followers.empty());
  auto set = cat_->SetReplicas(seg->id, 1, {2, 3});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->epoch, 2u);
  EXPECT_FALSE(cat_->SegmentIs(*seg)) << "a routing of the old epoch is stale";
  EXPECT_TRUE(cat_->SegmentIs(*set));
  // Nodes must be distinct, and 0 names no node.
  EXPECT_FALSE(cat_->SetReplicas(seg->id, 2, {2}).ok());
  EXPECT_FALSE(cat_->SetReplicas(seg->id, 1, {0}).ok());
  EXPECT_FALSE(cat_->SetReplicas(seg->id + 1000, 1, {}).ok());
  Reopen();
  auto back = cat_->GetSegment(seg->id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->node, 1u);
  EXPECT_EQ(back->followers, (std::vector<NodeId>{2, 3}));
  EXPECT_EQ(back->epoch, 2u);
  // A move to a follower makes it the leader, in a new epoch, and no longer a follower.
  ASSERT_TRUE(cat_->LogMoveIntent({seg->id, 1, 3}).ok());
  ASSERT_TRUE(cat_->SetOwner(seg->id, 3).ok());
  Reopen();
  back = cat_->GetSegment(seg->id);
  EXPECT_EQ(back->node, 3u);
  EXPECT_EQ(back->followers, (std::vector<NodeId>{2}));
  EXPECT_EQ(back->epoch, 3u);
  // A split's new segments keep the replica set.
  ASSERT_TRUE(cat_->LogSplitIntent({seg->id, seg->id + 100, 3, 1}).ok());
  ASSERT_TRUE(cat_->ApplySplit(seg->id, seg->id + 100, K(50)).ok());
  auto upper = cat_->GetSegment(seg->id + 100);
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(upper->node, 3u);
  EXPECT_EQ(upper->followers, (std::vector<NodeId>{2}));
  // Followers leaving keep the epoch when asked to; a new leader never does, nor goes back.
  auto kept = cat_->SetReplicas(seg->id, 3, {}, back->epoch);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->epoch, back->epoch);
  EXPECT_FALSE(cat_->SetReplicas(seg->id, 2, {}, back->epoch).ok());
  EXPECT_FALSE(cat_->SetReplicas(seg->id, 3, {}, back->epoch - 1).ok());
  auto jumped = cat_->SetReplicas(seg->id, 2, {3}, back->epoch + 5);
  ASSERT_TRUE(jumped.ok());
  EXPECT_EQ(jumped->epoch, back->epoch + 5);
}

// A follower that sleeps leaves the set in the same epoch and is kept as an asleep copy; it
// follows again once caught up, is given up when it cannot be, and a new epoch or a split
// leaves it behind.
TEST_F(CatalogTest, AsleepCopiesPersistKeepTheEpochAndEndWithANewOne) {
  using Change = Catalog::AsleepChange;
  TableSchema t = Schema("a");
  auto seg = cat_->CreateTable(&t, 1);
  ASSERT_TRUE(seg.ok());
  auto set = cat_->SetReplicas(seg->id, 1, {2, 3});
  ASSERT_TRUE(set.ok());
  auto slept = cat_->SetAsleep(seg->id, 3, Change::kSleep);
  ASSERT_TRUE(slept.ok()) << slept.status().ToString();
  EXPECT_EQ(slept->epoch, set->epoch);
  EXPECT_EQ(slept->followers, (std::vector<NodeId>{2}));
  EXPECT_EQ(slept->asleep, (std::vector<NodeId>{3}));
  EXPECT_EQ(cat_->SetAsleep(seg->id, 3, Change::kSleep).status().code(), Status::Code::kNotFound);
  Reopen();
  auto back = cat_->GetSegment(seg->id);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->asleep, (std::vector<NodeId>{3}));
  auto woke = cat_->SetAsleep(seg->id, 3, Change::kWake);
  ASSERT_TRUE(woke.ok());
  EXPECT_EQ(woke->followers, (std::vector<NodeId>{2, 3}));
  EXPECT_TRUE(woke->asleep.empty());
  ASSERT_TRUE(cat_->SetAsleep(seg->id, 2, Change::kSleep).ok());
  auto forgot = cat_->SetAsleep(seg->id, 2, Change::kForget);
  ASSERT_TRUE(forgot.ok());
  EXPECT_EQ(forgot->followers, (std::vector<NodeId>{3}));
  EXPECT_TRUE(forgot->asleep.empty());
  ASSERT_TRUE(cat_->SetAsleep(seg->id, 3, Change::kSleep).ok());
  auto renumbered = cat_->SetReplicas(seg->id, 1, {2});  // a new epoch
  ASSERT_TRUE(renumbered.ok());
  EXPECT_TRUE(renumbered->asleep.empty()) << "another numbering: it cannot catch up";
  ASSERT_TRUE(cat_->SetAsleep(seg->id, 2, Change::kSleep).ok());
  ASSERT_TRUE(cat_->LogSplitIntent({seg->id, seg->id + 100, 1, 1}).ok());
  ASSERT_TRUE(cat_->ApplySplit(seg->id, seg->id + 100, K(50)).ok());
  EXPECT_TRUE(cat_->GetSegment(seg->id)->asleep.empty());
  EXPECT_TRUE(cat_->GetSegment(seg->id + 100)->asleep.empty());
}

TEST_F(CatalogTest, ATablesReplicasPersistAndOlderRecordsReadAsTheClusterDefault) {
  TableSchema t = Schema("rr");
  t.replicas = 3;
  ASSERT_TRUE(cat_->CreateTable(&t, 1).ok());
  Reopen();
  auto back = cat_->GetTable("rr");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->replicas, 3u);
  std::string bytes;
  t.replicas = 0;
  t.Serialize(&bytes);
  bytes.pop_back();  // the replicas varint (0): a record written before replicas existed
  auto old = TableSchema::Deserialize(bytes);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->replicas, 0u);
}

TEST_F(CatalogTest, ASegmentRecordWrittenBeforeReplicaSetsReadsAsASetOfOne) {
  // The record as it was written before replica sets: id, table, lo, hi, node.
  std::string old;
  ByteWriter w(&old);
  w.VarU64(7);
  w.VarU64(42);
  w.Str("");
  w.Str("");
  w.VarU64(2);
  auto e = Catalog::DecodeSegmentForTest(old);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->id, 7u);
  EXPECT_EQ(e->node, 2u);
  EXPECT_EQ(e->epoch, 1u);
  EXPECT_TRUE(e->followers.empty());
  EXPECT_FALSE(Catalog::DecodeSegmentForTest(old + "\x05").ok()) << "a truncated replica set";
}

}  // namespace
}  // namespace wattdb::master
