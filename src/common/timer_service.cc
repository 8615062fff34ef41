#include "common/timer_service.h"

namespace wattdb {

TimerService::TimerService() : thread_([this] { Loop(); }) {}

TimerService::~TimerService() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t TimerService::Arm(Deadline at, std::function<void()> fn) {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t id = next_id_++;
  timers_[id] = {at, std::move(fn)};
  order_.emplace(at, id);
  cv_.notify_all();
  return id;
}

void TimerService::Cancel(uint64_t id) {
  std::unique_lock<std::mutex> l(mu_);
  auto it = timers_.find(id);
  if (it != timers_.end()) {
    auto range = order_.equal_range(it->second.first);
    for (auto o = range.first; o != range.second; ++o) {
      if (o->second == id) {
        order_.erase(o);
        break;
      }
    }
    timers_.erase(it);
  }
  cv_.wait(l, [&] { return running_ != id; });
}

void TimerService::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    if (order_.empty()) {
      cv_.wait(l);
      continue;
    }
    auto first = order_.begin();
    if (std::chrono::steady_clock::now() < first->first) {
      cv_.wait_until(l, first->first);
      continue;
    }
    uint64_t id = first->second;
    order_.erase(first);
    auto it = timers_.find(id);
    if (it == timers_.end()) continue;
    std::function<void()> fn = std::move(it->second.second);
    timers_.erase(it);
    running_ = id;
    l.unlock();
    fn();
    l.lock();
    running_ = 0;
    cv_.notify_all();
  }
}

}  // namespace wattdb
