// COPY of the executor: FROM STDIN in pieces under one transaction, TO STDOUT as a stream.
#include <algorithm>

#include "common/codec.h"
#include "master/sql/executor.h"

namespace wattdb::master {

Result<std::vector<int>> Executor::CopyColumns(const sql::CopyStmt& s, TableSchema* table) {
  auto t = db_.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  *table = std::move(t).value();
  if (table->id >= kFirstSystemTableId && s.from) {
    return Status::Sql("42809", fmt::format("cannot copy to view \"{}\"", table->name));
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
      return Status::Sql("42703", fmt::format("column \"{}\" of relation \"{}\" does not exist", name, table->name));
    }
    cols.push_back(idx);
  }
  return cols;
}

Status Executor::BeginCopyIn(const sql::CopyStmt& s) {
  if (failed_) {
    return Status::Sql("25P02", "current transaction is aborted, commands ignored until end of transaction block");
  }
  if (txn_ && read_only_) {
    failed_ = true;
    return Status::Sql("25006", "cannot execute COPY FROM in a read-only transaction");
  }
  if (txn_) {
    block_used_ = true;
    StatementSnapshot fresh(*this, /*txn_control=*/false);  // READ COMMITTED: a new snapshot for the block
  }
  auto c = std::make_unique<CopyIn>();
  c->stmt = s;
  ASSIGN_OR_RETURN(c->cols, CopyColumns(s, &c->table));
  for (int i = 0; i < static_cast<int>(c->table.columns.size()); i++) {
    if (c->table.columns[i].serial && std::find(c->cols.begin(), c->cols.end(), i) == c->cols.end()) {
      c->unnamed_serials.push_back(i);
    }
  }
  if (!txn_) c->own = cluster_.Begin(cluster_.AcquireSnapshot());
  Transaction* txn = c->own ? c->own.get() : txn_.get();
  c->sender = std::make_unique<CopySender>([this, txn, id = c->table.id, name = c->table.name](
                                               std::vector<RowWrite> writes) {
    Status st = cluster_.Write(*txn, id, std::move(writes));
    if (!st.ok() && st.sqlstate() == "23505" && st.message().find('"') == std::string::npos) {
      return Status::Sql("23505", fmt::format("duplicate key value violates unique constraint \"{}_pkey\"", name));
    }
    return st;
  });
  copy_ = std::move(c);
  return Status::OK();
}

Status Executor::CopyInRows(const CopyRows& rows) {
  CopyIn& c = *copy_;
  const TableSchema& t = c.table;
  std::vector<RowWrite> writes;
  writes.reserve(rows.rows());
  std::vector<Value> row(t.columns.size());
  for (size_t r = 0; r < rows.rows(); r++) {
    size_t first = rows.row_begin(r), fields = rows.row_end(r) - first;
    uint64_t line = ++c.rows + (c.stmt.header ? 1 : 0);
    auto where = [&](size_t col) {
      return fmt::format("COPY {}, line {}{}", t.name, line,
                         col < c.cols.size() ? fmt::format(", column {}", t.columns[c.cols[col]].name) : "");
    };
    if (fields < c.cols.size()) {
      return Status::Sql("22P04", fmt::format("missing data for column \"{}\" ({})",
                                              t.columns[c.cols[fields]].name, where(fields)));
    }
    if (fields > c.cols.size()) {
      return Status::Sql("22P04", fmt::format("extra data after last expected column ({})", where(c.cols.size())));
    }
    for (auto& v : row) v = Value();
    for (size_t i = 0; i < c.cols.size(); i++) {
      if (rows.null(first + i)) continue;
      auto v = Value::FromText(rows.text(first + i), t.columns[c.cols[i]].type);
      if (!v.ok()) return v.status().Prepend(where(i));
      row[c.cols[i]] = std::move(v).value();
    }
    RETURN_NOT_OK(DrawGenerated(t, c.unnamed_serials, &row));
    RETURN_NOT_OK_PREPEND(CheckNotNull(t, row), where(c.cols.size()));
    RowWrite& w = writes.emplace_back();
    w.key = EncodeKey(t, row);
    EncodeRow(row, &w.row);
    w.check = RemoteWrite::Check::kInsert;  // a key repeated within the COPY fails on its node (23505)
  }
  return c.sender->Push(std::move(writes));
}

Result<std::string> Executor::EndCopyIn(bool commit) {
  if (!copy_) return Status::Internal("no COPY in progress");
  std::unique_ptr<CopyIn> c = std::move(copy_);
  Status sent = c->sender->Finish();  // every piece prepared on the nodes (or the first failure)
  if (commit && !sent.ok()) {
    commit = false;
    if (!c->own) failed_ = true;
    if (c->own) {
      Timestamp snap = c->own->snapshot;
      cluster_.Rollback(*c->own);
      cluster_.ReleaseSnapshot(snap);
    }
    return sent;
  }
  if (!c->own) {  // the block's transaction ends with the block
    if (!commit) failed_ = true;
    if (commit) cluster_.catalog().AdjustRowCount(c->table.id, static_cast<int64_t>(c->rows));
    return fmt::format("COPY {}", c->rows);
  }
  Timestamp snap = c->own->snapshot;
  Status st = commit ? cluster_.Commit(*c->own) : (cluster_.Rollback(*c->own), Status::OK());
  cluster_.ReleaseSnapshot(snap);
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
  return ForEachRow(*scan, Snapshot(), cancel, [&](const exec::Batch& batch, size_t r, exec::ExecContext*) {
    row.clear();
    for (int c : cols) row.push_back(batch.Get(c, r));
    return emit(row);
  });
}

}  // namespace wattdb::master
