// TimerService: runs callbacks at deadlines on one background thread (statement timeouts
// and the like), instead of a thread per waiter. Callbacks must be short and must not
// call back into the service. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

namespace wattdb {

class TimerService {
 public:
  using Deadline = std::chrono::steady_clock::time_point;
  TimerService();
  ~TimerService();  // drops pending timers without running them

  // Runs `fn` at `at` unless cancelled first; returns the timer's id.
  uint64_t Arm(Deadline at, std::function<void()> fn);
  // Cancels timer `id`; once this returns its callback is not running and will not run.
  void Cancel(uint64_t id);

 private:
  void Loop();

  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::multimap<Deadline, uint64_t> order_;
  std::map<uint64_t, std::pair<Deadline, std::function<void()>>> timers_;
  uint64_t next_id_ = 1;
  uint64_t running_ = 0;  // id of the callback running now, 0 if none
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace wattdb
