// Transaction control: BEGIN/COMMIT/ROLLBACK, isolation levels and their settings.
#include <algorithm>

#include "common/sqlstate.h"
#include "master/sql/executor.h"

namespace wattdb::master {

Result<Executor::Isolation> Executor::ParseIsolation(std::string_view level) {
  std::string l(level);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "read committed" || l == "read uncommitted")
    return Isolation::kReadCommitted;  // as PostgreSQL
  if (l == "repeatable read") return Isolation::kRepeatableRead;
  if (l == "serializable") {
    return Status::Sql(
        sqlstate::kFeatureNotSupported,
        "SERIALIZABLE isolation is not supported; REPEATABLE READ gives snapshot isolation");
  }
  return Status::Sql(
      sqlstate::kInvalidParameterValue,
      fmt::format("invalid value for parameter \"transaction_isolation\": \"{}\"", level));
}

const char* Executor::IsolationName(Isolation level) {
  return level == Isolation::kReadCommitted ? "read committed" : "repeatable read";
}

std::string Executor::DefaultIsolation() const {
  auto it = settings_.find("default_transaction_isolation");
  return it == settings_.end() ? std::string("read committed") : it->second;
}

Executor::Isolation Executor::isolation() const {
  return txn_ ? isolation_ : *ParseIsolation(DefaultIsolation());
}

Result<std::string> Executor::SetIsolation(sql::SetStmt& s, ResultSink& sink) {
  bool reset = s.value == "default" || s.value == "DEFAULT";
  if (s.name == "default_transaction_isolation") {
    if (reset) {
      ResetSetting(s.name);
    } else {
      ASSIGN_OR_RETURN(Isolation level, ParseIsolation(s.value));
      SetSetting(s.name, IsolationName(level));
    }
    return std::string("SET");
  }
  if (reset) return std::string("SET");  // SET TRANSACTION with no isolation level
  ASSIGN_OR_RETURN(Isolation level, ParseIsolation(s.value));
  if (!txn_) {
    RETURN_NOT_OK(sink.Notice(sqlstate::kNoActiveSqlTransaction,
                              "SET TRANSACTION can only be used in transaction blocks"));
    return std::string("SET");
  }
  if (block_used_ && level != isolation_) {
    return Status::Sql(sqlstate::kActiveSqlTransaction,
                       "SET TRANSACTION ISOLATION LEVEL must be called before any query");
  }
  isolation_ = level;
  return std::string("SET");
}

bool Executor::WritesData(const sql::Statement& stmt) {
  if (auto* sel = std::get_if<sql::SelectStmt>(&stmt)) return sel->for_update;
  if (auto* copy = std::get_if<sql::CopyStmt>(&stmt)) return copy->from;
  return std::holds_alternative<sql::InsertStmt>(stmt) ||
         std::holds_alternative<sql::UpdateStmt>(stmt) ||
         std::holds_alternative<sql::DeleteStmt>(stmt) ||
         std::holds_alternative<sql::TruncateStmt>(stmt) ||
         std::holds_alternative<sql::CreateTableStmt>(stmt) ||
         std::holds_alternative<sql::CreateIndexStmt>(stmt) ||
         std::holds_alternative<sql::CreateViewStmt>(stmt);
}

bool Executor::Restartable(const sql::Statement& stmt) {
  if (auto* sel = std::get_if<sql::SelectStmt>(&stmt)) return sel->for_update;
  return std::holds_alternative<sql::InsertStmt>(stmt) ||
         std::holds_alternative<sql::UpdateStmt>(stmt) ||
         std::holds_alternative<sql::DeleteStmt>(stmt);
}

Result<std::string> Executor::Txn(sql::TxnStmt& s, ResultSink& sink) {
  switch (s.kind) {
    case sql::TxnStmt::Kind::kBegin:
      if (txn_) {
        RETURN_NOT_OK(sink.Notice(sqlstate::kActiveSqlTransaction,
                                  "there is already a transaction in progress"));
      } else {
        ASSIGN_OR_RETURN(isolation_,
                         ParseIsolation(s.isolation.empty() ? DefaultIsolation() : s.isolation));
        txn_ = cluster_.txns().Begin(cluster_.timestamps().Acquire());
        failed_ = false;
        read_only_ = s.read_only;
        block_used_ = false;
      }
      return std::string("BEGIN");
    case sql::TxnStmt::Kind::kCommit: {
      if (!txn_) {
        RETURN_NOT_OK(
            sink.Notice(sqlstate::kNoActiveSqlTransaction, "there is no transaction in progress"));
        return std::string("COMMIT");
      }
      std::unique_ptr<Transaction> t = std::move(txn_);
      struct Release {
        Cluster& c;
        Timestamp ts;
        ~Release() { c.timestamps().Release(ts); }
      } release{cluster_, t->snapshot};
      if (failed_) {
        failed_ = false;
        cluster_.txns().Rollback(*t);
        UndoBlockDdl();
        return std::string("ROLLBACK");
      }
      Status committed = cluster_.txns().Commit(*t);
      if (!committed.ok()) {
        UndoBlockDdl();
        return committed;
      }
      txn_undo_.clear();
      return std::string("COMMIT");
    }
    case sql::TxnStmt::Kind::kRollback:
      if (!txn_) {
        RETURN_NOT_OK(
            sink.Notice(sqlstate::kNoActiveSqlTransaction, "there is no transaction in progress"));
      } else {
        cluster_.txns().Rollback(*txn_);
        cluster_.timestamps().Release(txn_->snapshot);
        txn_.reset();
        failed_ = false;
        UndoBlockDdl();
      }
      return std::string("ROLLBACK");
  }
  return std::string();
}

}  // namespace wattdb::master
