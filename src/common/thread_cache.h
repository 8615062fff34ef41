// ThreadCache: runs tasks on reused threads. A task goes to an idle thread, or to a new
// thread when none is idle: it never queues behind another task, so tasks may wait on one
// another (an exchange's producers wait for its consumer) without deadlock. A thread idle
// for `idle_timeout` exits. Starting a thread costs tens of microseconds (and, with the
// servers' 64 MiB stacks, an mmap and munmap each time); a cached one, a wake-up.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>

#include "common/mutex.h"

namespace wattdb {

class ThreadCache {
 public:
  explicit ThreadCache(std::chrono::milliseconds idle_timeout);
  // Waits for running tasks to end and every thread to exit.
  ~ThreadCache();
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  // Starts `task` now on some thread. A task must not throw.
  void Run(std::function<void()> task);

  // Starts `n` copies of `task`, counted in `running` (set to n here, under `mu`): each, once
  // done, decrements it under `mu` and the last notifies `ended`, so that the owner of the
  // three may wait under `mu` for `running == 0` and then go. The count is the caller's
  // local n, never `running`, which tasks that end at once decrement meanwhile.
  void RunCounted(size_t n, Mutex& mu, size_t& running, CondVar& ended,
                  const std::function<void()>& task);

  // The process's cache (idle threads linger 10 s); never destroyed.
  static ThreadCache& Shared();

  size_t threads() const;  // alive, running a task or idle
  size_t idle() const;
  uint64_t started() const;  // threads started so far

 private:
  void Loop(std::function<void()> task);

  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mu_;
  std::condition_variable work_;             // idle threads wait here
  std::condition_variable gone_;             // the destructor waits here for threads to exit
  std::deque<std::function<void()>> queue_;  // never longer than idle_
  size_t threads_ = 0, idle_ = 0;
  uint64_t started_ = 0;
  bool stop_ = false;
};

}  // namespace wattdb
