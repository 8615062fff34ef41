#include "common/reaper.h"

namespace wattdb {

Reaper::Reaper() : thread_([this] { Run(); }) {}

Reaper::~Reaper() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Reaper::DropErased(std::shared_ptr<void> obj) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(obj));
  }
  cv_.notify_all();
}

size_t Reaper::pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return queue_.size() + destroying_;
}

void Reaper::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    cv_.wait(l, [&] { return stop_ || !queue_.empty(); });  // an idle worker: no deadline
    if (queue_.empty()) return;                             // stopping, nothing left
    std::shared_ptr<void> obj = std::move(queue_.front());
    queue_.pop_front();
    destroying_++;
    l.unlock();
    obj.reset();
    l.lock();
    destroying_--;
  }
}

}  // namespace wattdb
