// Reaper: frees large objects on a thread of its own, so that the caller (a commit of a bulk
// load, whose writes and locks number in the millions) answers without waiting for the
// frees. Objects are destroyed in the order dropped; the destructor destroys what is left
// and joins the thread. Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

namespace wattdb {

class Reaper {
 public:
  Reaper();
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  template <typename T>
  void Drop(T&& obj) {
    DropErased(std::make_shared<std::decay_t<T>>(std::forward<T>(obj)));
  }
  // Objects dropped and not destroyed yet.
  size_t pending() const;

 private:
  void DropErased(std::shared_ptr<void> obj);
  void Run();

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<void>> queue_;
  size_t destroying_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wattdb
