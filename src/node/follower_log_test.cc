#include "node/follower_log.h"

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

namespace wattdb::node {
namespace {

using Admission = FollowerLog::Admission;

TEST(FollowerLog, RecordsApplyInSequenceAndAResendIsDone) {
  FollowerLog log(30000);
  ASSERT_TRUE(log.Follow(7, 2, 1).ok());
  auto a = log.Admit(7, 2, 1);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, Admission::kApply);
  log.Applied(7, 1);
  EXPECT_EQ(*log.Admit(7, 2, 2), Admission::kApply);
  log.Applied(7, 2);
  EXPECT_EQ(*log.Admit(7, 2, 1), Admission::kDone) << "a resend of an applied record";
  EXPECT_EQ(log.LastApplied(7), 2u);
  EXPECT_EQ(log.Epoch(7), 2u);
}

TEST(FollowerLog, ARecordOfAnotherEpochIsRefused) {
  FollowerLog log(30000);
  ASSERT_TRUE(log.Follow(7, 3, 1).ok());
  EXPECT_TRUE(log.Admit(7, 2, 1).status().IsStale()) << "a deposed leader's record";
  EXPECT_TRUE(log.Admit(7, 4, 1).status().IsStale()) << "an epoch the master did not tell";
  EXPECT_TRUE(log.Follow(7, 2, 1).IsStale()) << "the master's word does not go back";
  EXPECT_EQ(log.Admit(8, 3, 1).status().code(), Status::Code::kNotFound);
}

TEST(FollowerLog, AFollowerReadWaitsForNoPrepareItCouldMiss) {
  FollowerLog log(30000);
  EXPECT_EQ(log.Readable(7, 1, 100).code(), Status::Code::kNotFound) << "not followed here";
  ASSERT_TRUE(log.Follow(7, 3, 1).ok());
  EXPECT_TRUE(log.Readable(7, 3, 100).ok());
  EXPECT_TRUE(log.Readable(7, 2, 100).ok()) << "a newer epoch holds what the older one did";
  EXPECT_TRUE(log.Readable(7, 4, 100).IsStale()) << "the master named an epoch not told here";
  // A prepare copy that commits above 50: reads at or below 50 cannot miss it, later ones may.
  log.Prepared(7, 42, 50);
  EXPECT_TRUE(log.Readable(7, 3, 50).ok());
  EXPECT_EQ(log.Readable(7, 3, 51).code(), Status::Code::kUnavailable);
  log.Resolved(7, 42);
  EXPECT_TRUE(log.Readable(7, 3, 51).ok()) << "its outcome applied here";
  log.Prepared(7, 43, 60);
  ASSERT_TRUE(log.Follow(7, 4, 1).ok());
  EXPECT_EQ(log.Readable(7, 4, 61).code(), Status::Code::kUnavailable)
      << "a new epoch keeps the copies";
  log.Unfollow(7);
  ASSERT_TRUE(log.Follow(7, 5, 1).ok());
  EXPECT_TRUE(log.Readable(7, 5, 61).ok()) << "a copy followed anew holds no prepares";
}

TEST(FollowerLog, ARecordAheadWaitsForTheOnesBeforeIt) {
  FollowerLog log(30000);
  ASSERT_TRUE(log.Follow(7, 1, 1).ok());
  std::atomic<bool> admitted{false};
  Result<Admission> second = Status::Internal("not run");
  std::thread t([&] {
    second = log.Admit(7, 1, 2);
    admitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(admitted.load()) << "record 2 must wait for record 1";
  ASSERT_EQ(*log.Admit(7, 1, 1), Admission::kApply);
  log.Applied(7, 1);
  t.join();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, Admission::kApply);
}

TEST(FollowerLog, AGapThatDoesNotCloseMakesTheFollowerBehind) {
  FollowerLog log(100);
  ASSERT_TRUE(log.Follow(7, 1, 1).ok());
  auto a = log.Admit(7, 1, 3);
  EXPECT_EQ(a.status().code(), Status::Code::kAborted) << a.status().ToString();
  EXPECT_EQ(log.LastApplied(7), 0u);
}

TEST(FollowerLog, AFailedApplyLeavesTheRecordNext) {
  FollowerLog log(30000);
  ASSERT_TRUE(log.Follow(7, 1, 5).ok());
  ASSERT_EQ(*log.Admit(7, 1, 5), Admission::kApply);
  log.Failed(7, 5);
  EXPECT_EQ(*log.Admit(7, 1, 5), Admission::kApply) << "tried again";
  log.Applied(7, 5);
  EXPECT_EQ(log.LastApplied(7), 5u);
}

TEST(FollowerLog, ANewEpochEndsTheWaitsOfTheOldOne) {
  FollowerLog log(30000);
  ASSERT_TRUE(log.Follow(7, 1, 1).ok());
  Result<Admission> waiting = Status::Internal("not run");
  std::thread t([&] { waiting = log.Admit(7, 1, 2); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(log.Follow(7, 2, 1).ok());
  t.join();
  EXPECT_TRUE(waiting.status().IsStale()) << waiting.status().ToString();
  log.Unfollow(7);
  EXPECT_FALSE(log.LastApplied(7).has_value());
}

}  // namespace
}  // namespace wattdb::node
