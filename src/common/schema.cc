#include "common/schema.h"

#include "common/bytes.h"

namespace wattdb {

int TableSchema::ColumnIndex(const std::string& n) const {
  for (size_t i = 0; i < columns.size(); i++) {
    if (columns[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

int TableSchema::VisibleColumns() const {
  int n = 0;
  for (const auto& c : columns) n += !c.hidden;
  return n;
}

void TableSchema::Serialize(std::string* out) const {
  ByteWriter w(out);
  w.U8(1);  // format version
  w.VarU64(id);
  w.Str(name);
  w.VarU64(columns.size());
  for (const auto& c : columns) {
    w.Str(c.name);
    w.U8(static_cast<uint8_t>(c.type.id));
    w.VarI64(c.type.max_len);
    w.U8((c.not_null ? 1 : 0) | (c.hidden ? 2 : 0) | (c.default_sql.empty() ? 0 : 4) |
         (c.serial ? 8 : 0));
    if (!c.default_sql.empty()) w.Str(c.default_sql);
  }
  w.VarU64(key_columns.size());
  for (int k : key_columns) w.VarU64(k);
  // Optional trailing section (absent in records written before indexes existed).
  w.VarU64(next_index_id);
  w.VarU64(indexes.size());
  for (const auto& ix : indexes) {
    w.VarU64(ix.spec.id);
    w.Str(ix.name);
    w.U8((ix.unique ? 1 : 0) | (ix.constraint ? 2 : 0));
    w.VarU64(ix.ready_ts);
    w.VarU64(ix.spec.columns.size());
    for (size_t i = 0; i < ix.spec.columns.size(); i++) {
      w.VarU64(ix.spec.columns[i]);
      w.U8(ix.spec.desc[i] ? 1 : 0);
    }
  }
  // Optional trailing section (absent in records written before replicas existed).
  w.VarU64(replicas);
}

const IndexDef* TableSchema::FindIndex(const std::string& index_name) const {
  for (const auto& ix : indexes) {
    if (ix.name == index_name) return &ix;
  }
  return nullptr;
}

Result<TableSchema> TableSchema::Deserialize(std::string_view in) {
  ByteReader r(in);
  TableSchema t;
  uint8_t version;
  uint64_t id, n;
  auto bad = [] { return Status::Corruption("table schema record does not decode"); };
  if (!r.U8(&version) || version != 1 || !r.VarU64(&id) || !r.Str(&t.name) || !r.VarU64(&n)) {
    return bad();
  }
  t.id = static_cast<TableId>(id);
  for (uint64_t i = 0; i < n; i++) {
    Column c;
    uint8_t type, flags;
    int64_t len;
    if (!r.Str(&c.name) || !r.U8(&type) || !r.VarI64(&len) || !r.U8(&flags)) return bad();
    c.type = SqlType{static_cast<TypeId>(type), static_cast<int32_t>(len)};
    c.not_null = flags & 1;
    c.hidden = flags & 2;
    c.serial = flags & 8;
    if ((flags & 4) && !r.Str(&c.default_sql)) return bad();
    t.columns.push_back(std::move(c));
  }
  if (!r.VarU64(&n)) return bad();
  for (uint64_t i = 0; i < n; i++) {
    uint64_t k;
    if (!r.VarU64(&k) || k >= t.columns.size()) return bad();
    t.key_columns.push_back(static_cast<int>(k));
  }
  if (t.key_columns.empty()) return bad();
  if (r.empty()) return t;
  uint64_t next, nix;
  if (!r.VarU64(&next) || !r.VarU64(&nix) || nix > in.size()) return bad();
  t.next_index_id = static_cast<uint32_t>(next);
  for (uint64_t i = 0; i < nix; i++) {
    IndexDef ix;
    uint64_t id, ready, ncols;
    uint8_t unique;
    if (!r.VarU64(&id) || !r.Str(&ix.name) || !r.U8(&unique) || !r.VarU64(&ready) ||
        !r.VarU64(&ncols) || ncols > in.size()) {
      return bad();
    }
    ix.spec.id = static_cast<uint32_t>(id);
    ix.unique = unique & 1;
    ix.constraint = unique & 2;
    ix.ready_ts = ready;
    for (uint64_t c = 0; c < ncols; c++) {
      uint64_t col;
      uint8_t desc;
      if (!r.VarU64(&col) || col >= t.columns.size() || !r.U8(&desc)) return bad();
      ix.spec.columns.push_back(static_cast<int>(col));
      ix.spec.desc.push_back(desc != 0);
    }
    t.indexes.push_back(std::move(ix));
  }
  if (r.empty()) return t;
  uint64_t replicas;
  if (!r.VarU64(&replicas) || replicas > kMaxReplicas) return bad();
  t.replicas = static_cast<uint32_t>(replicas);
  return t;
}

}  // namespace wattdb
