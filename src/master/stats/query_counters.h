// QueryCounters: statements run by every session of the master, for /metrics. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

namespace wattdb::master {

struct QueryCounters {
  std::atomic<uint64_t> statements{0};     // finished, successfully or not
  std::atomic<uint64_t> errors{0};         // finished with an error
  std::atomic<uint64_t> micros{0};         // time spent in them
  std::atomic<uint64_t> generic_plans{0};  // executions of prepared SELECTs that reused their plan
  std::atomic<uint64_t> key_writes{0};     // single-row UPDATEs and DELETEs run on the row's node
  std::atomic<uint64_t> key_write_templates{0};  // ... of them prepared, sending only their values
  std::atomic<uint64_t> point_read_templates{
      0};                              // prepared one-key SELECTs run with their values in place
  std::atomic<uint64_t> restarts{0};   // READ COMMITTED statements run again on a fresh snapshot
  std::atomic<uint64_t> offloaded{0};  // plan subtrees a helper node ran to the end
  std::atomic<uint64_t> offload_failures{0};  // ... whose helper failed (then run on the master)

  void Record(bool ok, uint64_t us) {
    statements.fetch_add(1, std::memory_order_relaxed);
    if (!ok) errors.fetch_add(1, std::memory_order_relaxed);
    micros.fetch_add(us, std::memory_order_relaxed);
  }
};

}  // namespace wattdb::master
