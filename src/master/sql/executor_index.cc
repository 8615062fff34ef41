// Executor: CREATE INDEX, DROP INDEX and the UNIQUE constraints of CREATE TABLE.
#include "common/sqlstate.h"
#include "master/sql/executor.h"

namespace wattdb::master {

bool Executor::RelationExists(const std::string& name) const {
  if (db_.GetView(name)) return true;
  for (const auto& t : db_.Tables()) {
    if (t.name == name || t.FindIndex(name)) return true;
  }
  return false;
}

Result<uint32_t> Executor::AddIndex(const TableSchema& t, std::string name,
                                    const std::vector<std::string>& columns,
                                    const std::vector<bool>& desc, bool unique, bool constraint,
                                    int pos) {
  IndexDef def;
  def.unique = unique;
  def.constraint = constraint;
  const char* suffix = constraint ? "key" : "idx";
  std::string generated = t.name;
  for (size_t i = 0; i < columns.size(); i++) {
    int c = t.ColumnIndex(columns[i]);
    if (c < 0 || t.columns[c].hidden) {
      return Status::Sql(sqlstate::kUndefinedColumn,
                         fmt::format("column \"{}\" does not exist", columns[i]), pos);
    }
    if (std::find(def.spec.columns.begin(), def.spec.columns.end(), c) != def.spec.columns.end()) {
      return Status::Sql(sqlstate::kDuplicateColumn,
                         fmt::format("column \"{}\" appears twice in index", columns[i]), pos);
    }
    def.spec.columns.push_back(c);
    def.spec.desc.push_back(desc[i]);
    generated += "_" + columns[i];
  }
  if (name.empty()) {  // PostgreSQL's scheme: table_col[_col...]_idx|key, then a number
    name = generated + "_" + suffix;
    for (int n = 1; RelationExists(name); n++) name = fmt::format("{}_{}{}", generated, suffix, n);
  } else if (RelationExists(name)) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", name), pos);
  }
  if (name.find('/') != std::string::npos) {
    return Status::Sql(sqlstate::kInvalidName,
                       fmt::format("invalid name \"{}\": '/' is reserved", name), pos);
  }
  def.name = name;
  return cluster_.placement().CreateIndex(db_.Qualify(t.name), std::move(def));
}

Result<std::string> Executor::CreateIndex(sql::CreateIndexStmt& s, ResultSink& sink) {
  if (db_.GetView(s.table))
    return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is not a table", s.table),
                       s.table_pos);
  auto t = db_.GetTable(s.table);
  if (!t.ok()) return t.status().WithPosition(s.table_pos);
  if (t->id >= kFirstSystemTableId) {
    return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is a system view", s.table),
                       s.table_pos);
  }
  if (!s.name.empty() && s.if_not_exists && RelationExists(s.name)) {
    RETURN_NOT_OK(sink.Notice(sqlstate::kDuplicateTable,
                              fmt::format("relation \"{}\" already exists, skipping", s.name)));
    return std::string("CREATE INDEX");
  }
  if (txn_) {
    // The index build waits for the table's writers; a block that wrote it would wait on itself.
    for (const auto& seg : cluster_.catalog().SegmentsOverlapping(t->id, "", "")) {
      if (txn_->latches.count(seg.id)) {
        return Status::Sql(
            sqlstate::kObjectInUse,
            fmt::format("cannot create an index on \"{}\": this transaction wrote it", s.table));
      }
    }
  }
  ASSIGN_OR_RETURN(uint32_t id, AddIndex(*t, s.name, s.columns, s.desc, s.unique, false, s.pos));
  if (txn_) {
    txn_undo_.push_back([this, table = db_.Qualify(t->name), id] {
      (void)cluster_.placement().DropIndex(table, id);
    });
  }
  return std::string("CREATE INDEX");
}

Result<std::string> Executor::DropIndex(sql::DropTableStmt& s, ResultSink& sink) {
  for (const auto& name : s.names) {
    std::optional<std::pair<std::string, uint32_t>> found;
    for (const auto& t : db_.Tables()) {
      const IndexDef* ix = t.FindIndex(name);
      if (ix && ix->constraint) {
        return Status::Sql(
            sqlstate::kDependentObjectsStillExist,
            fmt::format("cannot drop index {} because constraint {} on table {} requires it", name,
                        name, t.name));
      }
      if (ix) found = {t.name, ix->spec.id};
    }
    if (!found) {
      if (s.if_exists) {
        RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                                  fmt::format("index \"{}\" does not exist, skipping", name)));
        continue;
      }
      return Status::Sql(sqlstate::kUndefinedObject,
                         fmt::format("index \"{}\" does not exist", name));
    }
    RETURN_NOT_OK(cluster_.placement().DropIndex(db_.Qualify(found->first), found->second));
  }
  return std::string("DROP INDEX");
}

}  // namespace wattdb::master
