#include "common/stack_guard.h"

#include <pthread.h>

#include <cstdint>

#include "common/sqlstate.h"

namespace wattdb {

namespace {

// Lowest usable address of this thread's stack (stacks grow down), or 0 if unknown.
uintptr_t StackLimit() {
  thread_local uintptr_t limit = [] {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return uintptr_t{0};
    void* addr = nullptr;
    size_t size = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    if (rc != 0 || size <= kStackMarginBytes) return uintptr_t{0};
    return reinterpret_cast<uintptr_t>(addr) + kStackMarginBytes;
  }();
  return limit;
}

}  // namespace

Status CheckStackDepth() {
  char here;
  uintptr_t sp = reinterpret_cast<uintptr_t>(&here);
  uintptr_t limit = StackLimit();
  if (limit != 0 && sp < limit) {
    return Status::Sql(sqlstate::kStatementTooComplex,
                       "stack depth limit exceeded: the statement is nested too deeply");
  }
  return Status::OK();
}

void SetDefaultThreadStackSize(size_t bytes) {
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  if (pthread_attr_setstacksize(&attr, bytes) == 0) (void)pthread_setattr_default_np(&attr);
  pthread_attr_destroy(&attr);
}

}  // namespace wattdb
