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

#include "common/mutex.h"
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
    MutexLock l(mu_);
    while (failed_.ok() && queue_.size() >= depth_) changed_.Wait(mu_);
    if (!failed_.ok()) return failed_;
    queue_.push_back(std::move(batch));
    changed_.SignalAll();
    return Status::OK();
  }

  // Waits until every queued batch has been handled; the first failure, if any. Idempotent.
  Status Finish() {
    {
      MutexLock l(mu_);
      closing_ = true;
      changed_.SignalAll();
    }
    if (thread_.joinable()) thread_.join();
    MutexLock l(mu_);
    return failed_;
  }

 private:
  void Run() {
    MutexLock l(mu_);
    while (true) {
      while (!closing_ && queue_.empty()) changed_.Wait(mu_);
      if (queue_.empty()) return;  // closing, all handled
      Batch batch = std::move(queue_.front());
      queue_.pop_front();
      l.Unlock();
      Status s = fn_(std::move(batch));
      l.Lock();
      if (!s.ok()) {
        failed_ = s;
        queue_.clear();
        changed_.SignalAll();
        return;
      }
      changed_.SignalAll();
    }
  }

  Fn fn_;
  size_t depth_;
  Mutex mu_;
  CondVar changed_;
  std::deque<Batch> queue_ GUARDED_BY(mu_);
  bool closing_ GUARDED_BY(mu_) = false;
  Status failed_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace wattdb::master
