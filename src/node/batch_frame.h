// Column batches grouped into scan reply frames. A frame carries its batches' encodings back
// to back (scanBatch.columns) with each one's size (scanBatch.columnSizes): per row, fewer
// and larger frames cost both ends fewer system calls, wake-ups and message headers.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <capnp/message.h>

#include "proto/node_service.capnp.h"
#include "query/exec/batch.h"

namespace wattdb::node {

class BatchFrame {
 public:
  using Clock = std::chrono::steady_clock;
  // A frame is full once it holds `bytes` (0: every batch) or its first batch has waited
  // kWait (a slow fragment's rows still reach the master as they come).
  static constexpr Clock::duration kWait = std::chrono::milliseconds(5);
  explicit BatchFrame(size_t bytes) : target_(bytes) {}

  // Appends b's encoding; `now` is when b was made.
  void Add(const exec::Batch& b, Clock::time_point now = Clock::now());
  // Whether the frame should be sent before another batch joins it.
  bool Full(Clock::time_point now = Clock::now()) const;
  bool empty() const { return sizes_.empty(); }
  // Sets b's columns (referenced, not copied: the frame must outlive mb) and columnSizes.
  void Attach(capnp::MessageBuilder& mb, proto::Response::ScanBatch::Builder b);
  void Clear();

 private:
  const size_t target_;
  std::string bytes_;
  std::vector<uint32_t> sizes_;
  Clock::time_point first_{};
};

}  // namespace wattdb::node
