#include "common/mutex.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace wattdb {
namespace {

using namespace std::chrono_literals;

struct Box {
  Mutex mu;
  CondVar cv;
  int value GUARDED_BY(mu) = 0;
};

TEST(MutexTest, AWaitEndsAtItsDeadlineWithoutASignal) {
  Box b;
  MutexLock l(b.mu);
  auto t0 = CondVar::Clock::now();
  bool woken = b.cv.WaitUntil(b.mu, CondVar::DeadlineIn(30ms));
  while (woken && b.value == 0) woken = b.cv.WaitUntil(b.mu, t0 + 30ms);  // spurious wake-ups
  EXPECT_FALSE(woken);
  EXPECT_GE(CondVar::Clock::now() - t0, 30ms);
}

TEST(MutexTest, ASignalWakesAWaiterThatSeesTheChange) {
  Box b;
  std::thread t([&] {
    std::this_thread::sleep_for(10ms);
    MutexLock l(b.mu);
    b.value = 7;
    b.cv.SignalAll();
  });
  {
    MutexLock l(b.mu);
    auto until = CondVar::DeadlineIn(10s);
    while (b.value == 0 && b.cv.WaitUntil(b.mu, until)) {
    }
    EXPECT_EQ(b.value, 7);
  }
  t.join();
}

TEST(MutexTest, AScopedLockLetsGoAndTakesTheMutexAgain) {
  Box b;
  MutexLock l(b.mu);
  b.value = 1;
  l.Unlock();
  std::thread t([&] {
    MutexLock other(b.mu);  // would block forever if Unlock had not let go
    b.value = 2;
  });
  t.join();
  l.Lock();
  EXPECT_EQ(b.value, 2);
}

TEST(MutexTest, ReadersShareAndAWriterExcludesThem) {
  SharedMutex mu;
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; i++) {
    readers.emplace_back([&] {
      ReaderLock r(mu);
      int now = ++inside;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(20ms);
      --inside;
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_GT(most.load(), 1);  // at least two readers held it at once
  std::atomic<bool> read{false};
  std::thread late;
  {
    WriterLock w(mu);
    late = std::thread([&] {
      ReaderLock r(mu);
      read = true;
    });
    std::this_thread::sleep_for(30ms);
    EXPECT_FALSE(read.load());  // the writer holds it
  }
  late.join();
  EXPECT_TRUE(read.load());
}

}  // namespace
}  // namespace wattdb
