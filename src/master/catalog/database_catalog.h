// DatabaseCatalog: the catalog as one database sees it. Databases are namespaces: table and
// view names of database D live in the shared catalog as "D/name" (the default database,
// kDefaultDatabase, uses bare names), so sessions of different databases never see each
// other's relations. The system views (wattdb_*) are shared by all databases.
// Thread-safe as the Catalog it wraps; names going in and out are unqualified.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "master/catalog/catalog.h"

namespace wattdb::master {

constexpr char kDefaultDatabase[] = "wattdb";

class DatabaseCatalog : public plan::CatalogReader {
 public:
  DatabaseCatalog(Catalog& catalog, std::string database);

  const std::string& database() const { return db_; }
  Catalog& shared() { return catalog_; }
  const Catalog& shared() const { return catalog_; }

  // A table with the secondary indexes readers at the read snapshot may use (see
  // IndexDef::ready_ts); Tables() lists every index.
  Result<TableSchema> GetTable(const std::string& name) const override;
  void set_read_snapshot(Timestamp ts) { read_snapshot_ = ts; }
  std::optional<std::string> GetView(const std::string& name) const override;
  double EstimateRows(const TableSchema& table) const override {
    return catalog_.EstimateRows(table);
  }
  // The running statement's time (set at its start), else the current time.
  int64_t StatementTime() const override {
    return statement_time_ ? *statement_time_ : plan::CatalogReader::StatementTime();
  }
  void set_statement_time(std::optional<int64_t> t) { statement_time_ = t; }
  // The tables of this database.
  std::vector<TableSchema> Tables() const;
  // The views of this database: name -> defining query.
  std::map<std::string, std::string> Views() const;
  Result<SegmentEntry> CreateTable(TableSchema* schema, NodeId node);
  Result<std::vector<SegmentEntry>> DropTable(const std::string& name);
  Result<std::vector<SegmentEntry>> ReplaceTable(const std::string& name,
                                                 const std::string& staged);
  // `schema` as GetTable returned it (unqualified name), changed.
  Status UpdateTable(TableSchema schema);
  Status CreateView(const std::string& name, const std::string& sql,
                    const std::vector<std::string>& reads, bool replace);
  Status DropView(const std::string& name);
  std::vector<std::string> DependentViews(const std::string& name) const;

  // Catalog-wide name of a relation of this database.
  std::string Qualify(const std::string& name) const;

 private:
  std::string Unqualify(const std::string& name) const;

  Catalog& catalog_;  // borrowed; outlives this view
  // Tables as the catalog held them at a schema version (GetTable copies one while the
  // version holds, instead of looking the name up again).
  struct Known {
    uint64_t version = 0;
    TableSchema table;
  };
  mutable Mutex known_mu_;
  mutable std::unordered_map<std::string, Known> known_ GUARDED_BY(known_mu_);
  Timestamp read_snapshot_ = ~0ULL;
  std::optional<int64_t> statement_time_;
  std::string db_;
  std::string prefix_;  // "" for the default database, else "<db>/"
};

}  // namespace wattdb::master
