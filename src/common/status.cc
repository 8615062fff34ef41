#include "common/status.h"

#include "common/sqlstate.h"

namespace wattdb {

const std::string& Status::message() const {
  static const std::string kNone;
  return state_ ? state_->msg : kNone;
}

std::string Status::sqlstate() const {
  if (state_ && !state_->sqlstate.empty()) return state_->sqlstate;
  switch (code()) {
    case Code::kOk:
      return sqlstate::kSuccessfulCompletion;
    case Code::kInvalidArgument:
      return sqlstate::kInvalidParameterValue;
    case Code::kNotFound:
      return sqlstate::kUndefinedObject;
    case Code::kAlreadyExists:
      return sqlstate::kDuplicateObject;
    case Code::kIOError:
      return sqlstate::kIoError;
    case Code::kCorruption:
      return sqlstate::kDataCorrupted;
    case Code::kUnavailable:
      return sqlstate::kCannotConnectNow;
    case Code::kAborted:
      return sqlstate::kSerializationFailure;
    case Code::kStale:
      return sqlstate::kSerializationFailure;
    case Code::kNotSupported:
      return sqlstate::kFeatureNotSupported;
    case Code::kInternal:
      return sqlstate::kInternalError;
    case Code::kTimedOut:
      return sqlstate::kCannotConnectNow;
    case Code::kConflict:
      return sqlstate::kSerializationFailure;
  }
  return sqlstate::kInternalError;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return fmt::format("[{}] {}", sqlstate(), state_->msg);
}

}  // namespace wattdb
