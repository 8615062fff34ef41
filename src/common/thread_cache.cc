#include "common/thread_cache.h"

#include <thread>

namespace wattdb {

ThreadCache::ThreadCache(std::chrono::milliseconds idle_timeout) : idle_timeout_(idle_timeout) {}

ThreadCache::~ThreadCache() {
  std::unique_lock<std::mutex> l(mu_);
  stop_ = true;
  work_.notify_all();
  gone_.wait(l, [&] { return threads_ == 0; });
}

ThreadCache& ThreadCache::Shared() {
  static ThreadCache* cache =
      new ThreadCache(std::chrono::seconds(10));  // threads may outlive statics
  return *cache;
}

void ThreadCache::Run(std::function<void()> task) {
  std::lock_guard<std::mutex> l(mu_);
  if (idle_ > queue_.size()) {  // an idle thread is free to take it
    queue_.push_back(std::move(task));
    work_.notify_one();
    return;
  }
  threads_++;
  started_++;
  std::thread([this, t = std::move(task)]() mutable { Loop(std::move(t)); }).detach();
}

void ThreadCache::RunCounted(size_t n, Mutex& mu, size_t& running, CondVar& ended,
                             const std::function<void()>& task) {
  {
    MutexLock l(mu);
    running = n;
  }
  for (size_t i = 0; i < n; i++) {
    Run([&mu, &running, &ended, task] {
      task();
      MutexLock l(mu);
      if (--running == 0)
        ended.SignalAll();  // under the lock: the owner may go once it is released
    });
  }
}

void ThreadCache::Loop(std::function<void()> task) {
  while (true) {
    task();
    task = nullptr;  // its captures go before the thread waits
    std::unique_lock<std::mutex> l(mu_);
    idle_++;
    work_.wait_for(l, idle_timeout_, [&] { return stop_ || !queue_.empty(); });
    idle_--;
    if (queue_.empty()) {  // timed out or stopping, and nothing was handed to this thread
      threads_--;
      gone_.notify_all();  // under the lock: the cache may be destroyed once it is released
      return;
    }
    task = std::move(queue_.front());
    queue_.pop_front();
  }
}

size_t ThreadCache::threads() const {
  std::lock_guard<std::mutex> l(mu_);
  return threads_;
}

size_t ThreadCache::idle() const {
  std::lock_guard<std::mutex> l(mu_);
  return idle_;
}

uint64_t ThreadCache::started() const {
  std::lock_guard<std::mutex> l(mu_);
  return started_;
}

}  // namespace wattdb
