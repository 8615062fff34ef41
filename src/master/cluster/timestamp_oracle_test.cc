#include "master/cluster/timestamp_oracle.h"

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace wattdb::master {
namespace {

struct Counter {
  Timestamp next = 100;
  std::function<Result<Timestamp>()> fn() {
    return [this]() -> Result<Timestamp> { return ++next; };
  }
};

TEST(TimestampOracleTest, SnapshotsStayBelowCommitsInFlight) {
  Counter c;
  TimestampOracle ts(c.fn());
  ts.Reset(100);
  EXPECT_EQ(ts.Read(), 100u);
  auto a = ts.BeginCommit();
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 101u);
  auto b = ts.BeginCommit();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(ts.LastIssued(), 102u);
  EXPECT_EQ(ts.Read(), 100u);  // below the lowest in flight
  ts.EndCommit(*a);            // the lowest: returns at once
  EXPECT_EQ(ts.Read(), 101u);
  ts.EndCommit(*b);
  EXPECT_EQ(ts.Read(), 102u);
}

TEST(TimestampOracleTest, ACommitEndsOnlyAfterEveryEarlierOne) {
  Counter c;
  TimestampOracle ts(c.fn());
  ts.Reset(0);
  Timestamp first = *ts.BeginCommit();
  Timestamp second = *ts.BeginCommit();
  std::atomic<bool> ended{false};
  std::thread t([&] {
    ts.EndCommit(second);
    ended = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(ended.load());  // waits for `first`
  ts.EndCommit(first);
  t.join();
  EXPECT_TRUE(ended.load());
  ts.AwaitStable();
  EXPECT_EQ(ts.Read(), second);
}

TEST(TimestampOracleTest, HeldSnapshotsBoundTheGcHorizon) {
  Counter c;
  TimestampOracle ts(c.fn());
  ts.Reset(100);
  Timestamp held = ts.Acquire();
  Timestamp again = ts.Acquire();  // the same timestamp twice: held twice
  EXPECT_EQ(held, again);
  ts.EndCommit(*ts.BeginCommit());
  EXPECT_EQ(ts.Read(), 101u);
  EXPECT_EQ(ts.GcHorizon(), held);
  ts.Release(held);
  EXPECT_EQ(ts.GcHorizon(), held);  // the other hold remains
  ts.Release(again);
  EXPECT_EQ(ts.GcHorizon(), 101u);
}

TEST(TimestampOracleTest, AFailedDrawLeavesNothingInFlight) {
  TimestampOracle ts([]() -> Result<Timestamp> { return Status::IOError("disk full"); });
  ts.Reset(7);
  EXPECT_FALSE(ts.BeginCommit().ok());
  EXPECT_EQ(ts.Read(), 7u);
  ts.AwaitStable();  // returns: nothing in flight
}

}  // namespace
}  // namespace wattdb::master
