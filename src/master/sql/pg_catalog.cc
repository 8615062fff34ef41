#include "master/sql/pg_catalog.h"

#include <map>

#include "common/sqlstate.h"
#include "master/sql/pg_catalog_views.h"
#include "query/plan/binder.h"
#include "query/sql/parser.h"

namespace wattdb::master {

namespace {

using pgcat::Views;

constexpr TableId kFirstPgCatalogId = kFirstSystemTableId + 0x100;
constexpr int64_t kPgCatalogNs = 11, kPublicNs = 2200, kToastNs = 99, kInfoSchemaNs = 13000;
constexpr int64_t kOwner = 10;  // the bootstrap superuser's oid; every object belongs to it
constexpr int64_t kDatabaseOwner = 6171;  // pg_database_owner: owns schema public
constexpr int64_t kHeapAm = 2, kBtreeAm = 403;
constexpr int64_t kDefaultCollation = 100;

TableId IdOf(const std::string& name) {
  const auto& v = Views();
  for (size_t i = 0; i < v.size(); i++) {
    if (name == v[i].name) return kFirstPgCatalogId + static_cast<TableId>(i);
  }
  return 0;
}

// Roles and databases in the order pg_roles and pg_database number them.
std::vector<std::string> RoleNames(const DatabaseCatalog& db) {
  std::vector<std::string> users = db.shared().UserNames();
  if (std::find(users.begin(), users.end(), "wattdb") == users.end())
    users.insert(users.begin(), "wattdb");
  return users;
}
int64_t RoleOid(const std::vector<std::string>& roles, size_t i) {
  return roles[i] == "wattdb" ? kOwner : 16000 + static_cast<int64_t>(i);
}
std::vector<std::string> DatabaseNames(const DatabaseCatalog& db) {
  std::vector<std::string> dbs = db.shared().Databases();
  dbs.insert(dbs.begin(), kDefaultDatabase);
  return dbs;
}
int64_t DatabaseOid(size_t i) { return 16384 + static_cast<int64_t>(i); }

int64_t TableOid(const TableSchema& t) { return 100000 + 1000 * static_cast<int64_t>(t.id); }
int64_t IndexOid(const TableSchema& t, const IndexDef& ix) { return TableOid(t) + ix.spec.id; }
int64_t PkeyOid(const TableSchema& t) { return TableOid(t) + 999; }
int64_t ViewOid(size_t pos) { return 50000 + static_cast<int64_t>(pos); }
int64_t SystemViewOid(TableId id) { return 20000 + static_cast<int64_t>(id - kFirstSystemTableId); }

// PostgreSQL type oids and names of WattDB's types.
struct PgType {
  int64_t oid;
  const char* name;
  int len;
  const char* category;
  int64_t elem;  // arrays: the element type's oid
};
const std::vector<PgType>& Types() {
  static const std::vector<PgType> types = {
      {16, "bool", 1, "B", 0},           {20, "int8", 8, "N", 0},
      {21, "int2", 2, "N", 0},           {23, "int4", 4, "N", 0},
      {25, "text", -1, "S", 0},          {26, "oid", 4, "N", 0},
      {700, "float4", 4, "N", 0},        {701, "float8", 8, "N", 0},
      {1042, "bpchar", -1, "S", 0},      {1043, "varchar", -1, "S", 0},
      {1114, "timestamp", 8, "D", 0},    {1700, "numeric", -1, "N", 0},
      {1000, "_bool", -1, "A", 16},      {1005, "_int2", -1, "A", 21},
      {1007, "_int4", -1, "A", 23},      {1009, "_text", -1, "A", 25},
      {1016, "_int8", -1, "A", 20},      {1022, "_float8", -1, "A", 701},
      {1028, "_oid", -1, "A", 26},       {1115, "_timestamp", -1, "A", 1114},
      {1231, "_numeric", -1, "A", 1700}, {19, "name", 64, "S", 0},
      {18, "char", 1, "Z", 0},           {2205, "regclass", 4, "N", 0},
  };
  return types;
}

// format_type(oid, typmod) as PostgreSQL prints it.
std::string FormatType(int64_t oid, int64_t typmod) {
  switch (oid) {
    case 16:
      return "boolean";
    case 20:
      return "bigint";
    case 21:
      return "smallint";
    case 23:
      return "integer";
    case 25:
      return "text";
    case 26:
      return "oid";
    case 700:
      return "real";
    case 701:
      return "double precision";
    case 1042:
      return typmod > 4 ? fmt::format("character({})", typmod - 4) : "character";
    case 1043:
      return typmod > 4 ? fmt::format("character varying({})", typmod - 4) : "character varying";
    case 1114:
      return "timestamp without time zone";
    case 1700:
      return typmod > 4 ? fmt::format("numeric({},{})", (typmod - 4) >> 16, (typmod - 4) & 0xffff)
                        : "numeric";
    case 19:
      return "name";
    case 18:
      return "\"char\"";
    case 2205:
      return "regclass";
    default:
      break;
  }
  for (const auto& t : Types()) {
    if (t.oid == oid && t.elem) return FormatType(t.elem, -1) + "[]";
  }
  return "???";
}

std::string Quote(const std::string& ident) {
  bool plain =
      !ident.empty() && (std::islower(static_cast<unsigned char>(ident[0])) || ident[0] == '_');
  for (char c : ident)
    plain &= std::islower(static_cast<unsigned char>(c)) ||
             std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  if (plain) return ident;
  std::string out = "\"";
  for (char c : ident) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string ColumnList(const TableSchema& t, const std::vector<int>& cols,
                       const std::vector<bool>* desc) {
  std::string out;
  for (size_t i = 0; i < cols.size(); i++) {
    out += (i ? ", " : "") + Quote(t.columns[cols[i]].name);
    if (desc && (*desc)[i]) out += " DESC";
  }
  return out;
}

Value Arr(std::vector<Value> v) { return Value::Array(std::move(v)); }
Value T(const std::string& s) { return Value::Text(s); }
Value O(int64_t v) { return Value::Int64(v); }
Value I(int64_t v) { return Value::Int32(v); }
Value B(bool b) { return Value::Bool(b); }

}  // namespace

// The session's relations: tables (with their indexes) and views, by oid.
struct PgRelations {
  std::vector<TableSchema> tables;
  std::vector<std::pair<std::string, std::string>> views;  // name, query
  std::vector<TableSchema> system;                         // wattdb_* and pg_* views

  explicit PgRelations(const DatabaseCatalog& db) {
    tables = db.Tables();
    for (auto& [n, q] : db.Views()) views.emplace_back(n, q);
    system = db.shared().SystemViews();
  }
  const TableSchema* TableByOid(int64_t oid) const {
    for (const auto& t : tables) {
      if (oid >= TableOid(t) && oid < TableOid(t) + 1000) return &t;
    }
    return nullptr;
  }
  // Every relation oid.
  std::vector<int64_t> Oids() const {
    std::vector<int64_t> out;
    for (const auto& t : tables) {
      out.push_back(TableOid(t));
      if (!t.HasHiddenKey()) out.push_back(PkeyOid(t));
      for (const auto& ix : t.indexes) out.push_back(IndexOid(t, ix));
    }
    for (size_t i = 0; i < views.size(); i++) out.push_back(ViewOid(i));
    for (const auto& s : system) out.push_back(SystemViewOid(s.id));
    return out;
  }
  // Relation name of any oid (tables, indexes, views, system views), if known.
  std::optional<std::string> Name(int64_t oid) const {
    if (const TableSchema* t = TableByOid(oid)) {
      if (oid == TableOid(*t)) return t->name;
      if (oid == PkeyOid(*t)) return t->name + "_pkey";
      for (const auto& ix : t->indexes) {
        if (oid == IndexOid(*t, ix)) return ix.name;
      }
      return std::nullopt;
    }
    for (size_t i = 0; i < views.size(); i++) {
      if (oid == ViewOid(i)) return views[i].first;
    }
    for (const auto& s : system) {
      if (oid == SystemViewOid(s.id)) return s.name;
    }
    return std::nullopt;
  }
};

void RegisterPgCatalog(Catalog& catalog) {
  const auto& v = Views();
  for (size_t i = 0; i < v.size(); i++) {
    TableSchema t;
    t.id = kFirstPgCatalogId + static_cast<TableId>(i);
    t.name = v[i].name;
    for (const auto& [n, ty] : v[i].cols) t.columns.push_back({n, ty});
    t.key_columns = {0};
    catalog.AddSystemView(std::move(t));
  }
}

bool IsPgCatalogView(const std::string& name) { return IdOf(name) != 0; }

bool IsPgCatalogTable(TableId table) {
  return table >= kFirstPgCatalogId && table < kFirstPgCatalogId + Views().size();
}

PgCatalog::PgCatalog(const DatabaseCatalog& db, Cluster& cluster) : db_(db), cluster_(cluster) {}
PgCatalog::~PgCatalog() = default;

const PgRelations& PgCatalog::Relations() {
  if (!rel_) rel_ = std::make_unique<PgRelations>(db_);
  return *rel_;
}

std::map<TableId, uint64_t> PgCatalog::TableBytes() const {
  std::map<SegmentId, uint64_t> seg_bytes;
  for (const auto& n : cluster_.registry().Snapshot()) {
    for (const auto& s : n.segments) seg_bytes[s.id] = s.bytes;
  }
  std::map<TableId, uint64_t> bytes;
  for (const auto& s : cluster_.catalog().AllSegments()) bytes[s.table] += seg_bytes[s.id];
  return bytes;
}

PgRelRows PgCatalog::NamespaceRows() {
  PgRelRows rows;
  Value null;
  for (auto [oid, n] :
       std::vector<std::pair<int64_t, const char*>>{{kPgCatalogNs, "pg_catalog"},
                                                    {kPublicNs, "public"},
                                                    {kToastNs, "pg_toast"},
                                                    {kInfoSchemaNs, "information_schema"}}) {
    rows.push_back({O(oid), T(n), O(oid == kPublicNs ? kDatabaseOwner : kOwner), null});
  }
  return rows;
}

PgRelRows PgCatalog::ClassRows() {
  PgRelRows rows;
  Value null;
  const DatabaseCatalog& db = db_;
  const PgRelations& rel = Relations();
  std::map<TableId, uint64_t> bytes = TableBytes();
  auto add = [&](int64_t oid, const std::string& n, int64_t ns, int64_t am, const char* kind,
                 int natts, bool has_index, double tuples, int64_t pages) {
    rows.push_back({O(oid),
                    T(n),
                    O(ns),
                    O(0),
                    O(0),
                    O(kOwner),
                    O(am),
                    O(oid),
                    O(0),
                    I(pages),
                    Value::Double(tuples),
                    I(0),
                    O(0),
                    B(has_index),
                    B(false),
                    T("p"),
                    T(kind),
                    I(natts),
                    I(0),
                    B(false),
                    B(false),
                    B(false),
                    B(false),
                    B(false),
                    B(true),
                    T(std::string(kind) == "i" ? "n" : "d"),
                    B(false),
                    O(0),
                    null,
                    null,
                    null});
  };
  for (const auto& t : rel.tables) {
    int natts = 0;
    for (const auto& c : t.columns) natts += !c.hidden;
    double est = db.EstimateRows(t);
    add(TableOid(t), t.name, kPublicNs, kHeapAm, "r", natts, true, est,
        static_cast<int64_t>((bytes[t.id] + 8191) / 8192));
    if (!t.HasHiddenKey())
      add(PkeyOid(t), t.name + "_pkey", kPublicNs, kBtreeAm, "i", t.key_columns.size(), false, est,
          1);
    for (const auto& ix : t.indexes) {
      add(IndexOid(t, ix), ix.name, kPublicNs, kBtreeAm, "i",
          static_cast<int>(ix.spec.columns.size()), false, est, 1);
    }
  }
  for (size_t i = 0; i < rel.views.size(); i++)
    add(ViewOid(i), rel.views[i].first, kPublicNs, 0, "v", 0, false, 0, 0);
  for (const auto& s : rel.system) {
    // WattDB's own views (wattdb_*) are system relations too: \dS lists them, \d does not.
    add(SystemViewOid(s.id), s.name, kPgCatalogNs, 0, "v", static_cast<int>(s.columns.size()),
        false, 0, 0);
  }
  return rows;
}

PgRelRows PgCatalog::AttributeRows() {
  PgRelRows rows;
  Value null;
  const DatabaseCatalog& db = db_;
  const PgRelations& rel = Relations();
  auto add = [&](int64_t rel_oid, const Column& c, int num, bool has_def) {
    int64_t typ = c.type.PgOid();
    bool text = c.type.id == TypeId::kText;
    rows.push_back({O(rel_oid),
                    T(c.name),
                    O(typ),
                    I(-1),
                    I(c.type.PgLen()),
                    I(num),
                    I(c.type.id == TypeId::kArray),
                    I(c.type.PgTypmod()),
                    B(c.type.PgLen() > 0),
                    T("i"),
                    T(c.type.PgLen() > 0              ? "p"
                      : c.type.id == TypeId::kNumeric ? "m"
                                                      : "x"),
                    T(""),
                    B(c.not_null),
                    B(has_def),
                    B(false),
                    T(""),
                    T(""),
                    B(false),
                    B(true),
                    I(0),
                    O(text ? kDefaultCollation : 0),
                    null});
  };
  for (const auto& t : rel.tables) {
    int num = 0;
    for (const auto& c : t.columns) {
      if (c.hidden) continue;
      add(TableOid(t), c, ++num, !c.default_sql.empty() || c.serial);
    }
    auto index_atts = [&](int64_t oid, const std::vector<int>& cols) {
      for (size_t i = 0; i < cols.size(); i++)
        add(oid, t.columns[cols[i]], static_cast<int>(i + 1), false);
    };
    if (!t.HasHiddenKey()) index_atts(PkeyOid(t), t.key_columns);
    for (const auto& ix : t.indexes) index_atts(IndexOid(t, ix), ix.spec.columns);
  }
  for (const auto& s : rel.system) {
    for (size_t i = 0; i < s.columns.size(); i++)
      add(SystemViewOid(s.id), s.columns[i], static_cast<int>(i + 1), false);
  }
  // A view's columns are those of its query, bound now.
  for (size_t v = 0; v < rel.views.size(); v++) {
    auto stmts = sql::Parse(rel.views[v].second);
    if (!stmts.ok() || stmts->size() != 1 || !std::holds_alternative<sql::SelectStmt>((*stmts)[0]))
      continue;
    auto bound = plan::BindSelect(std::get<sql::SelectStmt>((*stmts)[0]), db);
    if (!bound.ok()) continue;
    for (size_t i = 0; i < bound->types.size(); i++) {
      add(ViewOid(v), Column{bound->names[i], bound->types[i]}, static_cast<int>(i + 1), false);
    }
  }
  return rows;
}

PgRelRows PgCatalog::AttrdefRows() {
  PgRelRows rows;
  const PgRelations& rel = Relations();
  for (const auto& t : rel.tables) {
    int num = 0;
    for (const auto& c : t.columns) {
      if (c.hidden) continue;
      num++;
      std::string def =
          c.serial ? "nextval('" + t.name + "_" + c.name + "_seq'::regclass)" : c.default_sql;
      if (!def.empty())
        rows.push_back({O(TableOid(t) + 500 + num), O(TableOid(t)), I(num), T(def)});
    }
  }
  return rows;
}

PgRelRows PgCatalog::TypeRows() {
  PgRelRows rows;
  for (const auto& ty : Types()) {
    bool arr = ty.name[0] == '_';
    rows.push_back({O(ty.oid), T(ty.name), O(kPgCatalogNs), O(kOwner), I(ty.len),
                    B(ty.len > 0 && ty.len <= 8), T("b"), T(ty.category), B(false), B(true), T(","),
                    O(0), O(ty.elem), O(0), B(false), O(0), I(-1), I(arr ? 1 : 0),
                    O(std::string(ty.category) == "S" ? kDefaultCollation : 0)});
  }
  return rows;
}

PgRelRows PgCatalog::IndexOrConstraintRows(const std::string& name) {
  PgRelRows rows;
  Value null;
  const PgRelations& rel = Relations();
  auto attnums = [](const TableSchema& t, const std::vector<int>& cols) {
    std::vector<Value> out;
    for (int c : cols) {
      int num = 0;
      for (int i = 0; i <= c; i++) num += !t.columns[i].hidden;
      out.push_back(I(num));
    }
    return out;
  };
  for (const auto& t : rel.tables) {
    struct Idx {
      int64_t oid;
      std::string name;
      std::vector<int> cols;
      bool unique, primary, constraint;
    };
    std::vector<Idx> idx;
    if (!t.HasHiddenKey())
      idx.push_back({PkeyOid(t), t.name + "_pkey", t.key_columns, true, true, true});
    for (const auto& ix : t.indexes)
      idx.push_back({IndexOid(t, ix), ix.name, ix.spec.columns, ix.unique, false, ix.constraint});
    for (const auto& x : idx) {
      if (name == "pg_index") {
        rows.push_back({O(x.oid), O(TableOid(t)), I(static_cast<int64_t>(x.cols.size())),
                        I(static_cast<int64_t>(x.cols.size())), B(x.unique), B(false), B(x.primary),
                        B(false), B(true), B(false), B(true), B(false), B(true), B(true), B(false),
                        Arr(attnums(t, x.cols)), null, null, null});
      } else if (x.constraint) {
        rows.push_back({O(x.oid),
                        T(x.name),
                        O(kPublicNs),
                        T(x.primary ? "p" : "u"),
                        B(false),
                        B(false),
                        B(true),
                        O(TableOid(t)),
                        O(0),
                        O(x.oid),
                        O(0),
                        O(0),
                        T(" "),
                        T(" "),
                        T(" "),
                        B(true),
                        I(0),
                        B(true),
                        Arr(attnums(t, x.cols)),
                        null,
                        null});
      }
    }
  }
  return rows;
}

PgRelRows PgCatalog::AmRows() {
  PgRelRows rows;
  rows.push_back({O(kHeapAm), T("heap"), O(0), T("t")});
  rows.push_back({O(kBtreeAm), T("btree"), O(0), T("i")});
  return rows;
}

PgRelRows PgCatalog::CollationRows() {
  PgRelRows rows;
  Value null;
  rows.push_back({O(kDefaultCollation), T("default"), O(kPgCatalogNs), O(kOwner), T("d"), B(true),
                  I(-1), null, null});
  rows.push_back(
      {O(950), T("C"), O(kPgCatalogNs), O(kOwner), T("c"), B(true), I(-1), T("C"), T("C")});
  return rows;
}

PgRelRows PgCatalog::RolesRows() {
  PgRelRows rows;
  Value null;
  const DatabaseCatalog& db = db_;
  std::vector<std::string> users = RoleNames(db);
  for (size_t i = 0; i < users.size(); i++) {
    rows.push_back({O(RoleOid(users, i)), T(users[i]), B(true), B(true), B(true), B(true), B(true),
                    B(false), I(-1), T("********"), null, B(true), null});
  }
  return rows;
}

PgRelRows PgCatalog::DatabaseRows() {
  PgRelRows rows;
  Value null;
  const DatabaseCatalog& db = db_;
  std::vector<std::string> dbs = DatabaseNames(db);
  for (size_t i = 0; i < dbs.size(); i++) {
    rows.push_back({O(DatabaseOid(i)), T(dbs[i]), O(kOwner), I(6), T("c"), B(false), B(true), I(-1),
                    O(1663), T("C.UTF-8"), T("C.UTF-8"), null, null, null});
  }
  return rows;
}

PgRelRows PgCatalog::TablespaceRows() {
  PgRelRows rows;
  Value null;
  rows.push_back({O(1663), T("pg_default"), O(kOwner), null});
  return rows;
}

PgRelRows PgCatalog::StatActivityRows() {
  PgRelRows rows;
  Value null;
  const DatabaseCatalog& db = db_;
  std::vector<std::string> dbs = DatabaseNames(db), users = RoleNames(db);
  auto time = [&](int64_t us) { return us ? Value::Timestamp(us - kPgEpochUnixMicros) : Value(); };
  for (const auto& b : cluster_.activity().Snapshot()) {
    auto d = std::find(dbs.begin(), dbs.end(), b.datname);
    auto u = std::find(users.begin(), users.end(), b.usename);
    rows.push_back({d == dbs.end() ? null : O(DatabaseOid(d - dbs.begin())), T(b.datname), I(b.pid),
                    null, u == users.end() ? O(kOwner) : O(RoleOid(users, u - users.begin())),
                    T(b.usename), T(b.application_name),
                    b.client_addr.empty() ? null : T(b.client_addr), I(b.client_port),
                    time(b.backend_start_us), time(b.xact_start_us), time(b.query_start_us),
                    time(b.state_change_us), b.state == "active" ? null : T("Client"),
                    b.state == "active" ? null : T("ClientRead"), T(b.state), T(b.query),
                    T("client backend")});
  }
  return rows;
}

Result<PgRelRows> PgCatalog::Rows(TableId table) {
  const std::string name = Views()[table - kFirstPgCatalogId].name;
  // The catalogs WattDB fills in; the others (policies, publications, inheritance, ...) have
  // no WattDB counterpart and are empty.
  if (name == "pg_namespace") return NamespaceRows();
  if (name == "pg_class") return ClassRows();
  if (name == "pg_attribute") return AttributeRows();
  if (name == "pg_attrdef") return AttrdefRows();
  if (name == "pg_type") return TypeRows();
  if (name == "pg_index") return IndexOrConstraintRows(name);
  if (name == "pg_constraint") return IndexOrConstraintRows(name);
  if (name == "pg_am") return AmRows();
  if (name == "pg_collation") return CollationRows();
  if (name == "pg_roles") return RolesRows();
  if (name == "pg_database") return DatabaseRows();
  if (name == "pg_tablespace") return TablespaceRows();
  if (name == "pg_stat_activity") return StatActivityRows();
  return PgRelRows{};
}

namespace {

// pg_size_pretty: bytes below 10 kB, then kB, MB, GB, TB, each rounded half up, as in
// PostgreSQL.
Value SizePretty(int64_t size) {
  static const char* kUnits[] = {"bytes", "kB", "MB", "GB", "TB", "PB"};
  int64_t abs = size < 0 ? -size : size;
  if (abs < 10 * 1024) return T(fmt::format("{} bytes", size));
  int64_t v = size;
  int u = 0;
  while (u < 5) {
    int64_t half = (v >= 0 ? (v + 512) : (v - 512)) / 1024;  // round half away from zero
    v = half;
    u++;
    if ((v < 0 ? -v : v) < 10 * 1024) break;
  }
  return T(fmt::format("{} {}", v, kUnits[u]));
}

}  // namespace

Result<Value> PgCatalog::Call(const std::string& name, const std::vector<Value>& args) {
  for (const auto& a : args) {
    if (a.is_null() && name != "pg_get_expr") return Value();
  }
  auto oid = [&](size_t i) -> int64_t {
    return args[i].type() == TypeId::kText ? -1 : args[i].as_int();
  };
  if (name == "regclass") {
    if (args[0].type() == TypeId::kText) return args[0];
    auto n = Relations().Name(oid(0));
    return T(n ? *n : std::to_string(oid(0)));
  }
  if (name == "regclass_in") {
    const PgRelations& rel = Relations();
    std::string want = args[0].ToText();
    if (want.rfind("public.", 0) == 0) want = want.substr(7);
    if (want.rfind("pg_catalog.", 0) == 0) want = want.substr(11);
    for (int64_t o : rel.Oids()) {
      if (rel.Name(o) == want) return O(o);
    }
    return Status::Sql(sqlstate::kUndefinedTable,
                       fmt::format("relation \"{}\" does not exist", args[0].ToText()));
  }
  if (name == "regtype")
    return args[0].type() == TypeId::kText ? args[0] : T(FormatType(oid(0), -1));
  if (name == "regnamespace") {
    int64_t o = oid(0);
    return T(o == kPgCatalogNs ? "pg_catalog" : o == kPublicNs ? "public" : std::to_string(o));
  }
  if (name == "regproc" || name == "regrole") return T(args[0].ToText());
  if (name == "pg_get_userbyid") {
    if (oid(0) == kDatabaseOwner) return T("pg_database_owner");
    return T(oid(0) == kOwner ? "wattdb" : "unknown (OID=" + std::to_string(oid(0)) + ")");
  }
  if (name == "pg_table_is_visible" || name == "pg_function_is_visible" ||
      name == "pg_type_is_visible")
    return B(true);
  if (name == "pg_relation_is_publishable") return B(false);
  if (name == "format_type") return T(FormatType(oid(0), args[1].as_int()));
  if (name == "pg_get_expr") return args[0].is_null() ? Value() : T(args[0].ToText());
  if (name == "pg_encoding_to_char") return T(args[0].as_int() == 6 ? "UTF8" : "SQL_ASCII");
  if (name == "pg_get_statisticsobjdef_columns" || name == "col_description" ||
      name == "obj_description" || name == "shobj_description") {
    return Value();
  }
  const PgRelations& rel = Relations();
  if (name == "pg_get_indexdef" || name == "pg_get_constraintdef") {
    const TableSchema* t = rel.TableByOid(oid(0));
    if (!t) return Value();
    int col = name == "pg_get_indexdef" && args.size() > 1 ? static_cast<int>(args[1].as_int()) : 0;
    auto def = [&](const std::string& n, const std::vector<int>& cols,
                   const std::vector<bool>* desc, bool unique, bool primary) -> Value {
      if (col > 0)
        return col <= static_cast<int>(cols.size()) ? T(Quote(t->columns[cols[col - 1]].name))
                                                    : Value();
      if (name == "pg_get_constraintdef") {
        return T(fmt::format("{} ({})", primary ? "PRIMARY KEY" : "UNIQUE",
                             ColumnList(*t, cols, nullptr)));
      }
      return T(fmt::format("CREATE {}INDEX {} ON {} USING btree ({})", unique ? "UNIQUE " : "",
                           Quote(n), Quote(t->name), ColumnList(*t, cols, desc)));
    };
    if (!t->HasHiddenKey() && oid(0) == PkeyOid(*t))
      return def(t->name + "_pkey", t->key_columns, nullptr, true, true);
    for (const auto& ix : t->indexes) {
      if (oid(0) == IndexOid(*t, ix))
        return def(ix.name, ix.spec.columns, &ix.spec.desc, ix.unique, false);
    }
    return Value();
  }
  if (name == "pg_get_viewdef") {
    for (size_t i = 0; i < rel.views.size(); i++) {
      if (oid(0) == ViewOid(i)) return T(" " + rel.views[i].second + ";");
    }
    return Value();
  }
  if (name == "pg_relation_size" || name == "pg_table_size" || name == "pg_total_relation_size" ||
      name == "pg_indexes_size") {
    const TableSchema* t = rel.TableByOid(oid(0));
    if (!t || name == "pg_indexes_size" || oid(0) != TableOid(*t)) return O(0);
    return O(static_cast<int64_t>(TableBytes()[t->id]));
  }
  if (name == "pg_size_pretty") {
    Int128 v = args[0].ToDecimal().v;
    return SizePretty(v > INT64_MAX ? INT64_MAX : static_cast<int64_t>(v));
  }
  return Status::Sql(sqlstate::kUndefinedFunction, fmt::format("function {} does not exist", name));
}

}  // namespace wattdb::master
