#include "storage/group_sync.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace wattdb::storage {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

// Sleeps while *word == expected, at most 100 ms (the caller looks again).
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected) {
  timespec timeout{0, 100'000'000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &timeout,
          nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

Status GroupSync::Sync(uint64_t ticket) {
  while (synced_.load() < ticket) {
    // Read before trying to sync: a sync ending after this read changes it, so the sleep
    // below cannot miss that sync's end.
    uint32_t generation = generation_.load();
    bool idle = false;
    if (syncing_.compare_exchange_strong(idle, true)) {
      if (synced_.load() >= ticket) {  // the sync that just ended covered it
        EndSync();
        return Status::OK();
      }
      uint64_t target = written_.load();
      Status s = sync_();
      syncs_.fetch_add(1, std::memory_order_relaxed);
      if (s.ok() && target > synced_.load())
        synced_.store(target);  // only the syncing caller writes it
      EndSync();
      return s;
    }
    // Counted before the sleep and read by EndSync after the generation grows (both
    // sequentially consistent): either EndSync sees this sleeper and wakes it, or the sleep
    // finds the generation grown and returns at once.
    sleepers_.fetch_add(1);
    FutexWait(&generation_, generation);
    sleepers_.fetch_sub(1);
  }
  return Status::OK();
}

void GroupSync::EndSync() {
  syncing_.store(false);
  generation_.fetch_add(1);
  if (sleepers_.load() > 0) FutexWakeAll(&generation_);
}

}  // namespace wattdb::storage
