// PgSession's member templates, for the files that implement PgSession (pg_session.cc,
// pg_session_copy.cc). Not for other includers.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>

#include "common/sqlstate.h"
#include "master/pgwire/pg_session.h"

namespace wattdb::master {

namespace pg_session_internal {
inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) {
  return r.status();
}
}  // namespace pg_session_internal

template <typename Fn>
auto PgSession::WithStatementTimeout(Fn fn) -> decltype(fn()) {
  int64_t ms = executor_.TimeoutSetting("statement_timeout");
  if (ms <= 0) return fn();
  auto fired = std::make_shared<std::atomic<bool>>(false);
  auto cancel = cancel_;
  uint64_t timer = timers_.Arm(std::chrono::steady_clock::now() + std::chrono::milliseconds(ms),
                               [fired, cancel] {
                                 fired->store(true);
                                 cancel->store(true);
                               });
  auto r = fn();
  timers_.Cancel(timer);
  if (!r.ok() && pg_session_internal::StatusOf(r).sqlstate() == sqlstate::kQueryCanceled &&
      fired->load()) {
    return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to statement timeout");
  }
  return r;
}

}  // namespace wattdb::master
