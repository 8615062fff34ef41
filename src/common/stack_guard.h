// Stack depth guard for recursive code (parser, binder, evaluator), as PostgreSQL's
// check_stack_depth(): a statement nested too deeply fails with 54001 instead of
// overflowing the thread's stack and killing the process.
#pragma once

#include "common/status.h"

namespace wattdb {

// Bytes of stack kept free below the deepest frame allowed.
constexpr size_t kStackMarginBytes = 512 * 1024;

// OK, or 54001 ("stack depth limit exceeded") when fewer than kStackMarginBytes of this
// thread's stack remain. Cheap: one comparison after the first call on a thread.
Status CheckStackDepth();

// Stack size of threads created after the call (std::thread included): servers call it
// first thing, so that sessions can bind and evaluate expressions thousands of levels
// deep. Pages are only used as touched.
constexpr size_t kServerThreadStackBytes = 64u << 20;
void SetDefaultThreadStackSize(size_t bytes);

}  // namespace wattdb

// In a function returning Status or Result<T>: returns 54001 when the stack is nearly full.
#define CHECK_STACK_DEPTH() RETURN_NOT_OK(::wattdb::CheckStackDepth())
