#include "master/sql/executor.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

#include "common/codec.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/sql/scan_provider.h"
#include "query/exec/eval.h"
#include "query/exec/operator.h"
#include "query/plan/binder.h"
#include "query/plan/generic_plan.h"
#include "query/plan/key_update.h"
#include "query/plan/view_rewrite.h"

namespace wattdb::master {

plan::PlanPtr FullScan(const TableSchema& t) {
  auto scan = std::make_unique<plan::PlanNode>();
  scan->kind = plan::PlanNode::Kind::kScan;
  scan->table = t.id;
  scan->table_name = t.name;
  for (const auto& c : t.columns) scan->types.push_back(c.type);
  return scan;
}

Executor::~Executor() {
  if (copy_) (void)EndCopyIn(false);
  if (txn_) {
    cluster_.txns().Rollback(*txn_);
    cluster_.timestamps().Release(txn_->snapshot);
    UndoBlockDdl();
  }
}

void Executor::UndoBlockDdl() {
  for (auto it = txn_undo_.rbegin(); it != txn_undo_.rend(); ++it) (*it)();
  txn_undo_.clear();
}

Timestamp Executor::Snapshot() { return txn_ ? txn_->snapshot : stmt_snapshot_; }

Executor::StatementSnapshot::StatementSnapshot(Executor& e, bool txn_control)
    : e_(e), own_(!e.txn_) {
  if (own_) {
    e_.stmt_snapshot_ = e_.cluster_.timestamps().Acquire();
  } else if (!txn_control && e_.isolation_ == Isolation::kReadCommitted) {
    Refresh();
  }
}

void Executor::StatementSnapshot::Refresh() {
  Timestamp& ts = own_ ? e_.stmt_snapshot_ : e_.txn_->snapshot;
  Timestamp fresh = e_.cluster_.timestamps().Acquire();
  e_.cluster_.timestamps().Release(ts);
  ts = fresh;
}

Executor::StatementSnapshot::~StatementSnapshot() {
  if (own_) e_.cluster_.timestamps().Release(e_.stmt_snapshot_);
}

// Apply, naming the violated constraint on 23505 as PostgreSQL does.
Status Executor::ApplyRows(const TableSchema& t, std::vector<RowWrite> writes, bool defer) {
  Status st = Apply(t.id, Snapshot(), std::move(writes), defer);
  if (!st.ok() && st.sqlstate() == sqlstate::kUniqueViolation &&
      st.message().find('"') == std::string::npos) {
    return Status::Sql(
        sqlstate::kUniqueViolation,
        fmt::format("duplicate key value violates unique constraint \"{}_pkey\"", t.name));
  }
  return st;
}

int64_t Executor::RowDelta(const std::vector<RowWrite>& writes) {
  int64_t delta = 0;
  for (const auto& w : writes) {
    bool inserts = w.check == RemoteWrite::Check::kInsert || w.check == RemoteWrite::Check::kNone;
    delta += w.is_delete ? -1 : inserts ? 1 : 0;
  }
  return delta;
}

Status Executor::Apply(TableId table, Timestamp snapshot, std::vector<RowWrite> writes,
                       bool defer) {
  int64_t delta = RowDelta(writes);
  Status st = txn_ ? cluster_.txns().Write(*txn_, table, std::move(writes), defer)
                   : cluster_.txns().ApplyWrites(table, snapshot, writes);
  if (st.ok() && delta != 0) cluster_.catalog().AdjustRowCount(table, delta);
  return st;
}

Executor::StatementWriter::~StatementWriter() {
  if (own_) e_.cluster_.txns().Rollback(*own_);
}

Status Executor::StatementWriter::Add(RowWrite w) {
  held_.push_back(std::move(w));
  return held_.size() >= kWritePiece ? Flush(true) : Status::OK();
}

Status Executor::StatementWriter::Flush(bool force) {
  if (held_.empty() || (!force && !sent_)) return Status::OK();
  if (!e_.txn_ && !own_) own_ = e_.cluster_.txns().Begin(snapshot_);
  Transaction& t = own_ ? *own_ : *e_.txn_;
  sent_ = true;
  std::vector<RowWrite> piece;
  piece.swap(held_);
  row_delta_ += RowDelta(piece);
  return e_.cluster_.txns().Write(t, table_, std::move(piece));
}

Status Executor::StatementWriter::Finish() {
  if (!sent_) return e_.Apply(table_, snapshot_, std::move(held_));  // one piece: the usual path
  RETURN_NOT_OK(Flush(true));
  Status st;
  if (own_) {
    std::unique_ptr<Transaction> t = std::move(own_);
    st = e_.cluster_.txns().Commit(*t);
  }
  if (st.ok() && row_delta_ != 0) e_.cluster_.catalog().AdjustRowCount(table_, row_delta_);
  return st;
}

Result<std::string> Executor::Execute(sql::Statement& stmt, ResultSink& sink,
                                      const std::atomic<bool>* cancel) {
  return Run(stmt, [&] { return Dispatch(stmt, sink, cancel); });
}

template <typename Body>
Result<std::string> Executor::Run(const sql::Statement& stmt, Body body) {
  bool is_txn_control = std::holds_alternative<sql::TxnStmt>(stmt);
  if (failed_ && !is_txn_control) {
    return Status::Sql(
        sqlstate::kInFailedSqlTransaction,
        "current transaction is aborted, commands ignored until end of transaction block");
  }
  if (txn_ && std::holds_alternative<sql::VacuumStmt>(stmt) &&
      !std::get<sql::VacuumStmt>(stmt).only_analyze) {
    failed_ = true;
    return Status::Sql(sqlstate::kActiveSqlTransaction,
                       "VACUUM cannot run inside a transaction block");
  }
  // CREATE TABLE and CREATE INDEX inside a block (drivers such as psycopg open one implicitly)
  // take effect at once and are undone if the block rolls back; other DDL and administration
  // are refused there.
  auto* drop = std::get_if<sql::DropTableStmt>(&stmt);
  if (txn_ && ((drop && !drop->view) || std::holds_alternative<sql::DatabaseStmt>(stmt) ||
               std::holds_alternative<sql::AddPrimaryKeyStmt>(stmt) ||
               std::holds_alternative<sql::MoveSegmentStmt>(stmt) ||
               std::holds_alternative<sql::SetTableOptionsStmt>(stmt) ||
               std::holds_alternative<sql::AlterNodeStmt>(stmt) ||
               std::holds_alternative<sql::AlterSystemStmt>(stmt))) {
    failed_ = true;
    return Status::Sql(sqlstate::kActiveSqlTransaction,
                       "DDL and cluster administration cannot run inside a transaction block");
  }
  if (txn_ && read_only_ && WritesData(stmt)) {
    failed_ = true;
    return Status::Sql(sqlstate::kReadOnlySqlTransaction,
                       "cannot execute a write in a read-only transaction");
  }
  if (txn_ && !is_txn_control && !std::holds_alternative<sql::SetStmt>(stmt)) block_used_ = true;
  if (txn_ && !is_txn_control) {
    // The block's held-back inserts go out before anything reads or writes after them.
    Status sent = cluster_.txns().SendDeferred(*txn_);
    if (!sent.ok()) {
      failed_ = true;
      return sent;
    }
  }
  StatementSnapshot snap(*this, is_txn_control);
  db_.set_read_snapshot(Snapshot());
  StatementCpuScope energy(&cpu_carry_);  // also the statement's duration
  if (is_txn_control && std::get<sql::TxnStmt>(stmt).kind == sql::TxnStmt::Kind::kBegin)
    energy.PassOn();
  energy_ = &energy;
  Transaction::Mark mark = txn_ ? txn_->mark() : Transaction::Mark{};
  auto r = body();
  // READ COMMITTED: a row the statement writes was changed by a transaction that committed
  // after the statement's snapshot. Undo the statement's writes and run it again on a
  // snapshot that sees that commit (its lock is ours to wait for, so the retry makes progress).
  for (int restarts = 0;
       !r.ok() && r.status().IsConflict() && isolation() == Isolation::kReadCommitted &&
       Restartable(stmt) && restarts < kMaxRestarts;
       restarts++) {
    cluster_.queries().restarts.fetch_add(1, std::memory_order_relaxed);
    if (txn_) {
      Status undone = cluster_.txns().RollbackStatement(*txn_, mark);
      if (!undone.ok()) {
        r = undone;
        break;
      }
    }
    cluster_.timestamps().AwaitStable();
    snap.Refresh();
    db_.set_read_snapshot(Snapshot());
    r = body();
  }
  // A write that wrote nothing may have judged a row by a version its node let go of before
  // that commit completed (early lock release; a key write evaluates its predicate on the
  // newest version): it is answered only once that commit completed, so that no statement
  // the client runs next reads below what this one saw.
  if (r.ok() && (*r == "UPDATE 0" || *r == "DELETE 0" || *r == "INSERT 0 0"))
    cluster_.timestamps().AwaitStable();
  energy_ = nullptr;
  StatementEnergy e = energy.Finish(cluster_.monitor());
  cluster_.queries().Record(r.ok(), static_cast<uint64_t>(e.seconds * 1e6));
  e.statement = r.ok() ? *r : "ERROR " + r.status().sqlstate();
  cluster_.energy_log().Add(std::move(e));
  if (!r.ok() && txn_ && !is_txn_control) failed_ = true;
  if (!r.ok() && r.status().sqlstate() == sqlstate::kSerializationFailure)
    cluster_.timestamps().AwaitStable();
  return r;
}

Result<std::string> Executor::Dispatch(sql::Statement& stmt, ResultSink& sink,
                                       const std::atomic<bool>* cancel) {
  return std::visit(
      [&](auto& s) -> Result<std::string> {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, sql::EmptyStmt>) {
          return std::string();
        } else if constexpr (std::is_same_v<T, sql::SelectStmt>) {
          return Select(s, sink, cancel);
        } else if constexpr (std::is_same_v<T, sql::CreateTableStmt>) {
          return CreateTable(s, sink);
        } else if constexpr (std::is_same_v<T, sql::DropTableStmt>) {
          return DropTable(s, sink);
        } else if constexpr (std::is_same_v<T, sql::InsertStmt>) {
          return Insert(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::UpdateStmt>) {
          return Update(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::DeleteStmt>) {
          return Delete(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::MoveSegmentStmt>) {
          return Move(s, sink);
        } else if constexpr (std::is_same_v<T, sql::AlterNodeStmt>) {
          return AlterNode(s, sink);
        } else if constexpr (std::is_same_v<T, sql::AlterSystemStmt>) {
          RETURN_NOT_OK(energy_service_.Reload());
          return std::string("ALTER SYSTEM");
        } else if constexpr (std::is_same_v<T, sql::TxnStmt>) {
          return Txn(s, sink);
        } else if constexpr (std::is_same_v<T, sql::SetStmt>) {
          return Set(s, sink);
        } else if constexpr (std::is_same_v<T, sql::ShowStmt>) {
          return Show(s, sink);
        } else if constexpr (std::is_same_v<T, sql::TruncateStmt>) {
          return Truncate(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::CopyStmt>) {
          return Status::NotSupported("COPY must be the only statement of its query");
        } else if constexpr (std::is_same_v<T, sql::ExplainStmt>) {
          return Explain(s, sink, cancel);
        } else if constexpr (std::is_same_v<T, sql::VacuumStmt>) {
          return Vacuum(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::AddPrimaryKeyStmt>) {
          return AddPrimaryKey(s, cancel);
        } else if constexpr (std::is_same_v<T, sql::SetTableOptionsStmt>) {
          return SetTableOptions(s, sink);
        } else if constexpr (std::is_same_v<T, sql::DatabaseStmt>) {
          return Database(s, sink);
        } else if constexpr (std::is_same_v<T, sql::UserStmt>) {
          return User(s, sink);
        } else if constexpr (std::is_same_v<T, sql::CreateViewStmt>) {
          return CreateView(s);
        } else if constexpr (std::is_same_v<T, sql::CreateIndexStmt>) {
          return CreateIndex(s, sink);
        }
      },
      stmt);
}

Status Executor::LockRows(sql::SelectStmt& s, const std::atomic<bool>* cancel) {
  if (s.set_op != sql::SetOp::kNone || s.from.size() != 1 ||
      s.from[0].kind != sql::TableRef::Kind::kTable || !s.group_by.empty() || s.having ||
      s.distinct || db_.GetView(s.from[0].name)) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "FOR UPDATE is supported on a plain SELECT of one table");
  }
  if (!txn_) return Status::OK();  // a single statement holds nothing past its own end
  // The rows the query reads from its table are locked for the transaction on their nodes
  // (nothing is written): a concurrent writer of one waits for us, and a row changed since our
  // snapshot fails now with 40001 (first updater wins).
  sql::DeleteStmt d;
  d.table = s.from[0].name;
  d.alias = s.from[0].alias;
  d.where = std::move(s.where);
  auto bound = plan::BindDelete(d, db_);
  s.where = std::move(d.where);
  RETURN_NOT_OK(bound.status());
  const TableSchema& t = bound->table;
  if (t.id >= kFirstSystemTableId)
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "FOR UPDATE is not supported on system views");
  std::vector<RowWrite> writes;
  RETURN_NOT_OK(ForEachRow(*bound->source, Snapshot(), cancel,
                           [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
                             RowWrite w;
                             w.key = EncodeKey(t, batch.Row(r));
                             w.check = RemoteWrite::Check::kLock;
                             writes.push_back(std::move(w));
                             return Status::OK();
                           }));
  if (writes.empty()) return Status::OK();
  return Apply(t.id, Snapshot(), std::move(writes));
}

Result<std::string> Executor::Select(sql::SelectStmt& s, ResultSink& sink,
                                     const std::atomic<bool>* cancel) {
  if (s.for_update) RETURN_NOT_OK(LockRows(s, cancel));
  ASSIGN_OR_RETURN(plan::BoundSelect bound, PlanSelect(s));
  RETURN_NOT_OK(sink.Describe(bound.names, bound.types));
  return RunSelect(*bound.plan, sink, cancel);
}

void Executor::ConfigureExecution(MasterScanProvider& scans, exec::ExecContext& ctx) const {
  scans.set_offload(Offload());
  ctx.work_mem = WorkMem();
  ctx.prefetch = ExchangePrefetch();
}

Result<std::string> Executor::RunSelect(const plan::PlanNode& plan, ResultSink& sink,
                                        const std::atomic<bool>* cancel,
                                        const std::vector<Value>* params,
                                        const std::pair<std::string, std::string>* range) {
  MasterScanProvider scans(cluster_, energy_service_, Snapshot(), TxnId(), &db_);
  exec::ExecContext ctx(&scans, cancel);
  ConfigureExecution(scans, ctx);
  scans.set_follower_reads(FollowerReads());  // a query's reads, not a write's
  ctx.params = params;
  ctx.exchange_range = range;
  uint64_t rows = 0;
  RETURN_NOT_OK(exec::Execute(plan, ctx, [&](const exec::Batch& b) {
    rows += b.rows;
    return sink.Rows(b);
  }));
  return fmt::format("SELECT {}", rows);
}

// Generic plans are made and filled in executor_generic.cc; they run here, beside Run.
Result<std::string> Executor::ExecuteCached(const CachedPlan& c, const std::vector<Value>& params,
                                            ResultSink& sink, const std::atomic<bool>* cancel) {
  cluster_.queries().generic_plans.fetch_add(1, std::memory_order_relaxed);
  return Run(c.kind, [&]() -> Result<std::string> {
    if (std::holds_alternative<sql::SelectStmt>(c.kind)) {
      if (c.point_read) {
        if (auto range =
                plan::TemplateKeyRange(c.point_read->key_params, c.point_read->table, params)) {
          cluster_.queries().point_read_templates.fetch_add(1, std::memory_order_relaxed);
          RETURN_NOT_OK(sink.Describe(c.select.names, c.select.types));
          return RunSelect(*c.select.plan, sink, cancel, &params, &*range);
        }
      }
      ASSIGN_OR_RETURN(plan::PlanPtr plan, plan::Instantiate(*c.select.plan, params, db_));
      RETURN_NOT_OK(sink.Describe(c.select.names, c.select.types));
      return RunSelect(*plan, sink, cancel);
    }
    if (std::holds_alternative<sql::InsertStmt>(c.kind)) {
      if (c.insert_in_place) return Insert(c.insert, cancel, &params);
      ASSIGN_OR_RETURN(plan::BoundInsert b, FillInsert(c.insert, params));
      return Insert(b, cancel);
    }
    if (c.key_write && PushdownSetting() != "off") {
      ASSIGN_OR_RETURN(auto tag, RunKeyWrite(c, params));
      if (tag) return std::move(*tag);
    }
    ASSIGN_OR_RETURN(plan::BoundModify b, FillModify(c.modify, params));
    if (std::holds_alternative<sql::UpdateStmt>(c.kind)) return Update(b, cancel);
    return Delete(b, cancel);
  });
}

Status Executor::ForEachRow(
    const plan::PlanNode& source, Timestamp snapshot, const std::atomic<bool>* cancel,
    const std::function<Status(const exec::Batch&, size_t, exec::ExecContext*)>& fn) {
  MasterScanProvider scans(cluster_, energy_service_, snapshot, TxnId(), &db_);
  exec::ExecContext ctx(&scans, cancel);
  ConfigureExecution(scans, ctx);
  return exec::Execute(source, ctx, [&](const exec::Batch& batch) {
    for (size_t r = 0; r < batch.rows; r++) RETURN_NOT_OK(fn(batch, r, &ctx));
    return Status::OK();
  });
}

Result<RowWrite> Executor::InsertWrite(const TableSchema& t, const std::vector<Value>& row,
                                       std::set<std::string>* keys) {
  RETURN_NOT_OK(CheckNotNull(t, row));
  RowWrite w;
  w.key = EncodeKey(t, row);
  if (keys && !keys->insert(w.key).second) {
    return Status::Sql(
        sqlstate::kUniqueViolation,
        fmt::format("duplicate key value violates unique constraint \"{}_pkey\"", t.name));
  }
  EncodeRow(row, &w.row);
  w.check = t.HasHiddenKey() ? RemoteWrite::Check::kNone : RemoteWrite::Check::kInsert;
  return w;
}

Result<Value> Executor::Generate(const TableSchema& t, int column) {
  if (t.HasHiddenKey() && column == t.key_columns[0]) {
    ASSIGN_OR_RETURN(uint64_t rid, cluster_.catalog().NextRowId(t.id));
    return Value::Int64(static_cast<int64_t>(rid));
  }
  ASSIGN_OR_RETURN(uint64_t v, cluster_.catalog().NextSerial(t.id, column));
  return t.columns[column].type.id == TypeId::kInt64 ? Value::Int64(static_cast<int64_t>(v))
                                                     : Value::Int32(static_cast<int32_t>(v));
}

Status Executor::DrawGenerated(const TableSchema& t, const std::vector<int>& columns,
                               std::vector<Value>* row) {
  if (t.HasHiddenKey()) {
    ASSIGN_OR_RETURN((*row)[t.key_columns[0]], Generate(t, t.key_columns[0]));
  }
  for (int c : columns) {
    ASSIGN_OR_RETURN((*row)[c], Generate(t, c));
  }
  return Status::OK();
}

std::string Executor::NotNullMessage(const TableSchema& t, size_t column) {
  return fmt::format("null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                     t.columns[column].name, t.name);
}

Status Executor::CheckNotNull(const TableSchema& t, const std::vector<Value>& row) {
  for (size_t i = 0; i < t.columns.size(); i++) {
    if (t.columns[i].not_null && row[i].is_null()) {
      return Status::Sql(sqlstate::kNotNullViolation, NotNullMessage(t, i));
    }
  }
  return Status::OK();
}

Result<std::string> Executor::Insert(sql::InsertStmt& s, const std::atomic<bool>* cancel) {
  RETURN_NOT_OK(plan::RewriteViewTarget(s, db_));
  ASSIGN_OR_RETURN(plan::BoundInsert b, plan::BindInsert(s, db_));
  return Insert(b, cancel);
}

Result<std::string> Executor::Insert(const plan::BoundInsert& b, const std::atomic<bool>* cancel,
                                     const std::vector<Value>* params) {
  const TableSchema& t = b.table;
  if (t.id >= kFirstSystemTableId)
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("cannot insert into view \"{}\"", t.name));
  std::vector<std::vector<Value>> rows;
  if (b.source) {
    RETURN_NOT_OK(ForEachRow(*b.source, Snapshot(), cancel,
                             [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
                               rows.push_back(batch.Row(r));
                               return Status::OK();
                             }));
  } else {
    MasterScanProvider scans(cluster_, energy_service_, Snapshot(), TxnId(), &db_);
    exec::ExecContext ctx(&scans, cancel);
    ctx.work_mem = WorkMem();
    ctx.prefetch = ExchangePrefetch();
    if (params) {
      ctx.params = params;
      ctx.statement_time = db_.StatementTime();
    }
    exec::Batch one;
    one.rows = 1;
    rows.reserve(b.rows.size());
    for (auto& exprs : b.rows) {
      std::vector<Value> row;
      row.reserve(exprs.size());
      for (auto& e : exprs) {
        ASSIGN_OR_RETURN(Value v, exec::Eval(*e, one, 0, &ctx));
        row.push_back(std::move(v));
      }
      rows.push_back(std::move(row));
    }
  }
  std::vector<RowWrite> writes;
  writes.reserve(rows.size());
  std::set<std::string> keys;
  for (auto& row : rows) {
    RETURN_NOT_OK(DrawGenerated(t, b.generated, &row));
    ASSIGN_OR_RETURN(RowWrite w, InsertWrite(t, row, rows.size() > 1 ? &keys : nullptr));
    writes.push_back(std::move(w));
  }
  size_t n = writes.size();
  // Rows under hidden keys the master drew cannot conflict: a block sends them with its
  // commit, or before its next statement.
  RETURN_NOT_OK(ApplyRows(t, std::move(writes), /*defer=*/t.HasHiddenKey()));
  return fmt::format("INSERT 0 {}", n);
}

Result<std::string> Executor::Update(sql::UpdateStmt& s, const std::atomic<bool>* cancel) {
  RETURN_NOT_OK(plan::RewriteViewTarget(s, db_));
  ASSIGN_OR_RETURN(plan::BoundModify b, plan::BindUpdate(s, db_));
  return Update(b, cancel);
}

Result<std::string> Executor::Update(const plan::BoundModify& b, const std::atomic<bool>* cancel) {
  const TableSchema& t = b.table;
  if (t.id >= kFirstSystemTableId)
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("cannot update view \"{}\"", t.name));
  Timestamp snap = Snapshot();
  // Keys stay put unless a key column is set: then every row is written in place and the
  // writes stream to the nodes in pieces. Otherwise the statement's writes are gathered, to
  // pair each moved key's delete with the insert that may take its place.
  bool keys_change = std::any_of(b.sets.begin(), b.sets.end(), [&](const auto& set) {
    return std::find(t.key_columns.begin(), t.key_columns.end(), set.first) != t.key_columns.end();
  });
  if (!keys_change && PushdownSetting() != "off") {
    // One row by its key: its node computes and prepares the new row.
    if (auto ku = plan::PlanKeyUpdate(b)) {
      KeyWriteSpec w = KeyWriteOf(b, *ku->plan, false);
      w.lo = std::move(ku->lo);
      w.hi = std::move(ku->hi);
      ASSIGN_OR_RETURN(auto tag, KeyWrite(t, snap, w));
      if (tag) return std::move(*tag);
    }
  }
  // The new version of row r of `batch` (`row`: its old one): the SETs applied, NOT NULL
  // checked, key and row encoded into `w`.
  auto updated = [&](const exec::Batch& batch, size_t r, exec::ExecContext* ctx,
                     std::vector<Value>& row, RowWrite* w) -> Status {
    for (auto& [col, e] : b.sets) {
      ASSIGN_OR_RETURN(Value v, exec::Eval(*e, batch, r, ctx));
      row[col] = std::move(v);
    }
    RETURN_NOT_OK(CheckNotNull(t, row));
    w->key = EncodeKey(t, row);
    EncodeRow(row, &w->row);
    return Status::OK();
  };
  if (!keys_change) {
    StatementWriter out(*this, t.id, snap);
    uint64_t n = 0;
    RETURN_NOT_OK(
        ForEachRow(*b.source, snap, cancel,
                   [&](const exec::Batch& batch, size_t r, exec::ExecContext* ctx) -> Status {
                     std::vector<Value> row = batch.Row(r);
                     RowWrite w;
                     RETURN_NOT_OK(updated(batch, r, ctx, row, &w));
                     w.check = RemoteWrite::Check::kUpdate;
                     n++;
                     return out.Add(std::move(w));
                   }));
    RETURN_NOT_OK(out.Finish());
    return fmt::format("UPDATE {}", n);
  }
  std::vector<RowWrite> writes;
  std::set<std::string> new_keys;
  uint64_t count = 0;
  RETURN_NOT_OK(ForEachRow(
      *b.source, snap, cancel,
      [&](const exec::Batch& batch, size_t r, exec::ExecContext* ctx) -> Status {
        std::vector<Value> row = batch.Row(r);
        std::string old_key = EncodeKey(t, row);
        RowWrite w;
        RETURN_NOT_OK(updated(batch, r, ctx, row, &w));
        if (w.key != old_key) {
          // The key changed: delete the old row, insert the new one.
          RowWrite del;
          del.key = old_key;
          del.is_delete = true;
          del.check = RemoteWrite::Check::kUpdate;
          writes.push_back(std::move(del));
          w.check = RemoteWrite::Check::kInsert;
        } else {
          w.check = RemoteWrite::Check::kUpdate;
        }
        if (!new_keys.insert(w.key).second) {
          return Status::Sql(
              sqlstate::kUniqueViolation,
              fmt::format("duplicate key value violates unique constraint \"{}_pkey\"", t.name));
        }
        writes.push_back(std::move(w));
        count++;
        return Status::OK();
      }));
  // A key moved onto another row's old key: that row is rewritten in this statement too,
  // so drop the conflicting delete (insert check must see the old row as gone).
  std::set<std::string> deleted;
  for (const auto& w : writes) {
    if (w.is_delete) deleted.insert(w.key);
  }
  std::vector<RowWrite> merged;
  for (auto& w : writes) {
    if (w.is_delete && new_keys.count(w.key)) continue;
    if (!w.is_delete && w.check == RemoteWrite::Check::kInsert && deleted.count(w.key)) {
      w.check = RemoteWrite::Check::kUpdate;
    }
    merged.push_back(std::move(w));
  }
  RETURN_NOT_OK(ApplyRows(t, std::move(merged)));
  return fmt::format("UPDATE {}", count);
}

KeyWriteSpec Executor::KeyWriteOf(const plan::BoundModify& m, const plan::PlanNode& plan,
                                  bool is_delete) {
  KeyWriteSpec w;
  plan.Serialize(&w.plan);
  w.is_delete = is_delete;
  for (const auto& [col, e] : m.sets) {
    if (!m.table.columns[col].not_null) continue;
    w.not_null.push_back(static_cast<uint32_t>(col));
    w.not_null_errors.push_back(NotNullMessage(m.table, col));
  }
  return w;
}

Result<std::optional<std::string>> Executor::KeyWrite(const TableSchema& t, Timestamp snap,
                                                      KeyWriteSpec& w) {
  w.read_committed = isolation() == Isolation::kReadCommitted;
  bool is_delete = w.is_delete, templated = w.params.has_value();
  std::unique_ptr<Transaction> own = txn_ ? nullptr : cluster_.txns().Begin(snap);
  Transaction& txn = txn_ ? *txn_ : *own;
  auto n = cluster_.txns().KeyWrite(txn, t.id, w);
  if (!n.ok() || !n->has_value()) {  // failed, or the general path's to do: nothing stays
    if (own) cluster_.txns().Rollback(*own);
    if (!n.ok()) return n.status();
    return std::optional<std::string>();
  }
  if (own) RETURN_NOT_OK(cluster_.txns().Commit(*own));  // nothing written: ends the read-only txn
  cluster_.queries().key_writes.fetch_add(1, std::memory_order_relaxed);
  if (templated) cluster_.queries().key_write_templates.fetch_add(1, std::memory_order_relaxed);
  uint64_t rows = **n;
  if (!is_delete) return std::optional<std::string>(fmt::format("UPDATE {}", rows));
  if (rows) cluster_.catalog().AdjustRowCount(t.id, -static_cast<int64_t>(rows));
  return std::optional<std::string>(fmt::format("DELETE {}", rows));
}

Result<std::string> Executor::Delete(sql::DeleteStmt& s, const std::atomic<bool>* cancel) {
  RETURN_NOT_OK(plan::RewriteViewTarget(s, db_));
  ASSIGN_OR_RETURN(plan::BoundModify b, plan::BindDelete(s, db_));
  return Delete(b, cancel);
}

Result<std::string> Executor::Delete(const plan::BoundModify& b, const std::atomic<bool>* cancel) {
  const TableSchema& t = b.table;
  if (t.id >= kFirstSystemTableId)
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("cannot delete from view \"{}\"", t.name));
  Timestamp snap = Snapshot();
  if (PushdownSetting() != "off") {
    // One row by its key: its node checks the filter and prepares the delete.
    if (auto kd = plan::PlanKeyDelete(b)) {
      KeyWriteSpec w = KeyWriteOf(b, *kd->plan, true);
      w.lo = std::move(kd->lo);
      w.hi = std::move(kd->hi);
      ASSIGN_OR_RETURN(auto tag, KeyWrite(t, snap, w));
      if (tag) return std::move(*tag);
    }
  }
  StatementWriter out(*this, t.id, snap);
  size_t n = 0;
  RETURN_NOT_OK(ForEachRow(*b.source, snap, cancel,
                           [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
                             RowWrite w;
                             w.key = EncodeKey(t, batch.Row(r));
                             w.is_delete = true;
                             w.check = RemoteWrite::Check::kUpdate;
                             n++;
                             return out.Add(std::move(w));
                           }));
  RETURN_NOT_OK(out.Finish());
  return fmt::format("DELETE {}", n);
}

Result<std::string> Executor::Truncate(sql::TruncateStmt& s, const std::atomic<bool>* cancel) {
  // Every row is deleted at the statement's snapshot, so TRUNCATE is transactional (and
  // rolls back with its block); all tables go in one atomic write per table.
  std::vector<TableSchema> tables;
  for (const auto& name : s.names) {
    auto t = db_.GetTable(name);
    if (!t.ok()) return t.status().WithPosition(s.pos);
    if (t->id >= kFirstSystemTableId)
      return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is a system view", name));
    tables.push_back(std::move(t).value());
  }
  Timestamp snap = Snapshot();
  for (const auto& t : tables) {
    plan::PlanPtr scan = FullScan(t);
    StatementWriter out(*this, t.id, snap);
    RETURN_NOT_OK(ForEachRow(*scan, snap, cancel,
                             [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
                               RowWrite w;
                               w.key = EncodeKey(t, batch.Row(r));
                               w.is_delete = true;
                               w.check = RemoteWrite::Check::kUpdate;
                               return out.Add(std::move(w));
                             }));
    RETURN_NOT_OK(out.Finish());
  }
  return std::string("TRUNCATE TABLE");
}

Status Executor::Analyze(const std::vector<TableSchema>& tables, const std::atomic<bool>* cancel) {
  for (const auto& t : tables) {
    if (t.id >= kFirstSystemTableId) continue;
    uint64_t rows = 0;
    RETURN_NOT_OK(ForEachRow(*FullScan(t), Snapshot(), cancel,
                             [&](const exec::Batch&, size_t, exec::ExecContext*) {
                               rows++;
                               return Status::OK();
                             }));
    RETURN_NOT_OK(cluster_.catalog().SetRowCount(t.id, rows));
  }
  return Status::OK();
}

Result<std::string> Executor::Vacuum(sql::VacuumStmt& s, const std::atomic<bool>* cancel) {
  if (txn_ && !s.only_analyze)
    return Status::Sql(sqlstate::kActiveSqlTransaction,
                       "VACUUM cannot run inside a transaction block");
  std::set<TableId> tables;
  std::vector<TableSchema> schemas;
  for (const auto& name : s.names) {
    auto t = db_.GetTable(name);
    if (!t.ok()) return t.status().WithPosition(s.pos);
    tables.insert(t->id);
    schemas.push_back(*t);
  }
  if (s.names.empty()) {
    for (const auto& t : db_.Tables()) schemas.push_back(t);
  }
  if (s.analyze) RETURN_NOT_OK(Analyze(schemas, cancel));
  if (s.only_analyze) return std::string("ANALYZE");
  // Versions below the oldest snapshot in use are garbage: compact them away now. (This
  // statement's own snapshot is registered too, so the horizon is at most it.)
  Timestamp horizon = cluster_.timestamps().GcHorizon();
  std::set<NodeId> told;
  for (const auto& seg : cluster_.catalog().AllSegments()) {
    if (!tables.empty() && !tables.count(seg.table)) continue;
    auto c = cluster_.registry().Client(seg.node);
    if (!c.ok()) return c.status();
    if (told.insert(seg.node).second) RETURN_NOT_OK(RpcGcHorizon(**c, horizon));
    Status st = RpcCompact(**c, seg.id);
    if (!st.ok() && !st.IsStale()) return st;  // a segment that moved meanwhile is skipped
  }
  return std::string("VACUUM");
}

Result<std::string> Executor::Move(sql::MoveSegmentStmt& s, ResultSink& sink) {
  ASSIGN_OR_RETURN(TableSchema t, db_.GetTable(s.table));
  ASSIGN_OR_RETURN(SegmentEntry e, cluster_.catalog().GetSegment(s.segment));
  if (e.table != t.id) {
    return Status::Sql(
        sqlstate::kUndefinedObject,
        fmt::format("segment {} does not belong to table \"{}\"", s.segment, t.name));
  }
  Placement::OperatorAction busy(cluster_.placement(), s.node);
  ASSIGN_OR_RETURN(MoveReport r, cluster_.placement().MoveSegment(s.segment, s.node));
  RETURN_NOT_OK(
      sink.Notice(sqlstate::kSuccessfulCompletion,
                  fmt::format("segment {} moved from node {} to node {}: {} bytes in {} files, "
                              "{:.1f} ms (pull {:.1f} ms)",
                              r.segment, r.from, r.to, r.bytes, r.files, r.total_ms, r.pull_ms)));
  return std::string("ALTER TABLE");
}

Result<std::string> Executor::AlterNode(sql::AlterNodeStmt& s, ResultSink& sink) {
  Placement::OperatorAction busy(cluster_.placement(),
                                 s.node);  // the energy controller waits meanwhile
  switch (s.action) {
    case sql::AlterNodeStmt::Action::kDrain: {
      ASSIGN_OR_RETURN(auto reports, cluster_.placement().DrainNode(s.node));
      uint64_t bytes = 0;
      double ms = 0;
      for (const auto& r : reports) {
        bytes += r.bytes;
        ms += r.total_ms;
      }
      RETURN_NOT_OK(
          sink.Notice(sqlstate::kSuccessfulCompletion,
                      fmt::format("node {} drained: {} segment(s), {} bytes moved in {:.1f} ms",
                                  s.node, reports.size(), bytes, ms)));
      break;
    }
    case sql::AlterNodeStmt::Action::kPowerOff:
      RETURN_NOT_OK(cluster_.placement().PowerOff(s.node));
      break;
    case sql::AlterNodeStmt::Action::kPowerOn:
      RETURN_NOT_OK(cluster_.placement().PowerOn(s.node));
      break;
    case sql::AlterNodeStmt::Action::kSuspend:
      RETURN_NOT_OK(cluster_.placement().Suspend(s.node));
      break;
  }
  return std::string("ALTER NODE");
}

Result<plan::BoundSelect> Executor::PlanSelect(sql::SelectStmt& s) {
  ASSIGN_OR_RETURN(plan::BoundSelect bound, plan::BindSelect(s, db_));
  PushDown(&bound);
  return bound;
}

}  // namespace wattdb::master
