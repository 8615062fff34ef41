// Injectable time. Production code takes a Clock& so that policies, heartbeats and timeouts
// can be tested with a ManualClock instead of sleeping. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

namespace wattdb {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds since an arbitrary epoch.
  virtual int64_t NowMicros() const = 0;
  // Wall-clock microseconds since the Unix epoch.
  virtual int64_t WallMicros() const = 0;
  static Clock& Real();
};

class RealClock : public Clock {
 public:
  int64_t NowMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t WallMicros() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

class ManualClock : public Clock {
 public:
  explicit ManualClock(int64_t start = 1'000'000) : now_(start) {}
  int64_t NowMicros() const override { return now_.load(); }
  int64_t WallMicros() const override { return now_.load(); }
  void Advance(int64_t micros) { now_ += micros; }

 private:
  std::atomic<int64_t> now_;
};

// CPU time consumed by the calling thread, nanoseconds.
inline uint64_t ThreadCpuNanos() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline Clock& Clock::Real() {
  static RealClock clock;
  return clock;
}

}  // namespace wattdb
