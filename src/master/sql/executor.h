// Executor: runs one parsed statement against the cluster and reports its results to a
// ResultSink. SELECTs run as vectorized plans whose scans stream from the nodes; writes are
// computed on the master and applied atomically across nodes by TxnCoordinator::ApplyWrites.
// One Executor per session; not thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "master/catalog/database_catalog.h"
#include "master/cluster/cluster.h"
#include "master/energy/energy_service.h"
#include "master/power/statement_energy.h"
#include "master/sql/copy_encoder.h"
#include "master/sql/copy_rows.h"
#include "master/sql/copy_stage.h"
#include "master/sql/offload.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "query/plan/key_update.h"
#include "query/plan/plan.h"
#include "query/sql/ast.h"

namespace wattdb::master {

class MasterScanProvider;

// A scan of every row of `t`, all columns in schema order.
plan::PlanPtr FullScan(const TableSchema& t);

class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual Status Describe(const std::vector<std::string>& names,
                          const std::vector<SqlType>& types) = 0;
  virtual Status Rows(const exec::Batch& batch) = 0;
  virtual Status Notice(const std::string& sqlstate, const std::string& message) = 0;
};

class Executor {
 public:
  // A session's executor, bound to one database for its lifetime.
  Executor(Cluster& cluster, EnergyService& energy, std::string database = kDefaultDatabase)
      : cluster_(cluster), energy_service_(energy), db_(cluster.catalog(), std::move(database)) {}
  const DatabaseCatalog& catalog() const { return db_; }
  ~Executor();  // rolls back an open transaction
  // Transaction status for ReadyForQuery: 'I' idle, 'T' in a transaction, 'E' failed.
  char TxnStatus() const { return !txn_ ? 'I' : failed_ ? 'E' : 'T'; }
  // A timeout setting (statement_timeout, idle_in_transaction_session_timeout) in
  // milliseconds; 0 when unset or disabled.
  int64_t TimeoutSetting(std::string_view name) const;
  // Bytes each sort or hash table of a statement may hold: SET work_mem, else the config.
  int64_t WorkMem() const;
  bool ExchangePrefetch() const;  // wattdb_exchange_prefetch
  bool FollowerReads() const;     // wattdb_follower_reads
  // Binds a SELECT and, unless the session set wattdb_pushdown = off, moves what the nodes
  // can run below Exchanges (query/plan/fragment.h).
  Result<plan::BoundSelect> PlanSelect(sql::SelectStmt& s);
  // An error outside Execute (parse, bind) fails an open transaction block, as in PostgreSQL.
  void MarkFailed() {
    if (txn_) failed_ = true;
  }

  // COPY ... FROM STDIN, streamed: BeginCopyIn, then CopyInRows for each piece of whole
  // rows (fields as text, or NULL) as they arrive, then EndCopyIn. Each piece is encoded on
  // one thread and prepared on the nodes from another while the session parses the next, so
  // the master holds a few pieces at a time (a failure of one is reported by a later call or
  // EndCopyIn); the COPY is one transaction (the block's, or its own), atomic as in
  // PostgreSQL. After an error, call EndCopyIn(false).
  Status BeginCopyIn(const sql::CopyStmt& s);
  Status CopyInRows(CopyRows rows);
  Result<std::string> EndCopyIn(bool commit);
  // COPY ... TO STDOUT: hands each row (the COPY's columns) to `emit` as the scan produces
  // it; an error from `emit` stops the scan.
  Status CopyOut(const sql::CopyStmt& s, const std::atomic<bool>* cancel,
                 const std::function<Status(const std::vector<Value>&)>& emit);
  // The columns a COPY addresses (all visible ones when none are listed).
  Result<std::vector<int>> CopyColumns(const sql::CopyStmt& s, TableSchema* table);

  // 23502's message for a NULL in NOT NULL `column` of `t`.
  static std::string NotNullMessage(const TableSchema& t, size_t column);

  // A setting from the client's startup packet (`options=-c name=value`), as SET would make it.
  Status SetAtStartup(const std::string& name, const std::string& value);

  // Executes `stmt`; returns the command tag (e.g. "SELECT 3", "INSERT 0 2").
  Result<std::string> Execute(sql::Statement& stmt, ResultSink& sink,
                              const std::atomic<bool>* cancel);

  // A prepared statement's generic plan (query/plan/generic_plan.h): a SELECT's (not FOR
  // UPDATE), an INSERT … VALUES', an UPDATE's or a DELETE's, bound once with its $n as
  // placeholders, kept with the prepared statement and reused while no DDL has run and the
  // planner settings are as they were.
  struct CachedPlan {
    sql::Statement kind;       // an empty statement of the plan's kind, for Run's checks
    plan::BoundSelect select;  // SELECT
    plan::BoundInsert insert;  // INSERT
    plan::BoundModify modify;  // UPDATE, DELETE
    // An UPDATE or DELETE of the one row whose key its parameters give: the plan its node
    // runs with each execution's values, serialized once (plan/key_update.h).
    struct KeyWrite {
      plan::KeyWriteTemplate tmpl;
      KeyWriteSpec spec;  // all but the key range and the values
    };
    std::optional<KeyWrite> key_write;
    // A SELECT of the one row whose key its parameters give: its plan runs as it is, with
    // each execution's values (plan/key_update.h's point reads).
    struct PointRead {
      std::vector<int> key_params;  // per key column, the parameter it equals
      TableSchema table;
    };
    std::optional<PointRead> point_read;
    // An INSERT … VALUES whose expressions read no subquery: they are evaluated with each
    // execution's values in place, not copied and filled first.
    bool insert_in_place = false;
    uint64_t schema_version = 0;
    std::string planner;            // PlannerSettings() when planned
    uint64_t settings_changes = 0;  // the session's settings_changes_ then
  };
  // The generic plan of `generic` (a statement whose $n have `param_types`) if, filled with
  // `params`, it is the plan made for `custom` (the same statement with those values in);
  // else nullptr: such a statement is planned at each execution.
  std::unique_ptr<CachedPlan> PlanGeneric(sql::Statement& generic, sql::Statement& custom,
                                          const std::vector<SqlType>& param_types,
                                          const std::vector<Value>& params);
  // The point read of generic SELECT plan `generic` (nullopt if it is none), checked to read
  // the key range `filled` (it filled with `params`) reads.
  std::optional<CachedPlan::PointRead> PlanPointRead(const plan::PlanNode& generic,
                                                     const plan::PlanNode& filled,
                                                     const std::vector<Value>& params);
  // The key write of generic UPDATE/DELETE `generic` (nullopt if it has none), checked to
  // address the row `filled` (it filled with `params`) does.
  std::optional<CachedPlan::KeyWrite> PlanKeyWrite(const plan::BoundModify& generic, bool update,
                                                   const plan::BoundModify& filled,
                                                   const std::vector<Value>& params);
  // Runs `c`'s key write with `params`: the command tag, or nullopt if the general path must
  // run the statement (nothing was done then).
  Result<std::optional<std::string>> RunKeyWrite(const CachedPlan& c,
                                                 const std::vector<Value>& params);
  // True while `c` holds (no DDL since, same planner settings).
  bool Valid(const CachedPlan& c) const;
  // Runs `c` with `params` as Execute runs the statement.
  Result<std::string> ExecuteCached(const CachedPlan& c, const std::vector<Value>& params,
                                    ResultSink& sink, const std::atomic<bool>* cancel);

 private:
  // Runs a statement (`kind` classifies it: transaction control, DDL, writes) whose work is
  // `body`: the transaction-state checks, the statement's snapshot, READ COMMITTED restarts,
  // statistics and energy accounting around it.
  template <typename Body>
  Result<std::string> Run(const sql::Statement& kind, Body body);
  Result<std::string> Select(sql::SelectStmt& s, ResultSink& sink, const std::atomic<bool>* cancel);
  // Runs a bound SELECT plan, its rows to `sink` (described already).
  // With `params`, the plan keeps its parameters and reads their values (and its one
  // Exchange `range`, if given: exec::ExecContext::exchange_range).
  Result<std::string> RunSelect(const plan::PlanNode& plan, ResultSink& sink,
                                const std::atomic<bool>* cancel,
                                const std::vector<Value>* params = nullptr,
                                const std::pair<std::string, std::string>* range = nullptr);
  std::string PushdownSetting() const;
  OffloadSetting Offload() const;       // wattdb_offload (master/sql/offload.h)
  std::string PlannerSettings() const;  // the settings a plan depends on
  // Moves what the nodes can run below Exchanges, as wattdb_pushdown says.
  void PushDown(plan::BoundSelect* bound) const;
  Result<std::string> CreateTable(sql::CreateTableStmt& s, ResultSink& sink);
  Result<std::string> DropTable(sql::DropTableStmt& s, ResultSink& sink);
  Result<std::string> CreateView(sql::CreateViewStmt& s);
  // Secondary indexes (executor_index.cc).
  Result<std::string> CreateIndex(sql::CreateIndexStmt& s, ResultSink& sink);
  Result<std::string> DropIndex(sql::DropTableStmt& s, ResultSink& sink);
  // Creates index `name` ("" = generated) on `t`'s `columns`; `constraint`: it backs a
  // UNIQUE constraint (named table_col_key rather than table_col_idx). Returns its id.
  Result<uint32_t> AddIndex(const TableSchema& t, std::string name,
                            const std::vector<std::string>& columns, const std::vector<bool>& desc,
                            bool unique, bool constraint, int pos);
  // True if a table, view or index of this database is called `name`.
  bool RelationExists(const std::string& name) const;
  // SELECT ... FOR UPDATE inside a transaction: takes the write locks of the rows it reads.
  Status LockRows(sql::SelectStmt& s, const std::atomic<bool>* cancel);
  Result<std::string> User(sql::UserStmt& s, ResultSink& sink);
  Result<std::string> Database(sql::DatabaseStmt& s, ResultSink& sink);
  Result<std::string> DropView(sql::DropTableStmt& s, ResultSink& sink);
  // Refuses (2BP01) to drop relation `name` that views read, or drops them with `cascade`.
  Status DropDependentViews(const std::string& name, const char* kind, bool cascade,
                            ResultSink& sink);
  Result<std::string> AddPrimaryKey(sql::AddPrimaryKeyStmt& s, const std::atomic<bool>* cancel);
  Result<std::string> SetTableOptions(sql::SetTableOptionsStmt& s, ResultSink& sink);
  // Registers `t` in the catalog (filling t->id) with one empty segment on the least-loaded node.
  Status CreateTableStorage(TableSchema* t);
  // Drops dropped tables' segments on their nodes.
  void DropSegments(const std::vector<SegmentEntry>& segs);
  // Writes: bind the statement, then run the bound form (which a generic plan fills in).
  Result<std::string> Insert(sql::InsertStmt& s, const std::atomic<bool>* cancel);
  // `params`: the values of `b`'s $n and now(), `b` being a generic plan run as it is (its
  // expressions read no subquery); null: `b` reads none.
  Result<std::string> Insert(const plan::BoundInsert& b, const std::atomic<bool>* cancel,
                             const std::vector<Value>* params = nullptr);
  Result<std::string> Update(sql::UpdateStmt& s, const std::atomic<bool>* cancel);
  Result<std::string> Update(const plan::BoundModify& b, const std::atomic<bool>* cancel);
  Result<std::string> Delete(sql::DeleteStmt& s, const std::atomic<bool>* cancel);
  Result<std::string> Delete(const plan::BoundModify& b, const std::atomic<bool>* cancel);
  // `c` filled with `params`: the bound statement Insert/Update/Delete/RunSelect run.
  Result<plan::BoundInsert> FillInsert(const plan::BoundInsert& c,
                                       const std::vector<Value>& params);
  Result<plan::BoundModify> FillModify(const plan::BoundModify& c,
                                       const std::vector<Value>& params);
  // The key write of `m` (its NOT NULL checks) whose node runs `plan`; no key range yet.
  static KeyWriteSpec KeyWriteOf(const plan::BoundModify& m, const plan::PlanNode& plan,
                                 bool is_delete);
  // `w`, an UPDATE or DELETE of one row by its key, run on the row's node
  // (TxnCoordinator::KeyWrite) under the block's transaction or, outside one, the statement's own,
  // committed here. The command tag, or nullopt: take the general path. Sets `w.read_committed` to
  // the session's.
  Result<std::optional<std::string>> KeyWrite(const TableSchema& t, Timestamp snap,
                                              KeyWriteSpec& w);
  Result<std::string> Move(sql::MoveSegmentStmt& s, ResultSink& sink);
  Result<std::string> AlterNode(sql::AlterNodeStmt& s, ResultSink& sink);
  Result<std::string> Show(sql::ShowStmt& s, ResultSink& sink);
  Result<std::string> Set(sql::SetStmt& s, ResultSink& sink);
  // Transaction control and isolation levels (executor_txn.cc). READ COMMITTED (the default,
  // as in PostgreSQL): each statement of a block reads a fresh snapshot, and a statement
  // that meets a row changed since then is undone and run again (Execute). REPEATABLE READ:
  // one snapshot for the block; such a statement fails with 40001.
  enum class Isolation { kReadCommitted, kRepeatableRead };
  static constexpr int kMaxRestarts = 100;
  Result<std::string> Txn(sql::TxnStmt& s, ResultSink& sink);
  static Result<Isolation> ParseIsolation(std::string_view level);
  static const char* IsolationName(Isolation level);
  std::string DefaultIsolation() const;
  // The open block's level, else the level the next one gets.
  Isolation isolation() const;
  // SET [SESSION CHARACTERISTICS AS] TRANSACTION ISOLATION LEVEL, SET
  // [default_]transaction_isolation.
  Result<std::string> SetIsolation(sql::SetStmt& s, ResultSink& sink);
  // Statements refused in a READ ONLY block (25006).
  static bool WritesData(const sql::Statement& stmt);
  // Statements READ COMMITTED runs again after a write conflict: they send nothing to the
  // client before their writes succeed.
  static bool Restartable(const sql::Statement& stmt);
  Result<std::string> Truncate(sql::TruncateStmt& s, const std::atomic<bool>* cancel);
  Result<std::string> Vacuum(sql::VacuumStmt& s, const std::atomic<bool>* cancel);
  // Counts the rows of `tables` for the planner (ANALYZE).
  Status Analyze(const std::vector<TableSchema>& tables, const std::atomic<bool>* cancel);
  // What a statement's execution carries of the session: the offload setting (on `scans`),
  // work_mem and exchange prefetch (on `ctx`).
  void ConfigureExecution(MasterScanProvider& scans, exec::ExecContext& ctx) const;
  // Runs `bound` to its end with counters per operator (EXPLAIN ANALYZE); the elapsed ms.
  Result<double> RunInstrumented(const plan::BoundSelect& bound,
                                 std::map<const plan::PlanNode*, exec::OperatorStats>* stats,
                                 exec::RemoteStats* remote_stats, const std::atomic<bool>* cancel);
  Result<std::string> Explain(sql::ExplainStmt& s, ResultSink& sink,
                              const std::atomic<bool>* cancel);
  Result<std::string> Dispatch(sql::Statement& stmt, ResultSink& sink,
                               const std::atomic<bool>* cancel);
  // The snapshot and transaction id statements read with; writes go through Apply.
  Timestamp Snapshot();
  uint64_t TxnId() const { return txn_ ? txn_->id : 0; }
  // `defer`: inserts that cannot conflict, which a block may send with its commit
  // (TxnCoordinator::Write).
  Status Apply(TableId table, Timestamp snapshot, std::vector<RowWrite> writes, bool defer = false);
  Status ApplyRows(const TableSchema& t, std::vector<RowWrite> writes, bool defer = false);
  // Takes a statement's writes as they are produced. A statement of up to kWritePiece
  // writes goes out whole at Finish (Apply); a larger one is sent to the nodes a piece at a
  // time, under the block's transaction or the statement's own (committed by Finish), so
  // the master holds one piece, however many rows the statement changes.
  class StatementWriter {
   public:
    static constexpr size_t kWritePiece = 10000;
    StatementWriter(Executor& e, TableId table, Timestamp snapshot)
        : e_(e), table_(table), snapshot_(snapshot) {}
    ~StatementWriter();  // rolls back a statement transaction that did not finish
    Status Add(RowWrite w);
    // Sends what is held (once Add has overflowed a piece, or always with `force`).
    Status Flush(bool force = false);
    Status Finish();
    bool streaming() const { return own_ != nullptr || e_.txn_ != nullptr; }

   private:
    Executor& e_;
    TableId table_;
    Timestamp snapshot_;
    std::vector<RowWrite> held_;
    std::unique_ptr<Transaction> own_;  // outside a block, once the statement outgrew a piece
    bool sent_ = false;
    int64_t row_delta_ = 0;  // rows inserted minus deleted by the pieces sent
  };
  // Rows inserted minus rows deleted by `writes` (the planner's row estimate follows them).
  static int64_t RowDelta(const std::vector<RowWrite>& writes);
  Status CheckNotNull(const TableSchema& t, const std::vector<Value>& row);
  // Fills the hidden row id (if `t` has one) and serial `columns` of `row` with their next numbers.
  Status DrawGenerated(const TableSchema& t, const std::vector<int>& columns,
                       std::vector<Value>* row);
  // The next hidden row id (`column` the hidden key) or serial number of `column`.
  Result<Value> Generate(const TableSchema& t, int column);
  // The write inserting `row` into `t`: 23502 on a NULL in a NOT NULL column, 23505 if its key
  // is already in `keys` (the keys of this statement so far, to which it is added; null for
  // a statement of one row).
  Result<RowWrite> InsertWrite(const TableSchema& t, const std::vector<Value>& row,
                               std::set<std::string>* keys);
  // Runs `source` at `snapshot`, calling `fn` for every row it yields; `fn` gets the
  // execution context for evaluating expressions over the row (subqueries need it).
  Status ForEachRow(
      const plan::PlanNode& source, Timestamp snapshot, const std::atomic<bool>* cancel,
      const std::function<Status(const exec::Batch&, size_t, exec::ExecContext*)>& fn);

  // Outside a transaction block, a statement reads at its own snapshot, registered with the
  // cluster (so garbage collection keeps what it can see) while the statement runs.
  class StatementSnapshot {
   public:
    // `txn_control`: BEGIN/COMMIT/ROLLBACK (a block's snapshot stays as it is).
    StatementSnapshot(Executor& e, bool txn_control);
    ~StatementSnapshot();
    // A newer snapshot for the statement (READ COMMITTED; the block's under a block).
    void Refresh();

   private:
    Executor& e_;
    bool own_;
  };

  Cluster& cluster_;               // borrowed; outlives the executor
  EnergyService& energy_service_;  // borrowed; outlives the executor
  StatementCpuScope* energy_ =
      nullptr;          // the running statement's accounting (EXPLAIN ANALYZE reads it)
  CpuCarry cpu_carry_;  // where the session's previous statement ended
  DatabaseCatalog db_;
  // borrowed; outlives the session
  // SET's values by name: changed only through SetSetting and ResetSetting, which count the
  // changes (a cached plan made since the last change needs no look at the settings).
  std::map<std::string, std::string, std::less<>> settings_;
  uint64_t settings_changes_ = 0;
  KeyWriteSpec key_write_spec_;  // RunKeyWrite's, kept for its memory
  void SetSetting(const std::string& name, std::string value) {
    settings_[name] = std::move(value);
    settings_changes_++;
  }
  void ResetSetting(const std::string& name) {
    settings_.erase(name);
    settings_changes_++;
  }
  std::unique_ptr<Transaction> txn_;  // open transaction block, if any
  struct CopyIn {
    sql::CopyStmt stmt;
    TableSchema table;
    std::vector<int> cols;
    // Columns the COPY does not name that get a value: the hidden row id, serials, DEFAULTs
    // (`defaults`, bound once, evaluated per row).
    std::vector<int> generated;
    std::map<int, plan::BoundExprPtr> defaults;
    std::unique_ptr<Transaction> own;  // outside a block: the COPY's own transaction
    // The pipeline behind the parse: `encoder` turns a piece's fields into encoded rows (with
    // `row_encoder`) and hands them to `sender`, which prepares them on the nodes. Each is
    // declared after what its thread uses, so it is destroyed (its thread joined) first.
    std::unique_ptr<CopyStage<std::vector<RowWrite>>> sender;
    std::unique_ptr<CopyEncoder> row_encoder;  // used on the encoder's thread only
    std::unique_ptr<CopyStage<CopyPiece>> encoder;
    uint64_t rows = 0;  // rows parsed so far
  };
  // Encoded writes of a COPY piece's rows; errors name the input line.
  Result<std::vector<RowWrite>> CopyWrites(CopyIn& c, const CopyPiece& piece);
  std::unique_ptr<CopyIn> copy_;  // between BeginCopyIn and EndCopyIn
  // DDL done inside the open block takes effect at once; these undo it if the block rolls back
  // (run newest first).
  std::vector<std::function<void()>> txn_undo_;
  void UndoBlockDdl();
  Timestamp stmt_snapshot_ = 0;  // snapshot of the running statement outside a block
  bool failed_ = false;          // a statement of the block failed: only ROLLBACK helps
  Isolation isolation_ = Isolation::kReadCommitted;  // of the open block
  bool read_only_ = false;                           // the open block is READ ONLY
  bool block_used_ = false;  // a statement other than SET ran in the open block
};

}  // namespace wattdb::master
