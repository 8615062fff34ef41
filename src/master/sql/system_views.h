// The wattdb_* system views (wattdb_nodes, wattdb_segments, wattdb_partitions, wattdb_replicas,
// wattdb_tables, wattdb_power, wattdb_energy_decisions, wattdb_energy_policy,
// wattdb_statement_energy): their schemas, registered in the catalog at start, and their
// rows, read from the master's live state when a statement scans one.
#pragma once

#include <vector>

#include "common/status.h"
#include "common/value.h"
#include "master/catalog/catalog.h"
#include "master/cluster/cluster.h"
#include "master/energy/energy_service.h"

namespace wattdb::master {

// Registers the system views, and the pg_catalog tables, in the catalog.
void RegisterSystemViews(Catalog& catalog);

// The rows of system view `view` (not a pg_catalog table), in the column order its schema
// gives. Fails with Internal for an id that names no system view.
Result<std::vector<std::vector<Value>>> SystemViewRows(TableId view, Cluster& cluster,
                                                       EnergyService& energy);

}  // namespace wattdb::master
