// Mutexes the thread-safety analysis understands (common/thread_annotations.h): Mutex and
// SharedMutex wrap the standard ones and carry the capability; MutexLock, WriterLock and
// ReaderLock hold one for a scope (MutexLock may let go and take it again); CondVar waits on a
// Mutex. Members they guard are declared GUARDED_BY(mu_); functions that expect the caller to
// hold one, REQUIRES(mu_).
//
// A condition wait is written as a loop in the function that holds the lock, so the analysis
// sees the guarded state it reads:
//   MutexLock l(mu_);
//   while (!done_) cv_.Wait(mu_);
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "common/thread_annotations.h"

namespace wattdb {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the mutex (a callback run under it); checks nothing.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class CAPABILITY("shared mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock() and Lock() let it go and take it
// again in between (the destructor releases it only if held).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~WriterLock() RELEASE() { mu_.Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds `mu` shared from construction to destruction, or until Unlock().
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.LockShared(); }
  ~ReaderLock() RELEASE() {
    if (held_) mu_.UnlockShared();
  }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

  void Unlock() RELEASE() {
    mu_.UnlockShared();
    held_ = false;
  }

 private:
  SharedMutex& mu_;
  bool held_ = true;
};

// A condition variable bound to no mutex in particular: each wait names the Mutex the caller
// holds, which it lets go while waiting and holds again when it returns. Wake-ups may be
// spurious: wait in a loop on the condition.
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();
  }
  // False if `deadline` passed.
  bool WaitUntil(Mutex& mu, Clock::time_point deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> l(mu.mu_, std::adopt_lock);
    bool woken = cv_.wait_until(l, deadline) == std::cv_status::no_timeout;
    l.release();
    return woken;
  }
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> d) REQUIRES(mu) {
    return WaitUntil(mu, DeadlineIn(d));
  }
  // The deadline `d` from now, for a loop of WaitUntil:
  //   auto until = CondVar::DeadlineIn(timeout);
  //   while (!ready_ && cv_.WaitUntil(mu_, until)) {}
  template <class Rep, class Period>
  static Clock::time_point DeadlineIn(std::chrono::duration<Rep, Period> d) {
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(d);
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace wattdb
