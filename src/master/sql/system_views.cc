#include "master/sql/system_views.h"

#include <map>
#include <string>

#include "common/clock.h"
#include "common/codec.h"
#include "master/sql/pg_catalog.h"

namespace wattdb::master {

namespace {

using Rows = std::vector<std::vector<Value>>;

constexpr TableId kNodesView = kFirstSystemTableId;
constexpr TableId kSegmentsView = kFirstSystemTableId + 1;
constexpr TableId kPartitionsView = kFirstSystemTableId + 2;
constexpr TableId kTablesView = kFirstSystemTableId + 3;
constexpr TableId kPowerView = kFirstSystemTableId + 4;
constexpr TableId kStatementEnergyView = kFirstSystemTableId + 5;
constexpr TableId kEnergyDecisionsView = kFirstSystemTableId + 6;
constexpr TableId kEnergyPolicyView = kFirstSystemTableId + 7;
constexpr TableId kReplicasView = kFirstSystemTableId + 8;

TableSchema View(TableId id, const char* name,
                 const std::vector<std::pair<const char*, TypeId>>& cols) {
  TableSchema t;
  t.id = id;
  t.name = name;
  for (auto& [n, ty] : cols) t.columns.push_back({n, SqlType{ty}});
  t.key_columns = {0};
  return t;
}

Value TextOrNull(const std::string& t) { return t.empty() ? Value() : Value::Text(t); }

std::map<SegmentId, SegmentTelemetry> SegmentTelemetryById(const std::vector<NodeInfo>& nodes) {
  std::map<SegmentId, SegmentTelemetry> seg_tel;
  for (const auto& n : nodes) {
    for (const auto& s : n.segments) seg_tel[s.id] = s;
  }
  return seg_tel;
}

std::map<TableId, TableSchema> TablesById(Catalog& cat) {
  std::map<TableId, TableSchema> tables;
  for (auto& t : cat.Tables()) tables[t.id] = t;
  return tables;
}

// One row per configured node: its telemetry, admin and power state.
Rows NodesRows(Cluster& cluster) {
  Catalog& cat = cluster.catalog();
  auto segs = cat.AllSegments();
  int64_t now = Clock::Real().NowMicros();
  std::map<NodeId, NodeInfo> live;
  for (auto& n : cluster.registry().Snapshot()) live[n.id] = n;
  std::map<NodeId, NodePowerInfo> power;
  for (auto& p : cluster.power().Snapshot()) power[p.id] = p;
  std::map<NodeId, size_t> unconfirmed = cluster.txns().UnconfirmedCommits();
  Rows rows;
  for (const auto& nc : cluster.config().nodes) {
    const NodeInfo& n = live[nc.id];
    const NodePowerInfo& p = power[nc.id];
    int64_t count = 0;
    for (const auto& s : segs) count += s.node == nc.id;
    bool seen = n.id != 0;
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
         TextOrNull(p.state_error),
         TextOrNull(p.last_action),
         TextOrNull(p.last_result),
         p.last_action_us ? Value::Timestamp(p.last_action_us - kPgEpochUnixMicros) : Value(),
         p.last_action_us ? Value::Double(p.last_action_ms) : Value(),
         Value::Int64(static_cast<int64_t>(unconfirmed[nc.id]))});
  }
  return rows;
}

// One row per segment: its table, owner, key range and telemetry (NULL until reported).
Rows SegmentsRows(Cluster& cluster) {
  auto seg_tel = SegmentTelemetryById(cluster.registry().Snapshot());
  auto tables = TablesById(cluster.catalog());
  Rows rows;
  for (const auto& s : cluster.catalog().AllSegments()) {
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
  return rows;
}

// One row per (table, node): how many segments and bytes of the table the node holds.
Rows PartitionsRows(Cluster& cluster) {
  auto seg_tel = SegmentTelemetryById(cluster.registry().Snapshot());
  auto tables = TablesById(cluster.catalog());
  std::map<std::pair<std::string, NodeId>, std::pair<int64_t, int64_t>> parts;
  for (const auto& s : cluster.catalog().AllSegments()) {
    auto t = tables.find(s.table);
    auto& p = parts[{t == tables.end() ? "?" : t->second.name, s.node}];
    p.first++;
    if (seg_tel.count(s.id)) p.second += static_cast<int64_t>(seg_tel[s.id].bytes);
  }
  Rows rows;
  for (auto& [k, v] : parts) {
    rows.push_back({Value::Text(k.first), Value::Int32(k.second), Value::Int64(v.first),
                    Value::Int64(v.second)});
  }
  return rows;
}

// One row per replica of each segment: the leader first, then the followers.
Rows ReplicasRows(Cluster& cluster) {
  auto tables = TablesById(cluster.catalog());
  std::map<NodeId, bool> up;
  std::map<std::pair<SegmentId, NodeId>, SegmentTelemetry> at;  // as last heard
  for (const auto& n : cluster.registry().Snapshot()) {
    up[n.id] = n.up;
    for (const auto& s : n.segments) at[{s.id, n.id}] = s;
  }
  std::map<SegmentId, NodeId> learners = cluster.placement().Learners();
  auto state = [&](NodeId n) {
    NodeAdminState admin = cluster.catalog().GetNodeState(n);
    if (admin == NodeAdminState::kSuspended || admin == NodeAdminState::kOff) return "asleep";
    return up[n] ? "live" : "lost";
  };
  Rows rows;
  for (const auto& s : cluster.catalog().AllSegments()) {
    auto t = tables.find(s.table);
    Value name = Value::Text(t == tables.end() ? "?" : t->second.name);
    auto lead = at.find({s.id, s.node});
    // rows_read: the rows read on that copy since its node started (follower reads).
    auto row = [&](NodeId n, const char* role, const char* st, Value ts, Value records,
                   Value bytes) {
      auto it = at.find({s.id, n});
      rows.push_back(
          {Value::Int64(static_cast<int64_t>(s.id)), name, Value::Int32(n), Value::Text(role),
           Value::Text(st ? st : state(n)), Value::Int64(static_cast<int64_t>(s.epoch)),
           std::move(ts), std::move(records), std::move(bytes),
           it == at.end() ? Value() : Value::Int64(static_cast<int64_t>(it->second.rows_read))});
    };
    auto i64 = [](uint64_t v) { return Value::Int64(static_cast<int64_t>(v)); };
    // A copy in the set: applied and behind from the nodes' last heartbeats (records in
    // flight count as behind); unknown if the segment is not replicated.
    auto add = [&](NodeId n, const char* role, const char* st) {
      Value ts, records, bytes;
      auto it = at.find({s.id, n});
      if (it != at.end() && it->second.replica_seq > 0) {
        const SegmentTelemetry& f = it->second;
        ts = i64(f.replica_ts);
        if (lead != at.end() && lead->second.replica_seq > 0) {
          const SegmentTelemetry& l = lead->second;
          records = i64(l.replica_seq > f.replica_seq ? l.replica_seq - f.replica_seq : 0);
          bytes =
              i64(l.replica_offset > f.replica_offset ? l.replica_offset - f.replica_offset : 0);
        }
      }
      row(n, role, st, ts, records, bytes);
    };
    add(s.node, "leader", nullptr);
    for (NodeId f : s.followers) add(f, "follower", nullptr);
    // An asleep copy: behind by what its leader keeps for it, the records since it slept.
    const bool kept = lead != at.end() && lead->second.kept_from > 0;
    for (NodeId a : s.asleep) {
      row(a, "follower", "asleep", Value(),
          kept ? i64(lead->second.replica_seq + 1 - lead->second.kept_from) : Value(),
          kept ? i64(lead->second.kept_bytes) : Value());
    }
    if (auto l = learners.find(s.id); l != learners.end()) add(l->second, "learner", "catching up");
  }
  return rows;
}

Rows PowerRows(Cluster& cluster) {
  Rows rows;
  for (const auto& p : cluster.monitor().Snapshot()) {
    rows.push_back({Value::Text(p.component), p.node_id ? Value::Int32(p.node_id) : Value(),
                    Value::Text(p.state), Value::Text(p.meter), Value::Double(p.watts),
                    Value::Double(p.joules), Value::Bool(p.meter_ok),
                    p.meter_error.empty() ? Value() : Value::Text(p.meter_error),
                    Value::Int64(static_cast<int64_t>(p.readings)),
                    Value::Int64(static_cast<int64_t>(p.gaps)), Value::Double(p.gap_seconds),
                    Value::Double(p.covered_seconds)});
  }
  return rows;
}

Rows EnergyDecisionsRows(EnergyService& energy) {
  Rows rows;
  int64_t seq = 0;
  for (const auto& d : energy.decisions().Snapshot()) {
    rows.push_back({Value::Int64(++seq), Value::Timestamp(d.time_us - kPgEpochUnixMicros),
                    Value::Text(d.decision), TextOrNull(d.reason), TextOrNull(d.mode),
                    Value::Int32(d.active_nodes), Value::Double(d.utilization),
                    Value::Double(d.window_utilization), Value::Double(d.forecast_utilization),
                    Value::Double(d.scale_out_cpu), Value::Double(d.scale_in_cpu),
                    d.break_even_s > 0 ? Value::Double(d.predicted_idle_s) : Value(),
                    d.break_even_s > 0 ? Value::Double(d.break_even_s) : Value(),
                    TextOrNull(d.actions), Value::Double(d.duration_ms), TextOrNull(d.outcome)});
  }
  return rows;
}

// The policy in force, one row per key, with the file it came from.
Rows EnergyPolicyRows(EnergyService& energy) {
  EnergyPolicy p = energy.policy();
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
  Rows rows;
  for (auto& [k, v] : kv) rows.push_back({Value::Text(k), Value::Text(v), Value::Text(p.source)});
  return rows;
}

Rows StatementEnergyRows(Cluster& cluster) {
  Rows rows;
  for (const auto& e : cluster.energy_log().Snapshot()) {
    rows.push_back({Value::Timestamp(e.started_us - kPgEpochUnixMicros), Value::Double(e.seconds),
                    Value::Double(e.joules), Value::Double(e.master_joules),
                    Value::Double(e.node_joules), Value::Double(e.infra_joules),
                    Value::Double(e.cpu_ms), Value::Int32(e.unmetered), Value::Text(e.statement)});
  }
  return rows;
}

Rows TablesRows(Cluster& cluster) {
  auto segs = cluster.catalog().AllSegments();
  Rows rows;
  for (const auto& [id, t] : TablesById(cluster.catalog())) {
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
  return rows;
}

}  // namespace

// A table of schemas, one entry per view: long, and clearer in one place.
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
  catalog.AddSystemView(View(kReplicasView, "wattdb_replicas",
                             {{"segment_id", TypeId::kInt64},
                              {"table_name", TypeId::kText},
                              {"node_id", TypeId::kInt32},
                              {"role", TypeId::kText},
                              {"state", TypeId::kText},
                              {"epoch", TypeId::kInt64},
                              {"applied_ts", TypeId::kInt64},
                              {"records_behind", TypeId::kInt64},
                              {"bytes_behind", TypeId::kInt64},
                              {"rows_read", TypeId::kInt64}}));
  catalog.AddSystemView(View(kPartitionsView, "wattdb_partitions",
                             {{"table_name", TypeId::kText},
                              {"node_id", TypeId::kInt32},
                              {"segments", TypeId::kInt64},
                              {"bytes", TypeId::kInt64}}));
}

Result<std::vector<std::vector<Value>>> SystemViewRows(TableId view, Cluster& cluster,
                                                       EnergyService& energy) {
  switch (view) {
    case kNodesView:
      return NodesRows(cluster);
    case kSegmentsView:
      return SegmentsRows(cluster);
    case kPartitionsView:
      return PartitionsRows(cluster);
    case kTablesView:
      return TablesRows(cluster);
    case kPowerView:
      return PowerRows(cluster);
    case kStatementEnergyView:
      return StatementEnergyRows(cluster);
    case kEnergyDecisionsView:
      return EnergyDecisionsRows(energy);
    case kEnergyPolicyView:
      return EnergyPolicyRows(energy);
    case kReplicasView:
      return ReplicasRows(cluster);
    default:
      return Status::Internal("unknown system view");
  }
}

}  // namespace wattdb::master
