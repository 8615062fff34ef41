// DDL statements of the executor: CREATE / DROP TABLE and ALTER TABLE ADD PRIMARY KEY.
#include <algorithm>
#include <set>

#include <fmt/ranges.h>

#include "common/codec.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/nodes/node_rpc.h"
#include "master/sql/executor.h"
#include "query/sql/parser.h"

namespace wattdb::master {

Result<std::string> Executor::CreateTable(sql::CreateTableStmt& s, ResultSink& sink) {
  if (db_.GetTable(s.name).ok()) {
    if (s.if_not_exists) {
      RETURN_NOT_OK(sink.Notice(sqlstate::kDuplicateTable,
                                fmt::format("relation \"{}\" already exists, skipping", s.name)));
      return std::string("CREATE TABLE");
    }
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", s.name));
  }
  if (s.name.rfind("wattdb_", 0) == 0) {
    return Status::Sql(sqlstate::kReservedName,
                       fmt::format("table name \"{}\" is reserved for system views", s.name));
  }
  if (s.columns.empty()) return Status::NotSupported("tables without columns are not supported");
  TableSchema t;
  t.name = s.name;
  if (s.replicas > cluster_.config().nodes.size()) {
    return Status::Sql(sqlstate::kInvalidParameterValue,
                       fmt::format("replicas = {} needs {} data nodes; the cluster has {}",
                                   s.replicas, s.replicas, cluster_.config().nodes.size()));
  }
  t.replicas = s.replicas;
  std::set<std::string> names;
  for (const auto& c : s.columns) {
    if (!names.insert(c.name).second) {
      return Status::Sql(sqlstate::kDuplicateColumn,
                         fmt::format("column \"{}\" specified more than once", c.name), c.pos);
    }
    t.columns.push_back({c.name, c.type, c.not_null, false, c.default_sql, c.serial});
    auto d = plan::BindDefault(t.columns.back());
    if (!d.ok()) return d.status().WithPosition(c.default_pos);
  }
  for (const auto& k : s.primary_key) {
    int idx = t.ColumnIndex(k);
    if (idx < 0) {
      return Status::Sql(sqlstate::kUndefinedColumn,
                         fmt::format("column \"{}\" named in key does not exist", k), s.pk_pos);
    }
    for (int prev : t.key_columns) {
      if (prev == idx) {
        return Status::Sql(sqlstate::kDuplicateColumn,
                           fmt::format("column \"{}\" appears twice in primary key constraint", k),
                           s.pk_pos);
      }
    }
    t.key_columns.push_back(idx);
    t.columns[idx].not_null = true;
  }
  if (t.key_columns.empty()) {
    t.columns.push_back({"__rowid", SqlType{TypeId::kInt64}, true, true});
    t.key_columns.push_back(static_cast<int>(t.columns.size() - 1));
  }
  for (const auto& u : s.unique) {
    for (const auto& c : u.columns) {
      if (t.ColumnIndex(c) < 0) {
        return Status::Sql(sqlstate::kUndefinedColumn,
                           fmt::format("column \"{}\" named in key does not exist", c), u.pos);
      }
    }
  }
  RETURN_NOT_OK(CreateTableStorage(&t));
  for (const auto& u : s.unique) {
    Status st = AddIndex(t, u.name, u.columns, std::vector<bool>(u.columns.size(), false), true,
                         true, u.pos)
                    .status();
    if (!st.ok()) {
      if (auto segs = db_.DropTable(t.name); segs.ok()) DropSegments(*segs);
      return st;
    }
  }
  if (txn_) {
    txn_undo_.push_back([this, name = t.name] {
      if (auto segs = db_.DropTable(name); segs.ok()) DropSegments(*segs);
    });
  }
  return std::string("CREATE TABLE");
}

Result<std::string> Executor::SetTableOptions(sql::SetTableOptionsStmt& s, ResultSink& sink) {
  ASSIGN_OR_RETURN(TableSchema t, db_.GetTable(s.table));
  if (!s.replicas) return std::string("ALTER TABLE");
  if (*s.replicas > cluster_.config().nodes.size()) {
    return Status::Sql(sqlstate::kInvalidParameterValue,
                       fmt::format("replicas = {} needs {} data nodes; the cluster has {}",
                                   *s.replicas, *s.replicas, cluster_.config().nodes.size()),
                       s.pos);
  }
  t.replicas = *s.replicas;
  RETURN_NOT_OK(db_.UpdateTable(t));
  // Fewer copies: dropped now. More: seeded by the cluster's upkeep, a few segments a round,
  // while the table is in use (wattdb_replicas shows them arrive).
  Placement& placement = cluster_.placement();
  uint32_t want = placement.WantedReplicas(t.id);
  size_t short_of = 0;
  for (const SegmentEntry& e : cluster_.catalog().SegmentsOverlapping(t.id, "", "")) {
    RETURN_NOT_OK(placement.TrimReplicas(e.id));
    if (e.followers.size() + 1 < want) short_of++;
  }
  if (short_of) {
    RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                              fmt::format("{} segment(s) of \"{}\" get more copies in the "
                                          "background (see wattdb_replicas)",
                                          short_of, t.name)));
  }
  return std::string("ALTER TABLE");
}

Status Executor::CreateTableStorage(TableSchema* t) {
  NodeId node = cluster_.placement().NodeForNewTable();
  if (node == 0)
    return Status(Status::Code::kUnavailable, "no active node is up to hold the table",
                  sqlstate::kCannotConnectNow);
  ASSIGN_OR_RETURN(SegmentEntry seg, db_.CreateTable(t, node));
  auto client = cluster_.registry().Client(node);
  Status st = client.ok() ? RpcCreateSegment(**client, seg.id, t->id, "", "") : client.status();
  if (!st.ok()) {
    (void)db_.DropTable(t->name);
    return st.Prepend("create table");
  }
  Log("master")->info("table created name={} id={} first_segment={} node=n{}", t->name, t->id,
                      seg.id, node);
  // Its followers now, while the segment is empty: a copy costs next to nothing, and rows
  // written from the start have every copy. A node that cannot take one now gets it later.
  if (Status r = cluster_.placement().Replicate(seg.id); !r.ok())
    Log("master")->info("table {}: followers wait: {}", t->name, r.ToString());
  return Status::OK();
}

Status Executor::DropDependentViews(const std::string& name, const char* kind, bool cascade,
                                    ResultSink& sink) {
  auto deps = db_.DependentViews(name);
  if (deps.empty()) return Status::OK();
  if (!cascade) {
    return Status::Sql(
        sqlstate::kDependentObjectsStillExist,
        fmt::format("cannot drop {} {} because other objects depend on it (view {}); "
                    "use DROP ... CASCADE",
                    kind, name, deps[0]));
  }
  for (const auto& v : deps) {
    RETURN_NOT_OK(DropDependentViews(v, "view", true, sink));
    RETURN_NOT_OK(
        sink.Notice(sqlstate::kSuccessfulCompletion, fmt::format("drop cascades to view {}", v)));
    RETURN_NOT_OK(db_.DropView(v));
  }
  return Status::OK();
}

Result<std::string> Executor::Database(sql::DatabaseStmt& s, ResultSink& sink) {
  Catalog& cat = cluster_.catalog();
  if (s.create) {
    if (s.name == kDefaultDatabase)
      return Status::Sql(sqlstate::kDuplicateDatabase,
                         fmt::format("database \"{}\" already exists", s.name));
    if (s.name.find('/') != std::string::npos) {
      return Status::Sql(sqlstate::kInvalidName,
                         fmt::format("invalid database name \"{}\"", s.name));
    }
    RETURN_NOT_OK(cat.CreateDatabase(s.name));
    return std::string("CREATE DATABASE");
  }
  if (s.name == kDefaultDatabase)
    return Status::Sql(sqlstate::kObjectInUse, "the default database cannot be dropped");
  if (!cat.HasDatabase(s.name)) {
    if (s.if_exists) {
      RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                                fmt::format("database \"{}\" does not exist, skipping", s.name)));
      return std::string("DROP DATABASE");
    }
    return Status::Sql(sqlstate::kInvalidCatalogName,
                       fmt::format("database \"{}\" does not exist", s.name));
  }
  if (s.name == db_.database())
    return Status::Sql(sqlstate::kObjectInUse, "cannot drop the currently open database");
  if (int n = cluster_.SessionsOn(s.name); n > 0) {
    return Status::Sql(
        sqlstate::kObjectInUse,
        fmt::format("database \"{}\" is being accessed by other users ({} sessions)", s.name, n));
  }
  ASSIGN_OR_RETURN(auto segs, cat.DropDatabase(s.name));
  DropSegments(segs);
  return std::string("DROP DATABASE");
}

Result<std::string> Executor::User(sql::UserStmt& s, ResultSink& sink) {
  Catalog& cat = cluster_.catalog();
  auto creds = [&] {
    if (s.password) return auth::MakeCredentials(s.name, *s.password);
    auth::Credentials none;
    none.user = s.name;
    return none;
  };
  switch (s.kind) {
    case sql::UserStmt::Kind::kCreate:
      if (cat.HasUser(s.name))
        return Status::Sql(sqlstate::kDuplicateObject,
                           fmt::format("role \"{}\" already exists", s.name));
      RETURN_NOT_OK(cat.PutUser(creds()));
      return std::string("CREATE ROLE");
    case sql::UserStmt::Kind::kAlter:
      if (!cat.HasUser(s.name))
        return Status::Sql(sqlstate::kUndefinedObject,
                           fmt::format("role \"{}\" does not exist", s.name));
      if (s.password) RETURN_NOT_OK(cat.PutUser(creds()));
      return std::string("ALTER ROLE");
    case sql::UserStmt::Kind::kDrop:
      if (!cat.HasUser(s.name)) {
        if (s.if_exists) {
          RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                                    fmt::format("role \"{}\" does not exist, skipping", s.name)));
          return std::string("DROP ROLE");
        }
        return Status::Sql(sqlstate::kUndefinedObject,
                           fmt::format("role \"{}\" does not exist", s.name));
      }
      RETURN_NOT_OK(cat.DropUser(s.name));
      return std::string("DROP ROLE");
  }
  return std::string();
}

Result<std::string> Executor::CreateView(sql::CreateViewStmt& s) {
  if (db_.GetTable(s.name).ok()) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", s.name), s.pos);
  }
  if (!s.or_replace && db_.GetView(s.name)) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", s.name), s.pos);
  }
  // The query must bind now; its result columns need distinct names.
  ASSIGN_OR_RETURN(plan::BoundSelect b, plan::BindSelect(*s.query, db_));
  std::set<std::string> names;
  for (const auto& n : b.names) {
    if (!names.insert(n).second)
      return Status::Sql(sqlstate::kDuplicateColumn,
                         fmt::format("column \"{}\" specified more than once", n));
  }
  std::vector<std::string> reads;
  sql::ReferencedRelations(*s.query, &reads);
  for (const auto& r : reads) {
    if (r == s.name)
      return Status::Sql(sqlstate::kInvalidObjectDefinition,
                         fmt::format("infinite recursion detected in view \"{}\"", s.name));
  }
  std::optional<std::string> before = db_.GetView(s.name);
  std::vector<std::string> before_reads;
  if (before) {
    if (auto parsed = sql::Parse(*before);
        parsed.ok() && std::holds_alternative<sql::SelectStmt>((*parsed)[0])) {
      sql::ReferencedRelations(std::get<sql::SelectStmt>((*parsed)[0]), &before_reads);
    }
  }
  RETURN_NOT_OK(db_.CreateView(s.name, s.sql, reads, s.or_replace));
  if (txn_) {  // a rollback restores the previous definition, or removes the view
    txn_undo_.push_back([this, name = s.name, before, before_reads] {
      if (before) {
        (void)db_.CreateView(name, *before, before_reads, true);
      } else {
        (void)db_.DropView(name);
      }
    });
  }
  return std::string("CREATE VIEW");
}

Result<std::string> Executor::DropView(sql::DropTableStmt& s, ResultSink& sink) {
  for (const auto& name : s.names) {
    if (!db_.GetView(name)) {
      if (db_.GetTable(name).ok()) {
        return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is not a view", name));
      }
      if (s.if_exists) {
        RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                                  fmt::format("view \"{}\" does not exist, skipping", name)));
        continue;
      }
      return Status::Sql(sqlstate::kUndefinedTable,
                         fmt::format("view \"{}\" does not exist", name));
    }
    RETURN_NOT_OK(DropDependentViews(name, "view", s.cascade, sink));
    RETURN_NOT_OK(db_.DropView(name));
  }
  return std::string("DROP VIEW");
}

Result<std::string> Executor::DropTable(sql::DropTableStmt& s, ResultSink& sink) {
  if (s.view) return DropView(s, sink);
  if (s.index) return DropIndex(s, sink);
  for (const auto& name : s.names) {
    if (db_.GetView(name)) {
      return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is not a table", name));
    }
    auto t = db_.GetTable(name);
    if (!t.ok()) {
      if (s.if_exists) {
        RETURN_NOT_OK(sink.Notice(sqlstate::kSuccessfulCompletion,
                                  fmt::format("table \"{}\" does not exist, skipping", name)));
        continue;
      }
      return Status::Sql(sqlstate::kUndefinedTable,
                         fmt::format("table \"{}\" does not exist", name));
    }
    RETURN_NOT_OK(DropDependentViews(name, "table", s.cascade, sink));
    ASSIGN_OR_RETURN(auto segs, db_.DropTable(name));
    DropSegments(segs);
  }
  return std::string("DROP TABLE");
}

void Executor::DropSegments(const std::vector<SegmentEntry>& segs) {
  // Segments a node did not confirm stay in the catalog's trash; maintenance retries them.
  for (const auto& seg : segs) {
    auto c = cluster_.registry().Client(seg.node);
    if (c.ok() && RpcDropSegment(**c, seg.id).ok()) (void)cluster_.catalog().ClearTrash(seg.id);
  }
}

Result<std::string> Executor::AddPrimaryKey(sql::AddPrimaryKeyStmt& s,
                                            const std::atomic<bool>* cancel) {
  ASSIGN_OR_RETURN(TableSchema old, db_.GetTable(s.table));
  if (old.id >= kFirstSystemTableId)
    return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is a system view", s.table));
  for (const auto& other : db_.Tables()) {  // every index, also those not ready yet
    if (other.id == old.id && !other.indexes.empty()) {
      return Status::Sql(
          sqlstate::kFeatureNotSupported,
          "ALTER TABLE ADD PRIMARY KEY on a table with secondary indexes is not supported", s.pos);
    }
  }
  if (!old.HasHiddenKey()) {
    return Status::Sql(
        sqlstate::kInvalidTableDefinition,
        fmt::format("multiple primary keys for table \"{}\" are not allowed", s.table), s.pos);
  }
  // The re-keyed table: the same columns without the row id, keyed by the named columns.
  TableSchema t;
  t.name = "__wattdb_rekey_" + old.name;
  int rowid = old.key_columns[0];
  std::vector<int> keep;
  for (int i = 0; i < static_cast<int>(old.columns.size()); i++) {
    if (i == rowid) continue;
    keep.push_back(i);
    t.columns.push_back(old.columns[i]);
  }
  for (const auto& k : s.columns) {
    int idx = t.ColumnIndex(k);
    if (idx < 0 || t.columns[idx].hidden) {
      return Status::Sql(
          sqlstate::kUndefinedColumn,
          fmt::format("column \"{}\" of relation \"{}\" does not exist", k, old.name), s.pos);
    }
    if (std::find(t.key_columns.begin(), t.key_columns.end(), idx) != t.key_columns.end()) {
      return Status::Sql(sqlstate::kDuplicateColumn,
                         fmt::format("column \"{}\" appears twice in primary key constraint", k),
                         s.pos);
    }
    t.key_columns.push_back(idx);
    t.columns[idx].not_null = true;
  }
  if (db_.GetTable(t.name).ok()) {
    // Left over from a re-key that did not finish.
    ASSIGN_OR_RETURN(auto segs, db_.DropTable(t.name));
    DropSegments(segs);
  }
  RETURN_NOT_OK(CreateTableStorage(&t));
  auto abandon = [&](Status st) {
    if (auto segs = db_.DropTable(t.name); segs.ok()) DropSegments(*segs);
    return st;
  };
  // Writers to the old table wait from here until it is replaced (they then fail, as their
  // table is gone), so the copy misses nothing: it reads after every earlier commit.
  auto block = cluster_.placement().BlockWrites(old.id);
  if (!block.ok()) return abandon(block.status());
  cluster_.timestamps().AwaitStable();
  struct Snap {
    Cluster& c;
    Timestamp ts;
    ~Snap() { c.timestamps().Release(ts); }
  } snap{cluster_, cluster_.timestamps().Acquire()};
  // Copy every row under its new key, in bounded batches (the new table is not visible yet).
  std::set<std::string> keys;
  std::vector<RowWrite> batch;
  Status st = ForEachRow(
      *FullScan(old), snap.ts, cancel, [&](const exec::Batch& b, size_t r, exec::ExecContext*) {
        std::vector<Value> row;
        row.reserve(keep.size());
        for (int i : keep) row.push_back(b.Get(i, r));
        auto w = InsertWrite(t, row, &keys);
        if (!w.ok()) {
          return w.status().sqlstate() == sqlstate::kUniqueViolation
                     ? Status::Sql(
                           sqlstate::kUniqueViolation,
                           fmt::format("could not create unique index \"{}_pkey\"", old.name))
                     : w.status();
        }
        batch.push_back(std::move(w).value());
        if (batch.size() >= 10000)
          return cluster_.txns().ApplyWrites(t.id, snap.ts, std::exchange(batch, {}));
        return Status::OK();
      });
  if (st.ok() && !batch.empty()) st = cluster_.txns().ApplyWrites(t.id, snap.ts, batch);
  if (!st.ok())
    return abandon(
        st.sqlstate() == sqlstate::kNotNullViolation
            ? Status::Sql(sqlstate::kNotNullViolation,
                          fmt::format("column of relation \"{}\" contains null values", old.name))
            : st);
  // One catalog write drops the old table and renames the new one into its place.
  ASSIGN_OR_RETURN(auto old_segs, db_.ReplaceTable(old.name, t.name));
  DropSegments(old_segs);
  Log("master")->info("table re-keyed name={} rows={} key=({})", old.name, keys.size(),
                      fmt::join(s.columns, ","));
  return std::string("ALTER TABLE");
}

}  // namespace wattdb::master
