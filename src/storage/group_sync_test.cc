// GroupSync: a caller returns only once a sync that began after its append ended; callers
// that sleep through a sync are covered together by the next one; a failed sync reaches the
// caller that ran it and the others sync again.
#include "storage/group_sync.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace wattdb::storage {
namespace {

// A log that counts appends; a sync makes the appends counted at its start durable.
struct FakeLog {
  std::atomic<uint64_t> appended{0};
  std::atomic<uint64_t> durable{0};
  std::atomic<int> calls{0};
  std::mutex mu;
  std::condition_variable cv;
  bool hold_first = false;  // the first sync waits for Release
  bool released = false;
  int fail_call = -1;  // this call (0-based) fails

  Status Sync() {
    int call = calls.fetch_add(1);
    uint64_t upto = appended.load();
    if (call == 0 && hold_first) {
      std::unique_lock<std::mutex> l(mu);
      if (!cv.wait_for(l, std::chrono::seconds(30), [&] { return released; }))
        return Status::IOError("not released");
    }
    if (call == fail_call) return Status::IOError("disk gone");
    if (upto > durable.load()) durable.store(upto);
    return Status::OK();
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu);
    released = true;
    cv.notify_all();
  }
};

TEST(GroupSync, EveryCallerReturnsAfterASyncThatCoversItsAppend) {
  FakeLog log;
  GroupSync group([&] { return log.Sync(); });
  constexpr int kThreads = 6, kRounds = 400;
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; i++) {
        uint64_t mine = log.appended.fetch_add(1) + 1;
        ASSERT_TRUE(group.Sync(group.Written()).ok());
        if (log.durable.load() < mine) early++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0);
  EXPECT_EQ(log.calls.load(), static_cast<int>(group.syncs()));
}

TEST(GroupSync, CallersThatWaitedThroughASyncShareTheNextOne) {
  FakeLog log;
  log.hold_first = true;
  GroupSync group([&] { return log.Sync(); });
  log.appended = 1;
  std::thread first([&] { EXPECT_TRUE(group.Sync(group.Written()).ok()); });
  while (log.calls.load() == 0) std::this_thread::yield();  // the first sync runs, held
  constexpr int kWaiters = 5;
  std::atomic<int> ticketed{0};
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; i++) {
    waiters.emplace_back([&] {
      uint64_t mine = log.appended.fetch_add(1) + 1;
      uint64_t ticket = group.Written();
      ticketed++;
      EXPECT_TRUE(group.Sync(ticket).ok());
      EXPECT_GE(log.durable.load(), mine);
    });
  }
  while (ticketed.load() < kWaiters) std::this_thread::yield();
  log.Release();
  first.join();
  for (auto& t : waiters) t.join();
  // The held sync covered the first append only; one more covered all five waiters.
  EXPECT_EQ(log.calls.load(), 2);
  EXPECT_EQ(group.syncs(), 2u);
  EXPECT_EQ(log.durable.load(), 1u + kWaiters);
}

TEST(GroupSync, AFailedSyncReachesItsCallerAndTheOthersSyncAgain) {
  FakeLog log;
  log.hold_first = true;
  log.fail_call = 0;
  GroupSync group([&] { return log.Sync(); });
  log.appended = 1;
  Status first_status;
  std::thread first([&] { first_status = group.Sync(group.Written()); });
  while (log.calls.load() == 0) std::this_thread::yield();
  std::atomic<int> ticketed{0};
  Status second_status;
  std::thread second([&] {
    log.appended.fetch_add(1);
    uint64_t ticket = group.Written();
    ticketed++;
    second_status = group.Sync(ticket);
  });
  while (ticketed.load() < 1) std::this_thread::yield();
  log.Release();
  first.join();
  second.join();
  EXPECT_EQ(first_status.code(), Status::Code::kIOError) << first_status.ToString();
  EXPECT_TRUE(second_status.ok()) << second_status.ToString();
  EXPECT_EQ(log.durable.load(), 2u);
  // A later caller whose append the good sync covered returns without a sync.
  EXPECT_TRUE(group.Sync(1).ok());
  EXPECT_EQ(log.calls.load(), 2);
}

}  // namespace
}  // namespace wattdb::storage
