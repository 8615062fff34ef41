// CopySender: sends the batches of rows of a COPY FROM to the nodes on a thread of its own,
// so that the session parses the next piece of input while the nodes prepare this one.
//
// Batches are sent in the order pushed, one at a time; at most `depth` wait behind the one
// being sent. The first failure stops the sending: later batches are dropped, and Push and
// Finish report it. Every wait here is bounded by the send function's own deadlines (each
// prepare request has the cluster's RPC timeout).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"
#include "master/cluster/cluster.h"

namespace wattdb::master {

class CopySender {
 public:
  using SendFn = std::function<Status(std::vector<RowWrite>)>;
  explicit CopySender(SendFn send, size_t depth = 1);
  ~CopySender();  // Finish, result dropped
  CopySender(const CopySender&) = delete;
  CopySender& operator=(const CopySender&) = delete;

  // Queues `batch`, first waiting while `depth` batches wait. Returns the first failure of
  // the batches sent so far (then `batch` is dropped).
  Status Push(std::vector<RowWrite> batch);
  // Waits until every queued batch has been sent; the first failure, if any. Idempotent.
  Status Finish();

 private:
  void Run();

  SendFn send_;
  size_t depth_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<std::vector<RowWrite>> queue_;
  bool closing_ = false;
  Status failed_;
  std::thread thread_;
};

}  // namespace wattdb::master
