// Status and Result<T>: how every fallible function in WattDB reports failure.
//
// A Status carries a code and, for errors that reach SQL clients, the PostgreSQL SQLSTATE
// (five characters) plus an optional 1-based character position in the statement text.
// An ok Status is one null pointer: cheap to make, pass and return. Thread-compatible (no
// shared state).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "common/sqlstate.h"

namespace wattdb {

class [[nodiscard]] Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kInvalidArgument,  // bad user input (SQL, config, flags)
    kNotFound,
    kAlreadyExists,
    kIOError,      // disk or network failure
    kCorruption,   // bytes that do not decode
    kUnavailable,  // a peer is down or a resource is busy; retrying may help
    kAborted,      // a transaction lost a conflict
    kStale,        // caller's view of placement is out of date; re-resolve and retry
    kNotSupported,
    kInternal,
    kTimedOut,  // a peer did not answer within its deadline
    kConflict,  // a row to be written has a version newer than the writer's snapshot:
                // 40001 under REPEATABLE READ; READ COMMITTED restarts the statement
  };

  Status() = default;
  static Status OK() { return Status(); }

  // `sqlstate` defaults per code when empty (see sqlstate()).
  Status(Code code, std::string msg, std::string sqlstate = "", int position = 0)
      : state_(code == Code::kOk ? nullptr
                                 : std::make_unique<State>(State{code, std::move(msg),
                                                                 std::move(sqlstate), position})) {}
  Status(const Status& o) : state_(o.state_ ? std::make_unique<State>(*o.state_) : nullptr) {}
  Status& operator=(const Status& o) {
    if (this != &o) state_ = o.state_ ? std::make_unique<State>(*o.state_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status InvalidArgument(std::string m, std::string st = "") {
    return {Code::kInvalidArgument, std::move(m), std::move(st)};
  }
  static Status NotFound(std::string m, std::string st = "") {
    return {Code::kNotFound, std::move(m), std::move(st)};
  }
  static Status AlreadyExists(std::string m, std::string st = "") {
    return {Code::kAlreadyExists, std::move(m), std::move(st)};
  }
  static Status IOError(std::string m) { return {Code::kIOError, std::move(m)}; }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Aborted(std::string m, std::string st = sqlstate::kSerializationFailure) {
    return {Code::kAborted, std::move(m), std::move(st)};
  }
  static Status Stale(std::string m) { return {Code::kStale, std::move(m)}; }
  static Status Conflict(std::string m) {
    return {Code::kConflict, std::move(m), sqlstate::kSerializationFailure};
  }
  static Status NotSupported(std::string m) {
    return {Code::kNotSupported, std::move(m), sqlstate::kFeatureNotSupported};
  }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status TimedOut(std::string m) { return {Code::kTimedOut, std::move(m)}; }
  // A SQL error with an explicit SQLSTATE and optional position (1-based, 0 = none).
  static Status Sql(std::string sqlstate, std::string m, int position = 0) {
    return {Code::kInvalidArgument, std::move(m), std::move(sqlstate), position};
  }

  bool ok() const { return state_ == nullptr; }
  Code code() const { return state_ ? state_->code : Code::kOk; }
  bool IsNotFound() const { return code() == Code::kNotFound; }
  bool IsStale() const { return code() == Code::kStale; }
  bool IsUnavailable() const { return code() == Code::kUnavailable; }
  bool IsTimedOut() const { return code() == Code::kTimedOut; }
  bool IsConflict() const { return code() == Code::kConflict; }
  const std::string& message() const;
  int position() const { return state_ ? state_->position : 0; }
  // The SQLSTATE to send to a client: the explicit one, else a default for the code.
  std::string sqlstate() const;
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status Prepend(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(state_->code, prefix + ": " + state_->msg, state_->sqlstate, state_->position);
  }
  Status WithPosition(int pos) const {
    Status s = *this;
    if (s.state_ && s.state_->position == 0) s.state_->position = pos;
    return s;
  }

 private:
  struct State {
    Code code;
    std::string msg;
    std::string sqlstate;  // "": the code's default
    int position = 0;
  };
  std::unique_ptr<State> state_;  // nullptr: ok
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: REQUIRES: !status.ok()

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

#define WATTDB_CONCAT_INNER(a, b) a##b
#define WATTDB_CONCAT(a, b) WATTDB_CONCAT_INNER(a, b)

#define RETURN_NOT_OK(expr)       \
  do {                            \
    ::wattdb::Status _s = (expr); \
    if (!_s.ok()) return _s;      \
  } while (0)

#define RETURN_NOT_OK_PREPEND(expr, prefix)  \
  do {                                       \
    ::wattdb::Status _s = (expr);            \
    if (!_s.ok()) return _s.Prepend(prefix); \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto x, F()); declares x from a Result or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(WATTDB_CONCAT(_r_, __LINE__), lhs, expr)

}  // namespace wattdb
