// COPY of the executor: FROM STDIN in pieces under one transaction, TO STDOUT as a stream.
#include <algorithm>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "master/sql/copy_encoder.h"
#include "master/sql/executor.h"
#include "query/exec/eval.h"
#include "query/plan/binder.h"

namespace wattdb::master {

Result<std::vector<int>> Executor::CopyColumns(const sql::CopyStmt& s, TableSchema* table) {
  auto t = db_.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  *table = std::move(t).value();
  if (table->id >= kFirstSystemTableId && s.from) {
    return Status::Sql(sqlstate::kWrongObjectType,
                       fmt::format("cannot copy to view \"{}\"", table->name));
  }
  std::vector<int> cols;
  if (s.columns.empty()) {
    for (size_t i = 0; i < table->columns.size(); i++) {
      if (!table->columns[i].hidden) cols.push_back(static_cast<int>(i));
    }
  }
  for (const auto& name : s.columns) {
    int idx = table->ColumnIndex(name);
    if (idx < 0 || table->columns[idx].hidden) {
      return Status::Sql(
          sqlstate::kUndefinedColumn,
          fmt::format("column \"{}\" of relation \"{}\" does not exist", name, table->name));
    }
    cols.push_back(idx);
  }
  return cols;
}

Status Executor::BeginCopyIn(const sql::CopyStmt& s) {
  if (failed_) {
    return Status::Sql(
        sqlstate::kInFailedSqlTransaction,
        "current transaction is aborted, commands ignored until end of transaction block");
  }
  if (txn_ && read_only_) {
    failed_ = true;
    return Status::Sql(sqlstate::kReadOnlySqlTransaction,
                       "cannot execute COPY FROM in a read-only transaction");
  }
  if (txn_) {
    block_used_ = true;
    StatementSnapshot fresh(*this,
                            /*txn_control=*/false);  // READ COMMITTED: a new snapshot for the block
  }
  auto c = std::make_unique<CopyIn>();
  c->stmt = s;
  ASSIGN_OR_RETURN(c->cols, CopyColumns(s, &c->table));
  for (int i = 0; i < static_cast<int>(c->table.columns.size()); i++) {
    const Column& col = c->table.columns[i];
    if (std::find(c->cols.begin(), c->cols.end(), i) != c->cols.end()) continue;
    bool drawn = col.serial || col.hidden;            // a serial's next number, the hidden row id
    if (!drawn && col.default_sql.empty()) continue;  // NULL
    if (!drawn) {
      ASSIGN_OR_RETURN(c->defaults[i], plan::BindDefault(col));
    }
    c->generated.push_back(i);
  }
  c->row_encoder = std::make_unique<CopyEncoder>(c->table, c->cols, c->generated);
  if (!txn_) c->own = cluster_.txns().Begin(cluster_.timestamps().Acquire());
  Transaction* txn = c->own ? c->own.get() : txn_.get();
  c->sender = std::make_unique<CopyStage<std::vector<RowWrite>>>(
      [this, txn, id = c->table.id, name = c->table.name](std::vector<RowWrite> writes) {
        Status st = cluster_.txns().Write(*txn, id, std::move(writes));
        if (!st.ok() && st.sqlstate() == sqlstate::kUniqueViolation &&
            st.message().find('"') == std::string::npos) {
          return Status::Sql(
              sqlstate::kUniqueViolation,
              fmt::format("duplicate key value violates unique constraint \"{}_pkey\"", name));
        }
        return st;
      });
  c->encoder = std::make_unique<CopyStage<CopyPiece>>(
      [this, in = c.get()](const CopyPiece& piece) -> Status {
        ASSIGN_OR_RETURN(std::vector<RowWrite> writes, CopyWrites(*in, piece));
        return in->sender->Push(std::move(writes));
      });
  copy_ = std::move(c);
  return Status::OK();
}

Status Executor::CopyInRows(CopyRows rows) {
  CopyIn& c = *copy_;
  CopyPiece piece{std::move(rows), c.rows + 1 + (c.stmt.header ? 1 : 0)};
  c.rows += piece.rows.rows();
  return c.encoder->Push(std::move(piece));
}

// Runs on the encoder's thread: reads only `c`'s table and columns, fixed while the COPY runs,
// evaluates DEFAULTs (bound expressions, read only) and draws row ids and serials from the
// cluster's catalog (thread-safe).
Result<std::vector<RowWrite>> Executor::CopyWrites(CopyIn& c, const CopyPiece& piece) {
  const TableSchema& t = c.table;
  const CopyRows& rows = piece.rows;
  std::vector<RowWrite> writes(rows.rows());
  CopyEncoder::GenerateFn generate = [&](int column) -> Result<Value> {
    auto d = c.defaults.find(column);
    return d != c.defaults.end() ? exec::EvalConst(*d->second) : Generate(t, column);
  };
  for (size_t r = 0; r < rows.rows(); r++) {
    size_t fields = rows.row_end(r) - rows.row_begin(r);
    auto where = [&](size_t col) {
      return fmt::format(
          "COPY {}, line {}{}", t.name, piece.first_line + r,
          col < c.cols.size() ? fmt::format(", column {}", t.columns[c.cols[col]].name) : "");
    };
    if (fields < c.cols.size()) {
      return Status::Sql(sqlstate::kBadCopyFileFormat,
                         fmt::format("missing data for column \"{}\" ({})",
                                     t.columns[c.cols[fields]].name, where(fields)));
    }
    if (fields > c.cols.size()) {
      return Status::Sql(
          sqlstate::kBadCopyFileFormat,
          fmt::format("extra data after last expected column ({})", where(c.cols.size())));
    }
    RowWrite& w = writes[r];
    size_t field = 0;
    Status st = c.row_encoder->Encode(rows, r, generate, &w.key, &w.row, &field);
    if (!st.ok()) return field == CopyEncoder::kNoField ? st : st.Prepend(where(field));
    // A key repeated within the COPY fails on its node (23505); a hidden row id is never repeated.
    w.check = t.HasHiddenKey() ? RemoteWrite::Check::kNone : RemoteWrite::Check::kInsert;
  }
  return writes;
}

Result<std::string> Executor::EndCopyIn(bool commit) {
  if (!copy_) return Status::Internal("no COPY in progress");
  std::unique_ptr<CopyIn> c = std::move(copy_);
  Status sent = c->encoder->Finish();  // every piece encoded and handed on (or the first failure)
  Status prepared = c->sender->Finish();  // ... and prepared on the nodes
  if (sent.ok()) sent = prepared;
  if (commit && !sent.ok()) {
    commit = false;
    if (!c->own) failed_ = true;
    if (c->own) {
      Timestamp snap = c->own->snapshot;
      cluster_.txns().Rollback(*c->own);
      cluster_.timestamps().Release(snap);
    }
    return sent;
  }
  if (!c->own) {  // the block's transaction ends with the block
    if (!commit) failed_ = true;
    if (commit) cluster_.catalog().AdjustRowCount(c->table.id, static_cast<int64_t>(c->rows));
    return fmt::format("COPY {}", c->rows);
  }
  Timestamp snap = c->own->snapshot;
  Status st =
      commit ? cluster_.txns().Commit(*c->own) : (cluster_.txns().Rollback(*c->own), Status::OK());
  cluster_.timestamps().Release(snap);
  RETURN_NOT_OK(st);
  if (commit) cluster_.catalog().AdjustRowCount(c->table.id, static_cast<int64_t>(c->rows));
  return fmt::format("COPY {}", c->rows);
}

Status Executor::CopyOut(const sql::CopyStmt& s, const std::atomic<bool>* cancel,
                         const std::function<Status(const std::vector<Value>&)>& emit) {
  StatementSnapshot snap(*this, /*txn_control=*/false);
  TableSchema t;
  ASSIGN_OR_RETURN(std::vector<int> cols, CopyColumns(s, &t));
  plan::PlanPtr scan = FullScan(t);
  std::vector<Value> row;
  return ForEachRow(*scan, Snapshot(), cancel,
                    [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
                      row.clear();
                      for (int c : cols) row.push_back(batch.Get(c, r));
                      return emit(row);
                    });
}

}  // namespace wattdb::master
