#include "master/catalog/catalog.h"

#include <algorithm>
#include <mutex>

#include "common/bytes.h"
#include "common/sqlstate.h"

namespace wattdb::master {

namespace {

constexpr char kTablePrefix[] = "table/";
constexpr char kViewPrefix[] = "view/";
constexpr char kUserPrefix[] = "user/";
constexpr char kDatabasePrefix[] = "database/";
constexpr char kStatsPrefix[] = "rows/";

std::string EncodeView(const std::string& sql, const std::vector<std::string>& reads) {
  std::string out;
  ByteWriter w(&out);
  w.Str(sql);
  w.VarU64(reads.size());
  for (const auto& r : reads) w.Str(r);
  return out;
}
constexpr char kSegmentPrefix[] = "segment/";
constexpr char kMovePrefix[] = "move/";
constexpr char kSplitPrefix[] = "split/";
constexpr char kNodePrefix[] = "node/";
constexpr char kCounterPrefix[] = "counter/";
constexpr char kTrashPrefix[] = "trash/";
constexpr char kDecisionPrefix[] = "decision/";

std::string U64Key(const char* prefix, uint64_t v) { return fmt::format("{}{:020}", prefix, v); }

std::string EncodeMove(const MoveIntent& m) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(m.segment);
  w.VarU64(m.from);
  w.VarU64(m.to);
  return out;
}

}  // namespace

const char* NodeAdminStateName(NodeAdminState s) {
  switch (s) {
    case NodeAdminState::kActive:
      return "active";
    case NodeAdminState::kDraining:
      return "draining";
    case NodeAdminState::kOff:
      return "off";
    case NodeAdminState::kSuspended:
      return "suspended";
  }
  return "?";
}

std::string Catalog::SegmentKey(SegmentId id) { return U64Key(kSegmentPrefix, id); }

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& dir) {
  std::unique_ptr<Catalog> c(new Catalog());
  ASSIGN_OR_RETURN(c->kv_, storage::KvStore::Open(dir));
  RETURN_NOT_OK(c->Load());
  return c;
}

Status Catalog::Load() {
  WriterLock l(mu_);  // nobody else has the catalog yet; the scans call back under it
  RETURN_NOT_OK(kv_->Scan(kTablePrefix, [&](const std::string&, const std::string& v) {
    mu_.AssertHeld();
    ASSIGN_OR_RETURN(TableSchema t, TableSchema::Deserialize(v));
    tables_[t.name] = std::move(t);
    return Status::OK();
  }));
  IndexTablesLocked();
  RETURN_NOT_OK(kv_->Scan(kViewPrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    ByteReader r(v);
    View view;
    uint64_t n;
    if (!r.Str(&view.sql) || !r.VarU64(&n) || n > v.size())
      return Status::Corruption("view record");
    for (uint64_t i = 0; i < n; i++) {
      std::string s;
      if (!r.Str(&s)) return Status::Corruption("view record");
      view.reads.push_back(std::move(s));
    }
    views_[k.substr(strlen(kViewPrefix))] = std::move(view);
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kStatsPrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    row_counts_[static_cast<TableId>(std::stoull(k.substr(strlen(kStatsPrefix))))] = std::stoull(v);
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kDatabasePrefix, [&](const std::string& k, const std::string&) {
    mu_.AssertHeld();
    databases_.insert(k.substr(strlen(kDatabasePrefix)));
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kUserPrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    std::string name = k.substr(strlen(kUserPrefix));
    if (v.empty()) {
      users_[name] = std::nullopt;
      return Status::OK();
    }
    ASSIGN_OR_RETURN(auth::Credentials c, auth::DecodeCredentials(v));
    users_[name] = std::move(c);
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kSegmentPrefix, [&](const std::string&, const std::string& v) {
    mu_.AssertHeld();
    ASSIGN_OR_RETURN(SegmentEntry e, DecodeSegment(v));
    seg_index_[e.id] = {e.table, e.lo};
    by_table_[e.table][e.lo] = std::move(e);
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kTrashPrefix, [&](const std::string&, const std::string& v) {
    mu_.AssertHeld();
    ASSIGN_OR_RETURN(SegmentEntry e, DecodeSegment(v));
    trash_[e.id] = e;
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kDecisionPrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    decisions_[std::stoull(k.substr(strlen(kDecisionPrefix)))] = std::stoull(v);
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kSplitPrefix, [&](const std::string&, const std::string& v) {
    mu_.AssertHeld();
    ByteReader r(v);
    uint64_t s, n, node, pieces = 1;
    if (!r.VarU64(&s) || !r.VarU64(&n) || !r.VarU64(&node))
      return Status::Corruption("split record");
    if (!r.empty() && (!r.VarU64(&pieces) || pieces == 0 || pieces > UINT32_MAX))
      return Status::Corruption("split record");
    splits_[s] = SplitIntent{s, n, static_cast<NodeId>(node), static_cast<uint32_t>(pieces)};
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kMovePrefix, [&](const std::string&, const std::string& v) {
    mu_.AssertHeld();
    ByteReader r(v);
    uint64_t s, f, t;
    if (!r.VarU64(&s) || !r.VarU64(&f) || !r.VarU64(&t)) return Status::Corruption("move record");
    moves_[s] = MoveIntent{s, static_cast<NodeId>(f), static_cast<NodeId>(t)};
    return Status::OK();
  }));
  RETURN_NOT_OK(kv_->Scan(kNodePrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    if (v.size() != 1 || v[0] > 3) return Status::Corruption("node state record");
    node_states_[static_cast<NodeId>(std::stoul(k.substr(strlen(kNodePrefix))))] =
        static_cast<NodeAdminState>(v[0]);
    return Status::OK();
  }));
  return kv_->Scan(kCounterPrefix, [&](const std::string& k, const std::string& v) {
    mu_.AssertHeld();
    uint64_t limit = std::stoull(v);
    // Start past everything a previous run could have handed out.
    counters_[k.substr(strlen(kCounterPrefix))] = Counter{limit, limit};
    return Status::OK();
  });
}

Result<uint64_t> Catalog::NextFromCounter(const std::string& name, uint64_t block, uint64_t n) {
  if (n == 0) return Status::InvalidArgument(fmt::format("no {} values asked for", name));
  Counter& c = counters_[name];
  if (c.next == 0) c.next = c.limit = 1;
  if (c.limit - c.next < n) {
    uint64_t limit = c.next + std::max(block, n);
    RETURN_NOT_OK(kv_->Write({{std::string(kCounterPrefix) + name, std::to_string(limit)}}));
    c.limit = limit;
  }
  uint64_t first = c.next;
  c.next += n;
  return first;
}

Result<uint64_t> Catalog::NextSegmentId() { return NextSegmentIds(1); }

Result<uint64_t> Catalog::NextSegmentIds(uint64_t n) {
  WriterLock l(mu_);
  return NextFromCounter("segment", 64, n);
}

Result<uint64_t> Catalog::NextRowId(TableId table) {
  WriterLock l(mu_);
  return NextFromCounter(fmt::format("rowid/{}", table), 4096);
}

Result<uint64_t> Catalog::NextSerial(TableId table, int column) {
  WriterLock l(mu_);
  return NextFromCounter(fmt::format("serial/{}/{}", table, column), 64);
}

Result<Timestamp> Catalog::NextTimestamp() {
  WriterLock l(mu_);
  return NextFromCounter("ts", 100000);
}

Result<TableSchema> Catalog::GetTable(const std::string& name) const {
  uint64_t version;
  return GetTable(name, &version);
}

Result<TableSchema> Catalog::GetTable(const std::string& name, uint64_t* version) const {
  ReaderLock l(mu_);
  *version = schema_version_.load();  // changes only under the exclusive lock
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("relation \"{}\" does not exist", name));
  }
  return it->second;
}

std::vector<std::string> Catalog::Databases() const {
  ReaderLock l(mu_);
  return {databases_.begin(), databases_.end()};
}

std::vector<std::string> Catalog::UserNames() const {
  ReaderLock l(mu_);
  std::vector<std::string> out;
  for (const auto& [n, c] : users_) out.push_back(n);
  return out;
}

std::map<std::string, std::string> Catalog::Views() const {
  ReaderLock l(mu_);
  std::map<std::string, std::string> out;
  for (const auto& [n, v] : views_) out[n] = v.sql;
  return out;
}

std::optional<TableSchema> Catalog::TableById(TableId id) const {
  ReaderLock l(mu_);
  auto it = tables_by_id_.find(id);
  if (it == tables_by_id_.end()) return std::nullopt;
  return *it->second;
}

std::vector<TableSchema> Catalog::Tables() const { return TablesOf(false); }

std::vector<TableSchema> Catalog::TablesOf(bool system) const {
  ReaderLock l(mu_);
  std::vector<TableSchema> out;
  for (const auto& [n, t] : tables_) {
    if ((t.id >= kFirstSystemTableId) == system) out.push_back(t);
  }
  return out;
}

bool Catalog::HasUniqueIndex(TableId id) const {
  ReaderLock l(mu_);
  auto it = tables_by_id_.find(id);
  if (it == tables_by_id_.end()) return false;
  const auto& ixs = it->second->indexes;
  return std::any_of(ixs.begin(), ixs.end(), [](const auto& ix) { return ix.unique; });
}

std::vector<TableSchema> Catalog::SystemViews() const { return TablesOf(true); }

bool Catalog::IsSystemView(const std::string& name) const {
  ReaderLock l(mu_);
  auto it = tables_.find(name);
  return it != tables_.end() && it->second.id >= kFirstSystemTableId;
}

void Catalog::AddSystemView(TableSchema schema) {
  WriterLock l(mu_);
  schema_version_++;
  tables_[schema.name] = std::move(schema);
  IndexTablesLocked();
}

void Catalog::IndexTablesLocked() {
  tables_by_id_.clear();
  for (const auto& [name, t] : tables_) tables_by_id_[t.id] = &t;
}

Result<SegmentEntry> Catalog::CreateTable(TableSchema* schema, NodeId node) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  if (tables_.count(schema->name) || views_.count(schema->name)) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", schema->name));
  }
  ASSIGN_OR_RETURN(uint64_t tid, NextFromCounter("table", 16));
  if (tid >= kFirstSystemTableId) return Status::Internal("table ids exhausted");
  ASSIGN_OR_RETURN(uint64_t sid, NextFromCounter("segment", 64));
  schema->id = static_cast<TableId>(tid);
  SegmentEntry seg{sid, schema->id, "", "", node};
  std::string enc;
  schema->Serialize(&enc);
  RETURN_NOT_OK(
      kv_->Write({{kTablePrefix + schema->name, enc}, {SegmentKey(sid), EncodeSegment(seg)}}));
  tables_[schema->name] = *schema;
  IndexTablesLocked();
  by_table_[schema->id][""] = seg;
  seg_index_[sid] = {schema->id, ""};
  return seg;
}

Result<std::vector<SegmentEntry>> Catalog::DropTable(const std::string& name) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  auto it = tables_.find(name);
  if (it == tables_.end())
    return Status::Sql(sqlstate::kUndefinedTable, fmt::format("table \"{}\" does not exist", name));
  if (it->second.id >= kFirstSystemTableId) {
    return Status::Sql(sqlstate::kWrongObjectType, fmt::format("\"{}\" is a system view", name));
  }
  ASSIGN_OR_RETURN(auto segs, TrashSegments({it->second.id}, {{kTablePrefix + name, "", true}}));
  tables_.erase(it);
  IndexTablesLocked();
  return segs;
}

Result<std::vector<SegmentEntry>> Catalog::TrashSegments(const std::vector<TableId>& ids,
                                                         std::vector<storage::KvStore::Op> ops) {
  std::vector<SegmentEntry> segs;
  for (TableId id : ids) {
    for (auto& [lo, s] : by_table_[id]) {
      segs.push_back(s);
      ops.push_back({SegmentKey(s.id), "", true});
      ops.push_back({U64Key(kTrashPrefix, s.id), EncodeSegment(s)});
    }
  }
  RETURN_NOT_OK(kv_->Write(ops));
  for (const auto& s : segs) {
    seg_index_.erase(s.id);
    trash_[s.id] = s;
  }
  for (TableId id : ids) by_table_.erase(id);
  return segs;
}

Status Catalog::SetRowCount(TableId table, uint64_t rows) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{kStatsPrefix + std::to_string(table), std::to_string(rows)}}));
  row_counts_[table] = rows;
  return Status::OK();
}

void Catalog::AdjustRowCount(TableId table, int64_t delta) {
  WriterLock l(mu_);
  uint64_t& n = row_counts_[table];
  n = delta < 0 && static_cast<uint64_t>(-delta) > n ? 0 : n + delta;
}

double Catalog::EstimateRows(const TableSchema& table) const {
  ReaderLock l(mu_);
  auto it = row_counts_.find(table.id);
  return it == row_counts_.end() ? 1000 : std::max<double>(1, static_cast<double>(it->second));
}

Status Catalog::CreateDatabase(const std::string& name) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  if (databases_.count(name))
    return Status::Sql(sqlstate::kDuplicateDatabase,
                       fmt::format("database \"{}\" already exists", name));
  RETURN_NOT_OK(kv_->Write({{kDatabasePrefix + name, "1"}}));
  databases_.insert(name);
  return Status::OK();
}

bool Catalog::HasDatabase(const std::string& name) const {
  ReaderLock l(mu_);
  return databases_.count(name) > 0;
}

Result<std::vector<SegmentEntry>> Catalog::DropDatabase(const std::string& name) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  if (!databases_.count(name))
    return Status::Sql(sqlstate::kInvalidCatalogName,
                       fmt::format("database \"{}\" does not exist", name));
  std::string prefix = name + "/";
  // One atomic write: the database, its views, its tables and their segments.
  std::vector<storage::KvStore::Op> ops = {{kDatabasePrefix + name, "", true}};
  std::vector<std::string> views, tables;
  for (const auto& [v, view] : views_) {
    if (v.rfind(prefix, 0) == 0) views.push_back(v);
  }
  for (const auto& [t, schema] : tables_) {
    if (t.rfind(prefix, 0) == 0) tables.push_back(t);
  }
  for (const auto& v : views) ops.push_back({kViewPrefix + v, "", true});
  std::vector<TableId> ids;
  for (const auto& t : tables) {
    ops.push_back({kTablePrefix + t, "", true});
    ids.push_back(tables_[t].id);
  }
  ASSIGN_OR_RETURN(auto segs, TrashSegments(ids, std::move(ops)));
  for (const auto& t : tables) tables_.erase(t);
  IndexTablesLocked();
  for (const auto& v : views) views_.erase(v);
  databases_.erase(name);
  return segs;
}

Status Catalog::PutUser(const auth::Credentials& c) {
  WriterLock l(mu_);
  bool has_password = !c.md5.empty();
  RETURN_NOT_OK(
      kv_->Write({{kUserPrefix + c.user, has_password ? auth::EncodeCredentials(c) : ""}}));
  users_[c.user] = has_password ? std::optional<auth::Credentials>(c) : std::nullopt;
  return Status::OK();
}

Status Catalog::DropUser(const std::string& name) {
  WriterLock l(mu_);
  if (!users_.count(name))
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("role \"{}\" does not exist", name));
  RETURN_NOT_OK(kv_->Write({{kUserPrefix + name, "", true}}));
  users_.erase(name);
  return Status::OK();
}

std::optional<auth::Credentials> Catalog::GetUser(const std::string& name) const {
  ReaderLock l(mu_);
  auto it = users_.find(name);
  if (it == users_.end()) return std::nullopt;
  return it->second;
}

bool Catalog::HasUser(const std::string& name) const {
  ReaderLock l(mu_);
  return users_.count(name) > 0;
}

std::optional<std::string> Catalog::GetView(const std::string& name) const {
  ReaderLock l(mu_);
  auto it = views_.find(name);
  if (it == views_.end()) return std::nullopt;
  return it->second.sql;
}

Status Catalog::CreateView(const std::string& name, const std::string& sql,
                           const std::vector<std::string>& reads, bool replace) {
  WriterLock l(mu_);
  schema_version_++;
  if (tables_.count(name) || (views_.count(name) && !replace)) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", name));
  }
  RETURN_NOT_OK(kv_->Write({{kViewPrefix + name, EncodeView(sql, reads)}}));
  views_[name] = View{sql, reads};
  return Status::OK();
}

Status Catalog::DropView(const std::string& name) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  if (!views_.count(name))
    return Status::Sql(sqlstate::kUndefinedTable, fmt::format("view \"{}\" does not exist", name));
  RETURN_NOT_OK(kv_->Write({{kViewPrefix + name, "", true}}));
  views_.erase(name);
  return Status::OK();
}

std::vector<std::string> Catalog::DependentViews(const std::string& name) const {
  ReaderLock l(mu_);
  std::vector<std::string> out;
  for (const auto& [v, view] : views_) {
    if (std::find(view.reads.begin(), view.reads.end(), name) != view.reads.end()) out.push_back(v);
  }
  return out;
}

Result<std::vector<SegmentEntry>> Catalog::ReplaceTable(const std::string& name,
                                                        const std::string& staged) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  auto it = tables_.find(name);
  auto st = tables_.find(staged);
  if (it == tables_.end())
    return Status::Sql(sqlstate::kUndefinedTable, fmt::format("table \"{}\" does not exist", name));
  if (st == tables_.end())
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("table \"{}\" does not exist", staged));
  TableSchema renamed = st->second;
  renamed.name = name;
  std::string enc;
  renamed.Serialize(&enc);
  ASSIGN_OR_RETURN(auto segs, TrashSegments({it->second.id}, {{kTablePrefix + staged, "", true},
                                                              {kTablePrefix + name, enc}}));
  tables_.erase(st);
  tables_[name] = std::move(renamed);
  IndexTablesLocked();
  return segs;
}

Status Catalog::UpdateTable(const TableSchema& schema) {
  WriterLock l(mu_);
  schema_version_++;  // also on failure: a spurious bump only costs a re-plan
  auto it = tables_.find(schema.name);
  if (it == tables_.end() || it->second.id != schema.id) {
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("table \"{}\" does not exist", schema.name));
  }
  std::string enc;
  schema.Serialize(&enc);
  RETURN_NOT_OK(kv_->Write({{kTablePrefix + schema.name, enc}}));
  it->second = schema;
  IndexTablesLocked();
  return Status::OK();
}

std::vector<SegmentEntry> Catalog::Trash() const {
  ReaderLock l(mu_);
  std::vector<SegmentEntry> out;
  for (const auto& [id, s] : trash_) out.push_back(s);
  return out;
}

Status Catalog::ClearTrash(SegmentId seg) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kTrashPrefix, seg), "", true}}));
  trash_.erase(seg);
  return Status::OK();
}

std::vector<SegmentEntry> Catalog::SegmentsOverlapping(TableId table, const std::string& lo,
                                                       const std::string& hi) const {
  ReaderLock l(mu_);
  std::vector<SegmentEntry> out;
  auto t = by_table_.find(table);
  if (t == by_table_.end()) return out;
  const auto& m = t->second;
  auto it = m.upper_bound(lo);
  if (it != m.begin()) --it;
  for (; it != m.end(); ++it) {
    const SegmentEntry& s = it->second;
    if (!hi.empty() && s.lo >= hi) break;
    if (!s.hi.empty() && s.hi <= lo) continue;
    out.push_back(s);
  }
  return out;
}

Result<SegmentEntry> Catalog::SegmentForKey(TableId table, const std::string& key) const {
  ReaderLock l(mu_);
  auto t = by_table_.find(table);
  if (t == by_table_.end() || t->second.empty()) {
    return Status::NotFound(fmt::format("table {} has no segments", table));
  }
  auto it = t->second.upper_bound(key);
  if (it == t->second.begin()) return Status::Internal("segment map does not cover key");
  return std::prev(it)->second;
}

Result<SegmentEntry> Catalog::GetSegment(SegmentId id) const {
  ReaderLock l(mu_);
  auto ix = seg_index_.find(id);
  if (ix == seg_index_.end()) {
    return Status::Sql(sqlstate::kUndefinedObject, fmt::format("segment {} does not exist", id));
  }
  return by_table_.at(ix->second.first).at(ix->second.second);
}

bool Catalog::SegmentIs(const SegmentEntry& e) const {
  ReaderLock l(mu_);
  auto ix = seg_index_.find(e.id);
  if (ix == seg_index_.end()) return false;
  const SegmentEntry& now = by_table_.at(ix->second.first).at(ix->second.second);
  return now.node == e.node && now.epoch == e.epoch && now.lo == e.lo && now.hi == e.hi;
}

std::vector<SegmentEntry> Catalog::AllSegments() const {
  ReaderLock l(mu_);
  std::vector<SegmentEntry> out;
  for (const auto& [t, m] : by_table_) {
    for (const auto& [lo, s] : m) out.push_back(s);
  }
  return out;
}

std::vector<SegmentEntry> Catalog::SegmentsOnNode(NodeId node) const {
  std::vector<SegmentEntry> out;
  for (auto& s : AllSegments()) {
    if (s.node == node) out.push_back(s);
  }
  return out;
}

Status Catalog::ApplySplit(SegmentId seg, SegmentId new_id, const std::string& split_key) {
  return ApplySplits(seg, new_id, {split_key});
}

Status Catalog::ApplySplits(SegmentId seg, SegmentId first_new_id,
                            const std::vector<std::string>& keys) {
  WriterLock l(mu_);
  auto ix = seg_index_.find(seg);
  if (ix == seg_index_.end()) return Status::NotFound(fmt::format("segment {}", seg));
  SegmentEntry& old = by_table_[ix->second.first][ix->second.second];
  if (keys.empty()) return Status::Internal("a split without pieces");
  for (size_t i = 0; i < keys.size(); i++) {
    if (keys[i] <= (i == 0 ? old.lo : keys[i - 1]) || (!old.hi.empty() && keys[i] >= old.hi)) {
      return Status::Internal("split keys outside the segment or out of order");
    }
  }
  SegmentEntry lower = old;
  lower.hi = keys[0];
  lower.asleep.clear();  // the sleeping copies hold the whole range: re-seeded
  std::vector<SegmentEntry> uppers;
  std::vector<storage::KvStore::Op> ops{{SegmentKey(seg), EncodeSegment(lower)}};
  for (size_t i = 0; i < keys.size(); i++) {
    uppers.push_back(SegmentEntry{first_new_id + i,
                                  old.table,
                                  keys[i],
                                  i + 1 < keys.size() ? keys[i + 1] : old.hi,
                                  old.node,
                                  old.followers,
                                  old.epoch,
                                  {}});
    ops.push_back({SegmentKey(uppers.back().id), EncodeSegment(uppers.back())});
  }
  ops.push_back({U64Key(kSplitPrefix, seg), "", true});
  RETURN_NOT_OK(kv_->Write(ops));
  splits_.erase(seg);
  old = lower;
  for (const auto& u : uppers) {
    by_table_[u.table][u.lo] = u;
    seg_index_[u.id] = {u.table, u.lo};
  }
  return Status::OK();
}

Status Catalog::LogSplitIntent(const SplitIntent& si) {
  std::string v;
  ByteWriter w(&v);
  w.VarU64(si.segment);
  w.VarU64(si.new_id);
  w.VarU64(si.node);
  if (si.pieces > 1) w.VarU64(si.pieces);  // one piece: the record as before pieces existed
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kSplitPrefix, si.segment), v}}));
  splits_[si.segment] = si;
  return Status::OK();
}

Status Catalog::ClearSplitIntent(SegmentId seg) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kSplitPrefix, seg), "", true}}));
  splits_.erase(seg);
  return Status::OK();
}

std::vector<SplitIntent> Catalog::PendingSplits() const {
  ReaderLock l(mu_);
  std::vector<SplitIntent> out;
  for (const auto& [s, si] : splits_) out.push_back(si);
  return out;
}

Status Catalog::LogMoveIntent(const MoveIntent& m) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kMovePrefix, m.segment), EncodeMove(m)}}));
  moves_[m.segment] = m;
  return Status::OK();
}

Status Catalog::ClearMoveIntent(SegmentId seg) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kMovePrefix, seg), "", true}}));
  moves_.erase(seg);
  return Status::OK();
}

Status Catalog::SetOwner(SegmentId seg, NodeId node) {
  WriterLock l(mu_);
  auto ix = seg_index_.find(seg);
  if (ix == seg_index_.end()) return Status::NotFound(fmt::format("segment {}", seg));
  SegmentEntry e = by_table_[ix->second.first][ix->second.second];
  e.node = node;
  std::erase(e.followers, node);
  e.epoch++;
  e.asleep.clear();
  RETURN_NOT_OK(
      kv_->Write({{SegmentKey(seg), EncodeSegment(e)}, {U64Key(kMovePrefix, seg), "", true}}));
  by_table_[ix->second.first][ix->second.second] = e;
  moves_.erase(seg);
  return Status::OK();
}

std::vector<MoveIntent> Catalog::PendingMoves() const {
  ReaderLock l(mu_);
  std::vector<MoveIntent> out;
  for (const auto& [s, m] : moves_) out.push_back(m);
  return out;
}

Status Catalog::LogDecision(uint64_t txn, Timestamp ts) {
  // Synced outside mu_: the catalog's readers do not wait for the disk, and concurrent
  // decisions share a sync (RocksDB groups concurrent writes).
  RETURN_NOT_OK(kv_->Write({{U64Key(kDecisionPrefix, txn), std::to_string(ts)}}));
  WriterLock l(mu_);
  decisions_[txn] = ts;
  return Status::OK();
}

Status Catalog::EraseDecision(uint64_t txn) {
  WriterLock l(mu_);
  // Unsynced: a decision that reappears after a crash is harmless (nobody asks for it).
  RETURN_NOT_OK(kv_->Write({{U64Key(kDecisionPrefix, txn), "", true}}, /*sync=*/false));
  decisions_.erase(txn);
  return Status::OK();
}

std::optional<Timestamp> Catalog::Decision(uint64_t txn) const {
  ReaderLock l(mu_);
  auto it = decisions_.find(txn);
  if (it == decisions_.end()) return std::nullopt;
  return it->second;
}

NodeAdminState Catalog::GetNodeState(NodeId node) const {
  ReaderLock l(mu_);
  auto it = node_states_.find(node);
  return it == node_states_.end() ? NodeAdminState::kActive : it->second;
}

Status Catalog::SetNodeState(NodeId node, NodeAdminState s) {
  WriterLock l(mu_);
  RETURN_NOT_OK(kv_->Write({{U64Key(kNodePrefix, node), std::string(1, static_cast<char>(s))}}));
  node_states_[node] = s;
  return Status::OK();
}

}  // namespace wattdb::master
