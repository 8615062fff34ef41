#include "master/sql/scan_provider.h"

#include "common/codec.h"
#include "common/logging.h"
#include "master/cluster/index_scan.h"
#include "master/sql/partition_source.h"
#include "query/exec/row_decode.h"
#include "rpc/exchange.h"
#include "rpc/gather.h"

namespace wattdb::master {

namespace {

constexpr TableId kNodesView = kFirstSystemTableId;
constexpr TableId kSegmentsView = kFirstSystemTableId + 1;
constexpr TableId kPartitionsView = kFirstSystemTableId + 2;
constexpr TableId kTablesView = kFirstSystemTableId + 3;
constexpr TableId kPowerView = kFirstSystemTableId + 4;
constexpr TableId kStatementEnergyView = kFirstSystemTableId + 5;
constexpr TableId kEnergyDecisionsView = kFirstSystemTableId + 6;
constexpr TableId kEnergyPolicyView = kFirstSystemTableId + 7;

TableSchema View(TableId id, const char* name,
                 const std::vector<std::pair<const char*, TypeId>>& cols) {
  TableSchema t;
  t.id = id;
  t.name = name;
  for (auto& [n, ty] : cols) t.columns.push_back({n, SqlType{ty}});
  t.key_columns = {0};
  return t;
}

// Streams rows already materialized in memory (system views).
class VectorSource : public exec::RowSource {
 public:
  explicit VectorSource(std::vector<std::vector<Value>> rows) : rows_(std::move(rows)) {}
  Result<bool> Next(exec::Batch& out) override {
    while (next_ < rows_.size() && out.rows < exec::kBatchRows)
      out.AppendRow(std::move(rows_[next_++]));
    return out.rows > 0;
  }

 private:
  std::vector<std::vector<Value>> rows_;
  size_t next_ = 0;
};

// The rows of a system view whose key (first column) lies in the scan's range: the planner
// narrows scans and index joins by key as for tables.
std::vector<std::vector<Value>> InKeyRange(std::vector<std::vector<Value>> rows,
                                           const plan::PlanNode& scan) {
  if (scan.lo.empty() && scan.hi.empty()) return rows;
  std::vector<std::vector<Value>> out;
  for (auto& r : rows) {
    if (r.empty() || r[0].is_null()) continue;
    std::string k;
    EncodeKeyValue(r[0], &k);
    if (k >= scan.lo && (scan.hi.empty() || k < scan.hi)) out.push_back(std::move(r));
  }
  return out;
}

class RemoteSource : public exec::RowSource {
 public:
  RemoteSource(Cluster& c, TableId table, std::string lo, std::string hi, Timestamp ts,
               uint64_t txn)
      : cluster_(c),
        table_(table),
        cursor_(std::move(lo)),
        hi_(std::move(hi)),
        ts_(ts),
        txn_(txn) {}

  Result<bool> Next(exec::Batch& out) override {
    int retries = 0;
    while (out.rows == 0) {
      if (!stream_) {
        if (done_ || (!hi_.empty() && cursor_ >= hi_)) return false;
        Status st = OpenNext();
        if (done_) return false;
        if (!st.ok()) {
          RETURN_NOT_OK(ScanRetryBackoff(st, &retries));
          continue;
        }
      }
      bool last = false;
      Status st = stream_->Next(&keys_, &rows_, &last);
      if (!st.ok()) {
        stream_.reset();
        RETURN_NOT_OK(ScanRetryBackoff(st, &retries));
        continue;
      }
      for (size_t i = 0; i < rows_.size(); i++)
        RETURN_NOT_OK(exec::AppendEncodedRow(rows_[i], &out));
      // Keys are prefix-free, so key + "\0" is the smallest key after it.
      if (!keys_.empty()) cursor_ = keys_.back() + std::string(1, '\0');
      if (last) {
        stream_.reset();
        if (seg_hi_.empty() || (!hi_.empty() && seg_hi_ >= hi_)) {
          done_ = true;
        } else {
          cursor_ = std::max(cursor_, seg_hi_);
        }
      }
    }
    return true;
  }

 private:
  // Opens a stream on the segment holding `cursor_`.
  Status OpenNext() {
    auto segs = cluster_.catalog().SegmentsOverlapping(table_, cursor_, hi_);
    if (segs.empty()) {
      done_ = true;
      return Status::OK();
    }
    const SegmentEntry& s = segs.front();
    auto [lo, hi] = rpc::WithinSegment(cursor_, hi_, s.lo, s.hi);
    ASSIGN_OR_RETURN(auto client, cluster_.registry().Client(s.node));
    ASSIGN_OR_RETURN(stream_, ScanStream::Open(*client, s.id, lo, hi, ts_, exec::kBatchRows, txn_));
    client_ = client;
    seg_hi_ = s.hi;
    return Status::OK();
  }

  Cluster& cluster_;
  TableId table_;
  std::string cursor_;  // next key to read (inclusive)
  std::string hi_;
  Timestamp ts_;
  uint64_t txn_;
  bool done_ = false;
  std::shared_ptr<NodeClient> client_;  // keeps the stream's client alive
  std::unique_ptr<ScanStream> stream_;
  std::string seg_hi_;
  std::vector<std::string> keys_, rows_;
};

}  // namespace

rpc::ExchangeOptions MasterScanProvider::ExchangeOptions(const exec::ExecContext& ctx) const {
  rpc::ExchangeOptions o;
  o.read_ts = read_ts_;
  o.txn = txn_;
  o.work_mem = ctx.work_mem;
  o.prefetch = ctx.prefetch;
  o.cancel = ctx.cancelled;
  o.stats = ctx.remote_stats;
  o.params = ctx.params;
  o.range = ctx.exchange_range;
  return o;
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenExchange(
    const plan::PlanNode& exchange, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto x, rpc::ExchangeSource::Open(parts_, exchange, ExchangeOptions(ctx)));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenGather(
    const plan::PlanNode& gather, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto g, rpc::GatherSource::Open(parts_, gather, ExchangeOptions(ctx), ctx));
  return std::unique_ptr<exec::RowSource>(std::move(g));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenOffload(
    const plan::PlanNode& offload, const exec::ExecContext& ctx) {
  OffloadSource::Options o;
  o.read_ts = read_ts_;
  o.txn = txn_;
  o.work_mem = ctx.work_mem;
  o.setting = offload_;
  o.cancel = ctx.cancelled;
  o.stats = ctx.remote_stats;
  ASSIGN_OR_RETURN(auto x, OffloadSource::Open(cluster_, offload, o));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenPartition(
    const plan::PlanNode& partition, const exec::ExecContext& ctx) {
  ASSIGN_OR_RETURN(auto x, PartitionSource::Open(cluster_, partition, {read_ts_, txn_, &ctx}));
  return std::unique_ptr<exec::RowSource>(std::move(x));
}

void RegisterSystemViews(Catalog& catalog) {
  RegisterPgCatalog(catalog);
  catalog.AddSystemView(View(kNodesView, "wattdb_nodes",
                             {{"node_id", TypeId::kInt32},
                              {"host", TypeId::kText},
                              {"port", TypeId::kInt32},
                              {"state", TypeId::kText},
                              {"admin_state", TypeId::kText},
                              {"pid", TypeId::kInt32},
                              {"segments", TypeId::kInt64},
                              {"cpu_percent", TypeId::kDouble},
                              {"host_cpu_percent", TypeId::kDouble},
                              {"rss_bytes", TypeId::kInt64},
                              {"mem_available_bytes", TypeId::kInt64},
                              {"disk_bytes", TypeId::kInt64},
                              {"disk_read_bps", TypeId::kDouble},
                              {"disk_write_bps", TypeId::kDouble},
                              {"net_rx_bps", TypeId::kDouble},
                              {"net_tx_bps", TypeId::kDouble},
                              {"heartbeats", TypeId::kInt64},
                              {"last_heartbeat_ms", TypeId::kInt64},
                              {"lock_waits", TypeId::kInt32},
                              {"power_state", TypeId::kText},
                              {"power_driver", TypeId::kText},
                              {"power_error", TypeId::kText},
                              {"last_power_action", TypeId::kText},
                              {"last_power_result", TypeId::kText},
                              {"last_power_at", TypeId::kTimestamp},
                              {"last_power_ms", TypeId::kDouble},
                              {"unconfirmed_commits", TypeId::kInt64}}));
  catalog.AddSystemView(View(kSegmentsView, "wattdb_segments",
                             {{"segment_id", TypeId::kInt64},
                              {"table_name", TypeId::kText},
                              {"node_id", TypeId::kInt32},
                              {"lo", TypeId::kText},
                              {"hi", TypeId::kText},
                              {"bytes", TypeId::kInt64},
                              {"rows_read", TypeId::kInt64},
                              {"rows_written", TypeId::kInt64},
                              {"collections", TypeId::kInt64},
                              {"cached_reads", TypeId::kInt64}}));
  catalog.AddSystemView(View(kTablesView, "wattdb_tables",
                             {{"table_name", TypeId::kText},
                              {"columns", TypeId::kText},
                              {"primary_key", TypeId::kText},
                              {"segments", TypeId::kInt64}}));
  catalog.AddSystemView(View(kPowerView, "wattdb_power",
                             {{"component", TypeId::kText},
                              {"node_id", TypeId::kInt32},
                              {"state", TypeId::kText},
                              {"meter", TypeId::kText},
                              {"watts", TypeId::kDouble},
                              {"joules", TypeId::kDouble},
                              {"meter_ok", TypeId::kBool},
                              {"meter_error", TypeId::kText},
                              {"readings", TypeId::kInt64},
                              {"gaps", TypeId::kInt64},
                              {"gap_seconds", TypeId::kDouble},
                              {"covered_seconds", TypeId::kDouble}}));
  catalog.AddSystemView(View(kEnergyDecisionsView, "wattdb_energy_decisions",
                             {{"seq", TypeId::kInt64},
                              {"decided_at", TypeId::kTimestamp},
                              {"decision", TypeId::kText},
                              {"reason", TypeId::kText},
                              {"mode", TypeId::kText},
                              {"active_nodes", TypeId::kInt32},
                              {"utilization", TypeId::kDouble},
                              {"window_utilization", TypeId::kDouble},
                              {"forecast_utilization", TypeId::kDouble},
                              {"scale_out_cpu", TypeId::kDouble},
                              {"scale_in_cpu", TypeId::kDouble},
                              {"predicted_idle_s", TypeId::kDouble},
                              {"break_even_s", TypeId::kDouble},
                              {"actions", TypeId::kText},
                              {"duration_ms", TypeId::kDouble},
                              {"outcome", TypeId::kText}}));
  catalog.AddSystemView(
      View(kEnergyPolicyView, "wattdb_energy_policy",
           {{"key", TypeId::kText}, {"value", TypeId::kText}, {"source", TypeId::kText}}));
  catalog.AddSystemView(View(kStatementEnergyView, "wattdb_statement_energy",
                             {{"started_at", TypeId::kTimestamp},
                              {"seconds", TypeId::kDouble},
                              {"joules", TypeId::kDouble},
                              {"master_joules", TypeId::kDouble},
                              {"node_joules", TypeId::kDouble},
                              {"infra_joules", TypeId::kDouble},
                              {"cpu_ms", TypeId::kDouble},
                              {"unmetered", TypeId::kInt32},
                              {"statement", TypeId::kText}}));
  catalog.AddSystemView(View(kPartitionsView, "wattdb_partitions",
                             {{"table_name", TypeId::kText},
                              {"node_id", TypeId::kInt32},
                              {"segments", TypeId::kInt64},
                              {"bytes", TypeId::kInt64}}));
}

Result<std::unique_ptr<exec::RowSource>> MasterScanProvider::OpenScan(const plan::PlanNode& scan) {
  if (scan.table < kFirstSystemTableId && scan.index) {
    return std::unique_ptr<exec::RowSource>(
        new IndexScanSource(cluster_.catalog(), cluster_.registry(), scan.table, scan.index,
                            scan.lo, scan.hi, read_ts_, scan.types.size(), txn_));
  }
  if (scan.table < kFirstSystemTableId) {
    return std::unique_ptr<exec::RowSource>(
        new RemoteSource(cluster_, scan.table, scan.lo, scan.hi, read_ts_, txn_));
  }
  if (IsPgCatalogTable(scan.table)) {
    ASSIGN_OR_RETURN(auto rows, Pg().Rows(scan.table));
    return std::unique_ptr<exec::RowSource>(new VectorSource(InKeyRange(std::move(rows), scan)));
  }
  Catalog& cat = cluster_.catalog();
  auto nodes = cluster_.registry().Snapshot();
  std::map<SegmentId, SegmentTelemetry> seg_tel;
  for (const auto& n : nodes) {
    for (const auto& s : n.segments) seg_tel[s.id] = s;
  }
  std::map<TableId, TableSchema> tables;
  for (auto& t : cat.Tables()) tables[t.id] = t;
  auto segs = cat.AllSegments();
  std::vector<std::vector<Value>> rows;
  if (scan.table == kNodesView) {
    int64_t now = Clock::Real().NowMicros();
    std::map<NodeId, NodeInfo> live;
    for (auto& n : nodes) live[n.id] = n;
    std::map<NodeId, NodePowerInfo> power;
    for (auto& p : cluster_.power().Snapshot()) power[p.id] = p;
    std::map<NodeId, size_t> unconfirmed = cluster_.txns().UnconfirmedCommits();
    for (const auto& nc : cluster_.config().nodes) {
      const NodeInfo& n = live[nc.id];
      const NodePowerInfo& p = power[nc.id];
      int64_t count = 0;
      for (const auto& s : segs) count += s.node == nc.id;
      bool seen = n.id != 0;
      auto text_or_null = [](const std::string& t) { return t.empty() ? Value() : Value::Text(t); };
      rows.push_back(
          {Value::Int32(nc.id),
           Value::Text(seen ? n.host : nc.host),
           Value::Int32(seen ? n.port : nc.port),
           Value::Text(n.up ? "up" : "down"),
           Value::Text(NodeAdminStateName(cat.GetNodeState(nc.id))),
           n.up ? Value::Int32(n.pid) : Value(),
           Value::Int64(count),
           Value::Double(n.cpu_percent),
           Value::Double(n.host_cpu_percent),
           Value::Int64(static_cast<int64_t>(n.rss_bytes)),
           Value::Int64(static_cast<int64_t>(n.mem_available_bytes)),
           Value::Int64(static_cast<int64_t>(n.disk_bytes)),
           Value::Double(n.disk_read_bps),
           Value::Double(n.disk_write_bps),
           Value::Double(n.net_rx_bps),
           Value::Double(n.net_tx_bps),
           Value::Int64(static_cast<int64_t>(n.heartbeats)),
           n.last_heartbeat_us ? Value::Int64((now - n.last_heartbeat_us) / 1000) : Value(),
           n.up ? Value::Int32(static_cast<int32_t>(n.lock_waits.size())) : Value(),
           Value::Text(power::PowerStateName(p.state)),
           Value::Text(p.driver),
           text_or_null(p.state_error),
           text_or_null(p.last_action),
           text_or_null(p.last_result),
           p.last_action_us ? Value::Timestamp(p.last_action_us - kPgEpochUnixMicros) : Value(),
           p.last_action_us ? Value::Double(p.last_action_ms) : Value(),
           Value::Int64(static_cast<int64_t>(unconfirmed[nc.id]))});
    }
  } else if (scan.table == kSegmentsView) {
    for (const auto& s : segs) {
      auto t = tables.find(s.table);
      std::vector<SqlType> kt;
      std::string name = "?";
      if (t != tables.end()) {
        name = t->second.name;
        for (int k : t->second.key_columns) kt.push_back(t->second.columns[k].type);
      }
      const SegmentTelemetry* tel = seg_tel.count(s.id) ? &seg_tel[s.id] : nullptr;
      rows.push_back({Value::Int64(static_cast<int64_t>(s.id)), Value::Text(name),
                      Value::Int32(s.node), Value::Text(KeyToString(s.lo, kt, false)),
                      Value::Text(KeyToString(s.hi, kt, true)),
                      tel ? Value::Int64(static_cast<int64_t>(tel->bytes)) : Value(),
                      tel ? Value::Int64(static_cast<int64_t>(tel->rows_read)) : Value(),
                      tel ? Value::Int64(static_cast<int64_t>(tel->rows_written)) : Value(),
                      tel ? Value::Int64(static_cast<int64_t>(tel->collections)) : Value(),
                      tel ? Value::Int64(static_cast<int64_t>(tel->cached_reads)) : Value()});
    }
  } else if (scan.table == kPartitionsView) {
    std::map<std::pair<std::string, NodeId>, std::pair<int64_t, int64_t>> parts;
    for (const auto& s : segs) {
      auto t = tables.find(s.table);
      auto& p = parts[{t == tables.end() ? "?" : t->second.name, s.node}];
      p.first++;
      if (seg_tel.count(s.id)) p.second += static_cast<int64_t>(seg_tel[s.id].bytes);
    }
    for (auto& [k, v] : parts) {
      rows.push_back({Value::Text(k.first), Value::Int32(k.second), Value::Int64(v.first),
                      Value::Int64(v.second)});
    }
  } else if (scan.table == kPowerView) {
    for (const auto& p : cluster_.monitor().Snapshot()) {
      rows.push_back({Value::Text(p.component), p.node_id ? Value::Int32(p.node_id) : Value(),
                      Value::Text(p.state), Value::Text(p.meter), Value::Double(p.watts),
                      Value::Double(p.joules), Value::Bool(p.meter_ok),
                      p.meter_error.empty() ? Value() : Value::Text(p.meter_error),
                      Value::Int64(static_cast<int64_t>(p.readings)),
                      Value::Int64(static_cast<int64_t>(p.gaps)), Value::Double(p.gap_seconds),
                      Value::Double(p.covered_seconds)});
    }
  } else if (scan.table == kEnergyDecisionsView) {
    int64_t seq = 0;
    for (const auto& d : energy_.decisions().Snapshot()) {
      auto text = [](const std::string& t) { return t.empty() ? Value() : Value::Text(t); };
      rows.push_back({Value::Int64(++seq), Value::Timestamp(d.time_us - kPgEpochUnixMicros),
                      Value::Text(d.decision), text(d.reason), text(d.mode),
                      Value::Int32(d.active_nodes), Value::Double(d.utilization),
                      Value::Double(d.window_utilization), Value::Double(d.forecast_utilization),
                      Value::Double(d.scale_out_cpu), Value::Double(d.scale_in_cpu),
                      d.break_even_s > 0 ? Value::Double(d.predicted_idle_s) : Value(),
                      d.break_even_s > 0 ? Value::Double(d.break_even_s) : Value(), text(d.actions),
                      Value::Double(d.duration_ms), text(d.outcome)});
    }
  } else if (scan.table == kEnergyPolicyView) {
    EnergyPolicy p = energy_.policy();
    std::string pinned;
    for (NodeId n : p.pinned) pinned += (pinned.empty() ? "" : ", ") + std::to_string(n);
    std::vector<std::pair<std::string, std::string>> kv = {
        {"mode", PolicyModeName(p.mode)},
        {"scale_out_cpu", fmt::format("{}", p.scale_out_cpu)},
        {"scale_in_cpu", fmt::format("{}", p.scale_in_cpu)},
        {"hysteresis", fmt::format("{}", p.hysteresis)},
        {"window_s", fmt::format("{}", p.window_s)},
        {"cooldown_s", fmt::format("{}", p.cooldown_s)},
        {"min_active_nodes", std::to_string(p.min_active_nodes)},
        {"max_active_nodes", std::to_string(p.max_active_nodes)},
        {"pinned", "[" + pinned + "]"},
        {"standby", p.standby},
        {"migration_mb_s", fmt::format("{}", p.migration_mb_s)},
        {"forecaster", p.forecaster},
        {"alpha", fmt::format("{}", p.alpha)},
        {"beta", fmt::format("{}", p.beta)},
        {"horizon_s", fmt::format("{}", p.horizon_s)},
        {"down_s", fmt::format("{}", p.down_s)},
        {"latency_target_ms", fmt::format("{}", p.latency_target_ms)}};
    for (auto& [k, v] : kv) rows.push_back({Value::Text(k), Value::Text(v), Value::Text(p.source)});
  } else if (scan.table == kStatementEnergyView) {
    for (const auto& e : cluster_.energy_log().Snapshot()) {
      rows.push_back({Value::Timestamp(e.started_us - kPgEpochUnixMicros), Value::Double(e.seconds),
                      Value::Double(e.joules), Value::Double(e.master_joules),
                      Value::Double(e.node_joules), Value::Double(e.infra_joules),
                      Value::Double(e.cpu_ms), Value::Int32(e.unmetered),
                      Value::Text(e.statement)});
    }
  } else if (scan.table == kTablesView) {
    for (const auto& [id, t] : tables) {
      std::string cols, key;
      for (const auto& col : t.columns) {
        if (col.hidden) continue;
        cols += (cols.empty() ? "" : ", ") + col.name + " " + col.type.ToString() +
                (col.not_null ? " not null" : "");
      }
      for (int k : t.key_columns) {
        if (!t.columns[k].hidden) key += (key.empty() ? "" : ", ") + t.columns[k].name;
      }
      int64_t n = 0;
      for (const auto& s : segs) n += s.table == id;
      rows.push_back({Value::Text(t.name), Value::Text(cols),
                      key.empty() ? Value() : Value::Text(key), Value::Int64(n)});
    }
  } else {
    return Status::Internal("unknown system view");
  }
  return std::unique_ptr<exec::RowSource>(new VectorSource(InKeyRange(std::move(rows), scan)));
}

PgCatalog& MasterScanProvider::Pg() {
  if (!pg_) {
    if (!db_) default_db_ = std::make_unique<DatabaseCatalog>(cluster_.catalog(), kDefaultDatabase);
    pg_ = std::make_unique<PgCatalog>(db_ ? *db_ : *default_db_, cluster_);
  }
  return *pg_;
}

Result<Value> MasterScanProvider::CallCatalog(const std::string& name,
                                              const std::vector<Value>& args) {
  return Pg().Call(name, args);
}

}  // namespace wattdb::master
