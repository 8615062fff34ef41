// The executor's session settings (SET, SHOW, settings from the startup packet) and the
// planner choices they make: where fragments, partitioned joins and offloaded operators run.
#include <algorithm>
#include <cctype>
#include <map>

#include "common/sqlstate.h"
#include "master/sql/executor.h"
#include "master/sql/offload.h"
#include "query/plan/fragment.h"
#include "query/plan/offload.h"
#include "query/plan/partition.h"

namespace wattdb::master {

namespace {

Result<int64_t> ParseMemoryBytes(const std::string& text) {
  // PostgreSQL's form: an integer of kB, or with a unit (B, kB, MB, GB, TB).
  size_t pos = 0;
  int64_t n = 0;
  try {
    n = std::stoll(text, &pos);
  } catch (...) {
    return Status::InvalidArgument("not a memory size");
  }
  std::string unit = text.substr(pos);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (auto& ch : unit) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  static const std::map<std::string, int64_t> kUnits = {{"", 1024},
                                                        {"b", 1},
                                                        {"kb", 1024},
                                                        {"mb", 1 << 20},
                                                        {"gb", int64_t{1} << 30},
                                                        {"tb", int64_t{1} << 40}};
  auto u = kUnits.find(unit);
  if (u == kUnits.end() || n < 0 || n > (int64_t{1} << 50) / u->second) {
    return Status::InvalidArgument("not a memory size");
  }
  if (n * u->second < 64 * 1024) return Status::InvalidArgument("below 64kB");
  return n * u->second;
}

// PostgreSQL's time units for settings: a number is milliseconds; ms, s, min, h, d suffixes.
Result<int64_t> ParseDurationMs(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    i++;
  if (i == 0) return Status::InvalidArgument("not a duration");
  double v = 0;
  try {
    v = std::stod(text.substr(0, i));
  } catch (...) {
    return Status::InvalidArgument("not a duration");
  }
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  double scale = unit.empty() || unit == "ms" ? 1
                 : unit == "s"                ? 1e3
                 : unit == "min"              ? 6e4
                 : unit == "h"                ? 3.6e6
                 : unit == "d"                ? 8.64e7
                                              : -1;
  if (scale < 0 || v * scale > 2147483647.0) return Status::InvalidArgument("not a duration");
  return static_cast<int64_t>(v * scale);
}

// Sends a one-column text result.
Status TextResult(ResultSink& sink, const std::string& name,
                  const std::vector<std::string>& lines) {
  RETURN_NOT_OK(sink.Describe({name}, {SqlType{TypeId::kText}}));
  exec::Batch b;
  b.Reset(1);
  for (const auto& l : lines) b.AppendRow({Value::Text(l)});
  return b.rows ? sink.Rows(b) : Status::OK();
}

}  // namespace

Result<std::string> Executor::Set(sql::SetStmt& s, ResultSink& sink) {
  if (s.name == "work_mem") {
    if (s.value == "default" || s.value == "DEFAULT") {
      ResetSetting(s.name);
      return std::string("SET");
    }
    if (!ParseMemoryBytes(s.value).ok()) {
      return Status::Sql(sqlstate::kInvalidParameterValue,
                         fmt::format("invalid value for parameter \"work_mem\": \"{}\"", s.value));
    }
  }
  // wattdb_pushdown: on, fragments run on the nodes; scan, only their filters and projections
  // (aggregation and sorting on the master); off, all on the master.
  // wattdb_exchange_prefetch: on, exchanges read up to four segments at once into buffers;
  // off, one segment at a time straight off its connection.
  // wattdb_partition_joins: on, joins of key-range co-located tables run per segment on the
  // nodes (query/plan/partition.h); off, on the master.
  // wattdb_follower_reads: on, queries outside a writing transaction may read any live copy
  // of a replicated segment (docs/design/replication.md, "Follower reads").
  if (s.name == "wattdb_pushdown" || s.name == "wattdb_exchange_prefetch" ||
      s.name == "wattdb_partition_joins" || s.name == "wattdb_follower_reads") {
    if (s.value == "default" || s.value == "DEFAULT") {
      ResetSetting(s.name);
      return std::string("SET");
    }
    if (s.value != "on" && s.value != "off" &&
        !(s.value == "scan" && s.name == "wattdb_pushdown")) {
      return Status::Sql(
          sqlstate::kInvalidParameterValue,
          fmt::format("invalid value for parameter \"{}\": \"{}\"", s.name, s.value));
    }
  }
  // wattdb_offload: where blocking operators above the exchanges run (master/sql/offload.h).
  if (s.name == "wattdb_offload") {
    if (s.value == "default" || s.value == "DEFAULT") {
      ResetSetting(s.name);
      return std::string("SET");
    }
    RETURN_NOT_OK(OffloadSetting::Parse(s.value).status());
  }
  if (s.name == "transaction_isolation" || s.name == "default_transaction_isolation") {
    return SetIsolation(s, sink);
  }
  if (s.name == "statement_timeout" || s.name == "idle_in_transaction_session_timeout") {
    if (s.value == "default" || s.value == "DEFAULT") {
      ResetSetting(s.name);
      return std::string("SET");
    }
    if (!ParseDurationMs(s.value).ok()) {
      return Status::Sql(
          sqlstate::kInvalidParameterValue,
          fmt::format("invalid value for parameter \"{}\": \"{}\"", s.name, s.value));
    }
  }
  SetSetting(s.name, s.value);
  return std::string("SET");
}

Status Executor::SetAtStartup(const std::string& name, const std::string& value) {
  struct Quiet : ResultSink {
    Status Describe(const std::vector<std::string>&, const std::vector<SqlType>&) override {
      return Status::OK();
    }
    Status Rows(const exec::Batch&) override { return Status::OK(); }
    Status Notice(const std::string&, const std::string&) override { return Status::OK(); }
  } quiet;
  sql::SetStmt s{name, value};
  std::transform(s.name.begin(), s.name.end(), s.name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return Set(s, quiet).status();
}

std::string Executor::PushdownSetting() const {
  auto it = settings_.find("wattdb_pushdown");
  return it == settings_.end() ? "on" : it->second;
}

std::string Executor::PlannerSettings() const {
  auto it = settings_.find("wattdb_offload");
  auto partition = settings_.find("wattdb_partition_joins");
  return PushdownSetting() + "/" + (it == settings_.end() ? "auto" : it->second) + "/" +
         (partition == settings_.end() ? "on" : partition->second);
}

OffloadSetting Executor::Offload() const {
  auto it = settings_.find("wattdb_offload");
  if (it == settings_.end()) return {};
  auto s = OffloadSetting::Parse(it->second);
  return s.ok() ? *s : OffloadSetting{};
}

void Executor::PushDown(plan::BoundSelect* bound) const {
  std::string mode = PushdownSetting();
  if (mode == "off") return;
  plan::PushDownOptions o;
  o.remote = [](const plan::PlanNode& scan) { return scan.table < kFirstSystemTableId; };
  o.blocking = mode != "scan";
  bound->plan = plan::PushDownFragments(std::move(bound->plan), o);
  auto partition = settings_.find("wattdb_partition_joins");
  if (mode == "on" && (partition == settings_.end() || partition->second != "off")) {
    plan::PartitionOptions po;
    po.key_columns = [this](TableId id) {
      auto t = cluster_.catalog().TableById(id);
      return t && !t->HasHiddenKey() ? t->key_columns : std::vector<int>();
    };
    bound->plan = plan::PartitionJoins(std::move(bound->plan), po);
  }
  OffloadSetting offload = Offload();
  if (mode == "on" && offload.mode != OffloadSetting::Mode::kOff) {
    bound->plan = plan::PlaceOffload(std::move(bound->plan), offload.node);
  }
}

bool Executor::FollowerReads() const {
  auto it = settings_.find("wattdb_follower_reads");
  return it != settings_.end() && it->second == "on";
}

bool Executor::ExchangePrefetch() const {
  auto it = settings_.find("wattdb_exchange_prefetch");
  return it == settings_.end() || it->second != "off";
}

int64_t Executor::WorkMem() const {
  auto it = settings_.find("work_mem");
  if (it != settings_.end()) {
    auto b = ParseMemoryBytes(it->second);
    if (b.ok()) return *b;
  }
  return int64_t{cluster_.config().work_mem_mb} << 20;
}

int64_t Executor::TimeoutSetting(std::string_view name) const {
  auto it = settings_.find(name);
  if (it == settings_.end()) return 0;
  auto ms = ParseDurationMs(it->second);
  return ms.ok() ? *ms : 0;
}

Result<std::string> Executor::Show(sql::ShowStmt& s, ResultSink& sink) {
  static const std::map<std::string, std::string> kFixed = {
      {"server_version", "15.0"},
      {"server_encoding", "UTF8"},
      {"client_encoding", "UTF8"},
      {"datestyle", "ISO, MDY"},
      {"integer_datetimes", "on"},
      {"standard_conforming_strings", "on"},
      {"timezone", "UTC"},
      {"max_identifier_length", "63"},
      {"statement_timeout", "0"},
      {"idle_in_transaction_session_timeout", "0"},
      {"wattdb_pushdown", "on"},
      {"wattdb_exchange_prefetch", "on"},
      {"wattdb_offload", "auto"},
      {"wattdb_partition_joins", "on"},
      {"wattdb_follower_reads", "off"}};
  auto set = settings_.find(s.name);
  if (set != settings_.end()) {
    RETURN_NOT_OK(TextResult(sink, s.name, {set->second}));
    return std::string("SHOW");
  }
  if (s.name == "work_mem") {
    RETURN_NOT_OK(TextResult(sink, s.name, {fmt::format("{}MB", cluster_.config().work_mem_mb)}));
    return std::string("SHOW");
  }
  if (s.name == "transaction_isolation" || s.name == "default_transaction_isolation") {
    Isolation level =
        s.name == "transaction_isolation" ? isolation() : *ParseIsolation(DefaultIsolation());
    RETURN_NOT_OK(TextResult(sink, s.name, {IsolationName(level)}));
    return std::string("SHOW");
  }
  auto it = kFixed.find(s.name);
  if (it == kFixed.end()) {
    return Status::Sql(sqlstate::kUndefinedObject,
                       fmt::format("unrecognized configuration parameter \"{}\"", s.name));
  }
  RETURN_NOT_OK(TextResult(sink, s.name, {it->second}));
  return std::string("SHOW");
}

}  // namespace wattdb::master
