// CopyStage: one stage of a COPY FROM's pipeline. It runs a function on each pushed batch on a
// thread of its own, so that the stage before goes on with the next batch meanwhile: the
// session parses the input, one stage turns a piece's fields into encoded rows, another
// sends them to the nodes (which prepare them while the stages before work on later pieces).
//
// Batches are handled in the order pushed, one at a time; at most `depth` wait behind the one
// being handled. The first failure stops the stage: later batches are dropped, and Push and
// Finish report it. Every wait here is bounded by the function's own deadlines (each prepare
// request has the cluster's RPC timeout).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"

namespace wattdb::master {

template <typename Batch>
class CopyStage {
 public:
  using Fn = std::function<Status(Batch)>;
  explicit CopyStage(Fn fn, size_t depth = 1) : fn_(std::move(fn)), depth_(depth) {
    thread_ = std::thread([this] { Run(); });
  }
  ~CopyStage() { (void)Finish(); }
  CopyStage(const CopyStage&) = delete;
  CopyStage& operator=(const CopyStage&) = delete;

  // Queues `batch`, first waiting while `depth` batches wait. Returns the first failure of
  // the batches handled so far (then `batch` is dropped).
  Status Push(Batch batch) {
    std::unique_lock<std::mutex> l(mu_);
    changed_.wait(l, [&] { return !failed_.ok() || queue_.size() < depth_; });
    if (!failed_.ok()) return failed_;
    queue_.push_back(std::move(batch));
    changed_.notify_all();
    return Status::OK();
  }

  // Waits until every queued batch has been handled; the first failure, if any. Idempotent.
  Status Finish() {
    {
      std::lock_guard<std::mutex> l(mu_);
      closing_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> l(mu_);
    return failed_;
  }

 private:
  void Run() {
    std::unique_lock<std::mutex> l(mu_);
    while (true) {
      changed_.wait(l, [&] { return closing_ || !queue_.empty(); });
      if (queue_.empty()) return;  // closing, all handled
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      l.unlock();
      Status s = fn_(std::move(batch));
      l.lock();
      if (!s.ok()) {
        failed_ = s;
        queue_.clear();
        changed_.notify_all();
        return;
      }
      changed_.notify_all();
    }
  }

  Fn fn_;
  size_t depth_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Batch> queue_;
  bool closing_ = false;
  Status failed_;
  std::thread thread_;
};

}  // namespace wattdb::master
