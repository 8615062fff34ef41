#include "common/status.h"

namespace wattdb {

const std::string& Status::message() const {
  static const std::string kNone;
  return state_ ? state_->msg : kNone;
}

std::string Status::sqlstate() const {
  if (state_ && !state_->sqlstate.empty()) return state_->sqlstate;
  switch (code()) {
    case Code::kOk: return "00000";
    case Code::kInvalidArgument: return "22023";
    case Code::kNotFound: return "42704";
    case Code::kAlreadyExists: return "42710";
    case Code::kIOError: return "58030";
    case Code::kCorruption: return "XX001";
    case Code::kUnavailable: return "57P03";
    case Code::kAborted: return "40001";
    case Code::kStale: return "40001";
    case Code::kNotSupported: return "0A000";
    case Code::kInternal: return "XX000";
    case Code::kTimedOut: return "57P03";
    case Code::kConflict: return "40001";
  }
  return "XX000";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("[{}] {}", sqlstate(), state_->msg);
}

}  // namespace wattdb
