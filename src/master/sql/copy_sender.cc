#include "master/sql/copy_sender.h"

namespace wattdb::master {

CopySender::CopySender(SendFn send, size_t depth) : send_(std::move(send)), depth_(depth) {
  thread_ = std::thread([this] { Run(); });
}

CopySender::~CopySender() { (void)Finish(); }

Status CopySender::Push(std::vector<RowWrite> batch) {
  std::unique_lock<std::mutex> l(mu_);
  changed_.wait(l, [&] { return !failed_.ok() || queue_.size() < depth_; });
  if (!failed_.ok()) return failed_;
  queue_.push_back(std::move(batch));
  changed_.notify_all();
  return Status::OK();
}

Status CopySender::Finish() {
  {
    std::unique_lock<std::mutex> l(mu_);
    closing_ = true;
    changed_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> l(mu_);
  return failed_;
}

void CopySender::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    changed_.wait(l, [&] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing, all sent
    std::vector<RowWrite> batch = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    Status s = send_(std::move(batch));
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

}  // namespace wattdb::master
