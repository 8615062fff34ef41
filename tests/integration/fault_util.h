// Helpers of the fault tests (fault_test.cc, fault_node_test.cc): a managed cluster, an
// accounts table over every node, and killing or freezing a node's process.
#pragma once

#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// accounts(id, balance): `n` accounts of 1000 each, spread over every node.
inline void LoadAccounts(MiniCluster& cluster, PgConn& c, int n, int nodes) {
  ASSERT_EQ(c.Exec("CREATE TABLE accounts (id INT PRIMARY KEY, balance BIGINT, pad TEXT)"), "");
  std::string sql = "INSERT INTO accounts VALUES ";
  for (int i = 0; i < n; i++) {
    sql += fmt::format("{}({}, 1000, 'padding padding padding padding padding {}')", i ? "," : "",
                       i, i);
  }
  std::string msg;
  ASSERT_EQ(c.Exec(sql, nullptr, &msg), "") << msg;
  ASSERT_TRUE(
      cluster.WaitFor("SELECT count(*) FROM wattdb_partitions WHERE table_name = 'accounts'",
                      std::to_string(nodes), 60000));
}

// A cluster whose master starts (and restarts) its nodes, with fast heartbeats.
inline MiniClusterOptions Managed(int nodes, uint64_t segment_bytes, int telemetry_ms = 200) {
  MiniClusterOptions o;
  o.nodes = nodes;
  o.segment_bytes = segment_bytes;
  o.telemetry_interval_ms = telemetry_ms;
  o.manage_nodes = true;
  return o;
}

// kill() only queues SIGSTOP: waits until every thread of `pid` has stopped (state T).
inline bool AwaitStopped(pid_t pid) { return AwaitProcState(pid, 'T', 2000); }

inline bool AllUp(MiniCluster& cluster, int nodes, int timeout_ms) {
  return cluster.WaitFor("SELECT count(*) FROM wattdb_nodes WHERE state = 'up'",
                         std::to_string(nodes), timeout_ms);
}

// Waits up to `timeout_ms` for node `node` to run as a process other than `old_pid`.
inline bool AwaitRestarted(MiniCluster& cluster, int node, pid_t old_pid, int timeout_ms) {
  for (auto until = Clock::now() + std::chrono::milliseconds(timeout_ms); Clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(50))) {
    pid_t now = cluster.NodePid(node);
    if (now != 0 && now != old_pid) return true;
  }
  return false;
}

// Kills node `node` (-9) and waits until the master has restarted it and all `nodes` are up.
inline bool KillAndAwaitRestart(MiniCluster& cluster, int node, int nodes) {
  pid_t pid = cluster.NodePid(node);
  if (pid <= 0) return false;
  kill(pid, SIGKILL);
  for (int i = 0; i < 300 && (cluster.NodePid(node) == 0 || cluster.NodePid(node) == pid); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return AllUp(cluster, nodes, 30000);
}

}  // namespace wattdb::testing
