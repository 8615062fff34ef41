// PgSession: one client connection after startup. Runs the simple query protocol (Query) and
// the extended query protocol (Parse/Bind/Describe/Execute/Close/Flush/Sync) with named and
// unnamed statements and portals, parameter type inference, text and binary formats, and
// row-limited Execute (PortalSuspended).
//
// A prepared statement keeps its SQL text and described types. A SELECT, INSERT … VALUES,
// UPDATE or DELETE executed a second time gets a generic plan (parameters and now() as
// placeholders, bound once; Executor::PlanGeneric) if that plan, filled with the values, is
// the one the binder makes for them; executions then only fill it in (key ranges derived from
// the values) until DDL or a planner setting changes. Other statements re-parse the text at
// each execution and substitute the values as typed literals, so execution (and key-range
// pruning) sees constants. Not thread-safe: runs on its connection's thread.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/timer_service.h"
#include "master/cluster/cluster.h"
#include "master/pgwire/pg_protocol.h"
#include "master/sql/executor.h"
#include "net/connection.h"

namespace wattdb::master {

// Writes all of `buf` to `socket` before `deadline` and clears it.
Status WriteAll(net::Stream& socket, std::string& buf, net::Stream::Deadline deadline);

// Timeouts (PostgreSQL's settings, per session, set with SET): statement_timeout cancels a
// statement running longer (57014); idle_in_transaction_session_timeout ends a session
// idle inside a transaction block (25P03). A client that takes no bytes, or stops halfway
// through a message, for client_io_timeout_ms is dropped.
class PgSession {
 public:
  PgSession(Cluster& cluster, EnergyService& energy, net::Stream& socket, int32_t pid,
            std::shared_ptr<std::atomic<bool>> cancel, std::string database, TimerService& timers);
  // Applies the settings of the startup packet's `options` (before Run).
  Status ApplyStartupOptions(const std::vector<std::pair<std::string, std::string>>& settings) {
    for (const auto& [name, value] : settings) RETURN_NOT_OK(executor_.SetAtStartup(name, value));
    return Status::OK();
  }
  // Serves messages until the client terminates or the connection fails.
  void Run();

 private:
  struct Prepared {
    std::string sql;
    bool empty = false;
    std::vector<int32_t> declared_oids;
    std::vector<SqlType> param_types;  // final: unknown parameters are text
    bool returns_rows = false;
    std::vector<std::string> names;
    std::vector<SqlType> types;
    bool plannable = false;  // SELECT, INSERT, UPDATE, DELETE: may get a generic plan
    int executions = 0;
    std::unique_ptr<Executor::CachedPlan> cached;
    std::optional<sql::TxnStmt> txn;  // BEGIN, COMMIT, ROLLBACK: parsed once
  };
  struct Portal {
    std::shared_ptr<Prepared> stmt;
    std::vector<Value> params;
    std::vector<int16_t> formats;  // per result column
    bool executed = false;
    std::vector<std::vector<Value>> rows;
    size_t next = 0;
    std::string tag;
  };

  Status Flush();
  Status ReadExact(char* p, size_t n);
  // Waits for the client's next message; false if the session must end (after telling the
  // client why, for an idle-in-transaction timeout).
  bool AwaitMessage();
  class Published;
  // Runs `fn` under the session's statement_timeout; a 57014 caused by it says so.
  template <typename Fn>
  auto WithStatementTimeout(Fn fn) -> decltype(fn());
  // Simple query protocol.
  void HandleQuery(const std::string& body);
  // Extended protocol; an error puts the session in skip-to-Sync mode.
  Status HandleParse(std::string_view body);
  Status HandleBind(std::string_view body);
  Status HandleDescribe(std::string_view body);
  Status HandleExecute(std::string_view body);
  Status HandleClose(std::string_view body);
  // Runs prepared statement `p` with `params` under the statement timeout: its generic plan
  // if it has one that holds, else parsed and planned with the values substituted.
  Result<std::string> RunPrepared(Prepared& p, const std::vector<Value>& params, ResultSink& sink);
  Result<std::shared_ptr<Prepared>> Describe(const std::string& sql, std::vector<int32_t> oids);
  void SendError(const Status& s, const char* severity = "ERROR");
  // COPY as the statement of a Query: the CopyIn/CopyOut sub-protocol. Returns false if the
  // connection must close.
  bool HandleCopy(const sql::CopyStmt& s);
  bool CopyToClient(const sql::CopyStmt& s);    // COPY ... TO STDOUT
  bool CopyFromClient(const sql::CopyStmt& s);  // COPY ... FROM STDIN

  Cluster& cluster_;      // borrowed; outlives the session
  net::Stream& socket_;   // borrowed; owned by the server
  TimerService& timers_;  // borrowed; the server's
  int32_t pid_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  Executor executor_;
  pg::MessageWriter out_;
  // By name; looked up by the names in messages, without copying them (std::less<>).
  std::map<std::string, std::shared_ptr<Prepared>, std::less<>> statements_;
  std::map<std::string, Portal, std::less<>> portals_;
  bool copy_failed_connection_ = false;  // the COPY stream broke: close
};

}  // namespace wattdb::master
