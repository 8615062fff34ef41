// Activity: what each client session is doing, as pg_stat_activity shows it. Sessions publish
// their state when they connect, when a statement starts and when it ends; readers get a copy.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"

namespace wattdb::master {

class Activity {
 public:
  struct Backend {
    int32_t pid = 0;
    std::string datname, usename, application_name, client_addr;
    int32_t client_port = -1;
    int64_t backend_start_us = 0;  // Unix microseconds; 0 = none
    int64_t xact_start_us = 0;     // the running transaction (block or single statement)
    int64_t query_start_us = 0;    // the running statement, or the last one
    int64_t state_change_us = 0;
    std::string state =
        "idle";         // active | idle | idle in transaction | idle in transaction (aborted)
    std::string query;  // the running statement, or the last one
  };

  // `b.pid` is the key; `client` is "address:port" as the socket names its peer.
  void Connected(Backend b, std::string_view client, int64_t now_us);
  void Disconnected(int32_t pid);
  void StatementStarted(int32_t pid, std::string_view query, int64_t now_us);
  // `txn_status` is ReadyForQuery's: 'I' idle, 'T' in a block, 'E' in a failed block.
  void StatementEnded(int32_t pid, char txn_status, int64_t now_us);
  std::vector<Backend> Snapshot() const;

 private:
  mutable Mutex mu_;
  std::map<int32_t, Backend> backends_ GUARDED_BY(mu_);
};

}  // namespace wattdb::master
