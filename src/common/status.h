// Status and Result<T>: how every fallible function in WattDB reports failure.
//
// A Status carries a code and, for errors that reach SQL clients, the PostgreSQL SQLSTATE
// (five characters) plus an optional 1-based character position in the statement text.
// Status is cheap to copy when ok. Thread-compatible (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace wattdb {

class [[nodiscard]] Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kInvalidArgument,  // bad user input (SQL, config, flags)
    kNotFound,
    kAlreadyExists,
    kIOError,       // disk or network failure
    kCorruption,    // bytes that do not decode
    kUnavailable,   // a peer is down or a resource is busy; retrying may help
    kAborted,       // a transaction lost a conflict
    kStale,         // caller's view of placement is out of date; re-resolve and retry
    kNotSupported,
    kInternal,
    kTimedOut,      // a peer did not answer within its deadline
    kConflict,      // a row to be written has a version newer than the writer's snapshot:
                    // 40001 under REPEATABLE READ; READ COMMITTED restarts the statement
  };

  Status() = default;
  static Status OK() { return Status(); }

  // `sqlstate` defaults per code when empty (see DefaultSqlState).
  Status(Code code, std::string msg, std::string sqlstate = "", int position = 0)
      : code_(code), msg_(std::move(msg)), sqlstate_(std::move(sqlstate)), position_(position) {}

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
  static Status Aborted(std::string m, std::string st = "40001") {
    return {Code::kAborted, std::move(m), std::move(st)};
  }
  static Status Stale(std::string m) { return {Code::kStale, std::move(m)}; }
  static Status Conflict(std::string m) { return {Code::kConflict, std::move(m), "40001"}; }
  static Status NotSupported(std::string m) { return {Code::kNotSupported, std::move(m), "0A000"}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status TimedOut(std::string m) { return {Code::kTimedOut, std::move(m)}; }
  // A SQL error with an explicit SQLSTATE and optional position (1-based, 0 = none).
  static Status Sql(std::string sqlstate, std::string m, int position = 0) {
    return {Code::kInvalidArgument, std::move(m), std::move(sqlstate), position};
  }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsStale() const { return code_ == Code::kStale; }
  bool IsUnavailable() const { return code_ == Code::kUnavailable; }
  bool IsTimedOut() const { return code_ == Code::kTimedOut; }
  bool IsConflict() const { return code_ == Code::kConflict; }
  const std::string& message() const { return msg_; }
  int position() const { return position_; }
  // The SQLSTATE to send to a client: the explicit one, else a default for the code.
  std::string sqlstate() const;
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status Prepend(const std::string& prefix) const {
    if (ok()) return *this;
    return Status(code_, prefix + ": " + msg_, sqlstate_, position_);
  }
  Status WithPosition(int pos) const {
    Status s = *this;
    if (s.position_ == 0) s.position_ = pos;
    return s;
  }

 private:
  Code code_ = Code::kOk;
  std::string msg_;
  std::string sqlstate_;
  int position_ = 0;
};

// Either a value or a non-ok Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
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

#define RETURN_NOT_OK(expr)              \
  do {                                   \
    ::wattdb::Status _s = (expr);        \
    if (!_s.ok()) return _s;             \
  } while (0)

#define RETURN_NOT_OK_PREPEND(expr, prefix)        \
  do {                                             \
    ::wattdb::Status _s = (expr);                  \
    if (!_s.ok()) return _s.Prepend(prefix);       \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto x, F()); declares x from a Result or returns its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(WATTDB_CONCAT(_r_, __LINE__), lhs, expr)

}  // namespace wattdb
