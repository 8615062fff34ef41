// GroupSync: makes writes durable in groups, as PostgreSQL flushes its WAL. A writer that
// appended to a log takes a ticket (Written) once its append returned, then calls
// Sync(ticket): one caller at a time runs the sync function, which makes durable every
// append that returned before it began; callers whose tickets that sync covered return
// without syncing. A caller that finds a sync running sleeps until it ends (one futex wait;
// the syncing caller wakes all sleepers with one call, and none if nobody sleeps), then
// returns if it was covered or syncs itself.
//
// Why not the storage engine's own synced writes: those make every member of a write group
// wait inside the engine for the group's sync, handing off through a mutex and condition
// variable per member (four futex calls a member, and a spin before each sleep), and keep
// the next group's appends waiting behind the sync.
//
// A failed sync is returned to the caller that ran it; the callers it would have covered
// try again themselves. Thread-safe; Linux only (futex).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "common/status.h"

namespace wattdb::storage {

class GroupSync {
 public:
  // `sync` makes every append that returned before the call durable.
  explicit GroupSync(std::function<Status()> sync) : sync_(std::move(sync)) {}
  GroupSync(const GroupSync&) = delete;
  GroupSync& operator=(const GroupSync&) = delete;

  // A ticket for an append that has returned.
  uint64_t Written() { return written_.fetch_add(1) + 1; }
  // Returns once the append of `ticket` is durable (or the sync that ran for it failed).
  Status Sync(uint64_t ticket);

  // Syncs run so far (each covering one or more tickets).
  uint64_t syncs() const { return syncs_.load(std::memory_order_relaxed); }
  // Callers sleeping until a running sync ends.
  uint32_t sleepers() const { return sleepers_.load(); }

 private:
  void EndSync();

  const std::function<Status()> sync_;
  std::atomic<uint64_t> written_{0};  // tickets handed out
  std::atomic<uint64_t> synced_{0};   // every ticket up to this one is durable
  std::atomic<bool> syncing_{false};
  std::atomic<uint32_t> generation_{0};  // the futex word: grows when a sync ends
  std::atomic<uint32_t> sleepers_{0};
  std::atomic<uint64_t> syncs_{0};
};

}  // namespace wattdb::storage
