// The pg_catalog relations WattDB shows (PgCatalog, pg_catalog.h) and their columns, in
// PostgreSQL 15's order: the relation at index i has table id kFirstPgCatalogId + i.
#pragma once

#include <utility>
#include <vector>

#include "common/schema.h"

namespace wattdb::master::pgcat {

struct ViewDef {
  const char* name;
  std::vector<std::pair<const char*, SqlType>> cols;
};

const std::vector<ViewDef>& Views();

}  // namespace wattdb::master::pgcat
