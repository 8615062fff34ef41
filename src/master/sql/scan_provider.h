// MasterScanProvider: turns Scan plan nodes into row streams. User tables stream from the
// nodes owning their segments (pruned to the scan's key range); system views
// (wattdb_nodes, wattdb_segments, wattdb_partitions) come from the master's own state.
//
// A remote scan remembers the last key it returned. When a segment turns out to have moved
// (NotFound) or split (Stale), it re-reads the partition map and resumes after that key, so
// a scan running across a move or split returns every row exactly once.
#pragma once

#include "common/schema.h"
#include "master/catalog/database_catalog.h"
#include "master/cluster/cluster.h"
#include "master/energy/energy_service.h"
#include "master/sql/offload.h"
#include "master/sql/part_map.h"
#include "master/sql/pg_catalog.h"
#include "query/exec/operator.h"

namespace wattdb::master {

class MasterScanProvider : public exec::ScanProvider {
 public:
  // `txn` nonzero: scans also see that transaction's own pending writes. `db`: the session's
  // database, whose relations pg_catalog shows (default database if null).
  MasterScanProvider(Cluster& cluster, EnergyService& energy, Timestamp read_ts, uint64_t txn = 0,
                     const DatabaseCatalog* db = nullptr)
      : cluster_(cluster),
        energy_(energy),
        parts_(cluster),
        read_ts_(read_ts),
        txn_(txn),
        db_(db) {}
  Result<std::unique_ptr<exec::RowSource>> OpenScan(const plan::PlanNode& scan) override;
  // Runs the fragment on the nodes (rpc/exchange.h).
  Result<std::unique_ptr<exec::RowSource>> OpenExchange(const plan::PlanNode& exchange,
                                                        const exec::ExecContext& ctx) override;
  // Runs the parts of a gathered subtree on this process's threads (rpc/gather.h).
  Result<std::unique_ptr<exec::RowSource>> OpenGather(const plan::PlanNode& gather,
                                                      const exec::ExecContext& ctx) override;
  // Runs the parts of a partitioned join where their segments are (master/sql/partition_source.h).
  Result<std::unique_ptr<exec::RowSource>> OpenPartition(const plan::PlanNode& partition,
                                                         const exec::ExecContext& ctx) override;
  // Runs the subtree on a helper node, if one is chosen (master/sql/offload.h).
  Result<std::unique_ptr<exec::RowSource>> OpenOffload(const plan::PlanNode& offload,
                                                       const exec::ExecContext& ctx) override;
  void set_offload(const OffloadSetting& s) { offload_ = s; }
  // Exchanges may read live followers (wattdb_follower_reads; ignored inside a transaction
  // that writes: followers hold no pending writes).
  void set_follower_reads(bool on) { follower_reads_ = on; }
  Result<Value> CallCatalog(const std::string& name, const std::vector<Value>& args) override;

 private:
  Cluster& cluster_;       // borrowed; outlives the provider
  EnergyService& energy_;  // borrowed; outlives the provider
  ClusterPartMap parts_;
  Timestamp read_ts_;
  uint64_t txn_;
  OffloadSetting offload_;
  bool follower_reads_ = false;
  const DatabaseCatalog* db_;  // borrowed; may be null
  PgCatalog& Pg();  // the pg_catalog answers for db_ (or the default database), made once
  rpc::ExchangeOptions ExchangeOptions(const exec::ExecContext& ctx) const;  // the statement's
  std::unique_ptr<DatabaseCatalog> default_db_;
  std::unique_ptr<PgCatalog> pg_;
};

}  // namespace wattdb::master
