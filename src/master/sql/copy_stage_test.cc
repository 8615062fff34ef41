#include "master/sql/copy_stage.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

#include "common/sqlstate.h"

namespace wattdb::master {
namespace {

TEST(CopyStageTest, HandlesBatchesInOrderThroughChainedStages) {
  std::vector<int> seen;  // written by the last stage's thread only, read after Finish
  CopyStage<int> last([&](int v) {
    seen.push_back(v);
    return Status::OK();
  });
  CopyStage<int> first([&](int v) { return last.Push(v * 10); });
  for (int i = 0; i < 1000; i++) ASSERT_TRUE(first.Push(i).ok());
  ASSERT_TRUE(first.Finish().ok());
  ASSERT_TRUE(last.Finish().ok());
  ASSERT_EQ(seen.size(), 1000u);
  for (int i = 0; i < 1000; i++) ASSERT_EQ(seen[i], i * 10);
}

// A failure in the last stage stops it; the stage before learns it from its next Push, and
// the pusher from a Push or Finish: no batch after the failed one is handled.
TEST(CopyStageTest, TheFirstFailureStopsEveryStageAndIsReported) {
  std::atomic<int> handled{0};
  CopyStage<int> last([&](int v) {
    if (v == 50) return Status::Sql(sqlstate::kInvalidTextRepresentation, "bad value in batch 50");
    handled++;
    return Status::OK();
  });
  CopyStage<int> first([&](int v) { return last.Push(v); });
  Status pushed;
  int i = 0;
  for (; i < 100000 && pushed.ok(); i++) pushed = first.Push(i);
  Status finished = first.Finish();
  Status failed = pushed.ok() ? finished : pushed;
  EXPECT_EQ(failed.sqlstate(), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(failed.message(), "bad value in batch 50");
  EXPECT_LT(i, 100000);  // the pusher stopped early
  EXPECT_EQ(last.Finish().sqlstate(), sqlstate::kInvalidTextRepresentation);
  EXPECT_EQ(handled.load(), 50);  // batches 0..49; nothing after the failure
}

}  // namespace
}  // namespace wattdb::master
