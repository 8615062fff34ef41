// What the chaos tests share: their duration, the tally of errors clients met, and the
// errors a client may meet while processes die, freeze and move.
#pragma once

#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/sqlstate.h"

namespace wattdb::testing {

using Clock = std::chrono::steady_clock;

inline int ChaosSeconds() {
  const char* s = getenv("WATTDB_CHAOS_SECONDS");
  return s && atoi(s) > 0 ? atoi(s) : 60;
}

struct Tally {
  std::mutex mu;
  std::map<std::string, int> errors;  // SQLSTATE -> count
  void Add(const std::string& st) {
    std::lock_guard<std::mutex> l(mu);
    errors[st]++;
  }
};

// Errors a client may see while processes die, freeze and move: conflicts, a node down, a
// lost connection (?????: the master died), an outcome unknown, a busy segment; and deadlocks
// (40P01), since two transfers in opposite directions lock their first accounts at once.
inline bool Tolerated(const std::string& st) {
  static const std::set<std::string> ok = {sqlstate::kSerializationFailure,
                                           sqlstate::kDeadlockDetected,
                                           sqlstate::kCannotConnectNow,
                                           sqlstate::kStatementCompletionUnknown,
                                           sqlstate::kObjectInUse,
                                           sqlstate::kConnectionFailure,
                                           sqlstate::kInFailedSqlTransaction,
                                           sqlstate::kIoError,
                                           "?????",
                                           sqlstate::kObjectNotInPrerequisiteState,
                                           sqlstate::kAdminShutdown,
                                           sqlstate::kTooManyConnections,
                                           sqlstate::kQueryCanceled};
  return ok.count(st) > 0;
}

}  // namespace wattdb::testing
