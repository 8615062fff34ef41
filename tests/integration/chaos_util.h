// What the chaos tests share: their duration, the tally of errors clients met, and the
// errors a client may meet while processes die, freeze and move.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

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

// After the nemesis: resumes every node, starts the master if it is down, and waits until
// all `nodes` are up. False (a failure added) if they do not come up.
inline bool Recover(MiniCluster& cluster, int nodes) {
  for (int i = 1; i <= nodes; i++) {
    if (pid_t p = cluster.NodePid(i)) kill(p, SIGCONT);
  }
  if (!cluster.MasterAlive() && !cluster.StartMaster()) {
    ADD_FAILURE() << "the master did not come back; logs in " << cluster.dir();
    return false;
  }
  if (!cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'",
                       std::to_string(nodes), 60000)) {
    ADD_FAILURE() << "not every node came back; logs in " << cluster.dir();
    return false;
  }
  return true;
}

// Reads `table`'s id column back (retrying while a segment is mid-move) and checks it holds
// every id in `acked` exactly once and none outside `acked` and `unknown`. Failures are added;
// returns how many acknowledged ids are missing (-1 if the table did not read back).
inline int CheckInserts(MiniCluster& cluster, PgConn& c, const std::string& table,
                        const std::set<int64_t>& acked, const std::set<int64_t>& unknown) {
  std::vector<std::vector<std::string>> rows;
  std::string st;
  for (int i = 0; i < 100; i++) {
    st = c.Exec("SELECT id FROM " + table, &rows);
    if (st.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!st.empty()) {
    ADD_FAILURE() << "table " << table << " does not read back: " << st;
    return -1;
  }
  std::map<int64_t, int> seen;
  for (auto& r : rows) seen[std::stoll(r[0])]++;
  int missing = 0, duplicated = 0, phantom = 0;
  std::string missing_ids;
  for (int64_t id : acked) {
    if (seen.count(id)) continue;
    missing++;
    if (missing <= 20) missing_ids += " " + std::to_string(id);
  }
  for (auto& [id, n] : seen) {
    duplicated += n > 1 ? 1 : 0;
    phantom += acked.count(id) || unknown.count(id) ? 0 : 1;
  }
  EXPECT_EQ(missing, 0) << "acknowledged inserts lost:" << missing_ids << "; logs in "
                        << cluster.dir();
  EXPECT_EQ(duplicated, 0) << "inserts present twice";
  EXPECT_EQ(phantom, 0) << "rows nobody inserted";
  return missing;
}

}  // namespace wattdb::testing
