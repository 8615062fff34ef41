// PostgreSQL's system catalogs (pg_catalog.pg_class, pg_attribute, pg_index, ...) as read-only
// views computed from WattDB's catalog, and the catalog functions clients call with them
// (format_type, pg_get_indexdef, regclass output, ...). Enough for psql's \d family and for
// drivers' introspection; catalogs WattDB has no counterpart for (policies, publications,
// inheritance, extended statistics) exist and are empty.
//
// Object ids are derived, not stored: a table with id T has oid 100000 + 1000 T, its
// secondary index i has that + i, its primary key index that + 999; views and other objects
// get fixed or positional oids. Namespaces: pg_catalog (11) and public (2200).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "master/catalog/database_catalog.h"
#include "master/cluster/cluster.h"

namespace wattdb::master {

// Registers the pg_catalog views in the catalog (system view ids from kFirstPgCatalogId).
void RegisterPgCatalog(Catalog& catalog);
// True if `name` is one of those views (they are shared by every database).
bool IsPgCatalogView(const std::string& name);
// True if `table` is the id of one of them.
bool IsPgCatalogTable(TableId table);

struct PgRelations;
using PgRelRows = std::vector<std::vector<Value>>;

// The pg_catalog views and catalog functions as a session of database `db` sees them. The
// relations are read from the catalog once, on first use (one per statement).
class PgCatalog {
 public:
  PgCatalog(const DatabaseCatalog& db, Cluster& cluster);
  ~PgCatalog();
  // The rows of pg_catalog view `table`.
  Result<PgRelRows> Rows(TableId table);
  // Catalog function `name` (see plan::CatalogFunctionType).
  Result<Value> Call(const std::string& name, const std::vector<Value>& args);

 private:
  const PgRelations& Relations();
  // The rows of one catalog each (pg_index and pg_constraint share theirs).
  PgRelRows NamespaceRows();
  PgRelRows ClassRows();
  PgRelRows AttributeRows();
  PgRelRows AttrdefRows();
  PgRelRows TypeRows();
  PgRelRows IndexOrConstraintRows(const std::string& name);
  PgRelRows AmRows();
  PgRelRows CollationRows();
  PgRelRows RolesRows();
  PgRelRows DatabaseRows();
  PgRelRows TablespaceRows();
  PgRelRows StatActivityRows();
  // Stored bytes of each table, from the nodes' latest telemetry.
  std::map<TableId, uint64_t> TableBytes() const;

  const DatabaseCatalog& db_;  // borrowed; outlives this
  Cluster& cluster_;
  std::unique_ptr<PgRelations> rel_;
};

}  // namespace wattdb::master
