#include "master/catalog/database_catalog.h"

#include "common/sqlstate.h"

namespace wattdb::master {

DatabaseCatalog::DatabaseCatalog(Catalog& catalog, std::string database)
    : catalog_(catalog), db_(std::move(database)) {
  if (db_ != kDefaultDatabase) prefix_ = db_ + "/";
}

namespace {
constexpr size_t kMaxKnown = 256;  // tables remembered per database view
}  // namespace

std::string DatabaseCatalog::Qualify(const std::string& name) const {
  if (prefix_.empty() || catalog_.IsSystemView(name)) return name;  // system views are shared
  return prefix_ + name;
}

std::string DatabaseCatalog::Unqualify(const std::string& name) const {
  return name.rfind(prefix_, 0) == 0 ? name.substr(prefix_.size()) : name;
}

Result<TableSchema> DatabaseCatalog::GetTable(const std::string& name) const {
  if (name.find('/') != std::string::npos) {
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("relation \"{}\" does not exist", name));
  }
  std::optional<TableSchema> t;
  {
    MutexLock l(known_mu_);
    auto it = known_.find(name);
    if (it != known_.end() && it->second.version == catalog_.schema_version()) t = it->second.table;
  }
  if (!t) {
    uint64_t version = 0;
    auto got = catalog_.GetTable(Qualify(name), &version);
    if (!got.ok())
      return Status::Sql(sqlstate::kUndefinedTable,
                         fmt::format("relation \"{}\" does not exist", name));
    t = std::move(*got);
    t->name = Unqualify(t->name);
    MutexLock l(known_mu_);
    if (known_.size() >= kMaxKnown) known_.clear();
    known_[name] = Known{version, *t};
  }
  std::erase_if(t->indexes, [&](const IndexDef& ix) {
    return ix.ready_ts == 0 || ix.ready_ts > read_snapshot_;
  });
  return std::move(*t);
}

std::optional<std::string> DatabaseCatalog::GetView(const std::string& name) const {
  if (name.find('/') != std::string::npos) return std::nullopt;
  return catalog_.GetView(Qualify(name));
}

std::vector<TableSchema> DatabaseCatalog::Tables() const {
  std::vector<TableSchema> out;
  for (auto& t : catalog_.Tables()) {
    if (t.id >= kFirstSystemTableId || t.name.find('/') != std::string::npos) {
      if (prefix_.empty() || t.name.rfind(prefix_, 0) != 0) continue;
    } else if (!prefix_.empty()) {
      continue;
    }
    t.name = Unqualify(t.name);
    out.push_back(std::move(t));
  }
  return out;
}

std::map<std::string, std::string> DatabaseCatalog::Views() const {
  std::map<std::string, std::string> out;
  for (auto& [name, sql] : catalog_.Views()) {
    bool qualified = name.find('/') != std::string::npos;
    if (prefix_.empty() ? qualified : name.rfind(prefix_, 0) != 0) continue;
    out[Unqualify(name)] = sql;
  }
  return out;
}

Result<SegmentEntry> DatabaseCatalog::CreateTable(TableSchema* schema, NodeId node) {
  std::string name = schema->name;
  if (name.find('/') != std::string::npos) {
    return Status::Sql(sqlstate::kInvalidName,
                       fmt::format("invalid name \"{}\": '/' is reserved", name));
  }
  schema->name = Qualify(name);
  auto r = catalog_.CreateTable(schema, node);
  schema->name = name;
  if (!r.ok() && r.status().sqlstate() == sqlstate::kDuplicateTable) {
    return Status::Sql(sqlstate::kDuplicateTable,
                       fmt::format("relation \"{}\" already exists", name));
  }
  return r;
}

Result<std::vector<SegmentEntry>> DatabaseCatalog::DropTable(const std::string& name) {
  return catalog_.DropTable(Qualify(name));
}

Result<std::vector<SegmentEntry>> DatabaseCatalog::ReplaceTable(const std::string& name,
                                                                const std::string& staged) {
  return catalog_.ReplaceTable(Qualify(name), Qualify(staged));
}

Status DatabaseCatalog::UpdateTable(TableSchema schema) {
  schema.name = Qualify(schema.name);
  return catalog_.UpdateTable(schema);
}

Status DatabaseCatalog::CreateView(const std::string& name, const std::string& sql,
                                   const std::vector<std::string>& reads, bool replace) {
  if (name.find('/') != std::string::npos) {
    return Status::Sql(sqlstate::kInvalidName,
                       fmt::format("invalid name \"{}\": '/' is reserved", name));
  }
  std::vector<std::string> qualified;
  qualified.reserve(reads.size());
  for (const auto& r : reads) qualified.push_back(Qualify(r));
  return catalog_.CreateView(Qualify(name), sql, qualified, replace);
}

Status DatabaseCatalog::DropView(const std::string& name) {
  return catalog_.DropView(Qualify(name));
}

std::vector<std::string> DatabaseCatalog::DependentViews(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& v : catalog_.DependentViews(Qualify(name))) out.push_back(Unqualify(v));
  return out;
}

}  // namespace wattdb::master
