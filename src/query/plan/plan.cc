#include "query/plan/plan.h"

#include "common/codec.h"

namespace wattdb::plan {

namespace {

const char* AggName(AggFunc f) {
  static const char* kNames[] = {"count(*)", "count", "sum", "min", "max", "avg", "string_agg"};
  return kNames[static_cast<int>(f)];
}

void WriteType(ByteWriter& w, const SqlType& t) {
  w.U8(static_cast<uint8_t>(t.id));
  w.VarI64(t.max_len);
}

bool ReadType(ByteReader& r, SqlType* t) {
  uint8_t id;
  int64_t len;
  if (!r.U8(&id) || id > static_cast<uint8_t>(TypeId::kArray) || !r.VarI64(&len)) return false;
  *t = SqlType{static_cast<TypeId>(id), static_cast<int32_t>(len)};
  return true;
}

void WriteExprs(ByteWriter& w, const std::vector<BoundExprPtr>& es) {
  w.VarU64(es.size());
  for (const auto& e : es) e->Serialize(w);
}

Status ReadExprs(ByteReader& r, std::vector<BoundExprPtr>* es) {
  uint64_t n;
  if (!r.VarU64(&n) || n > 100000) return Status::Corruption("plan does not decode");
  for (uint64_t i = 0; i < n; i++) {
    ASSIGN_OR_RETURN(BoundExprPtr e, BoundExpr::Deserialize(r));
    es->push_back(std::move(e));
  }
  return Status::OK();
}

}  // namespace

PlanPtr PlanNode::Clone() const {
  auto p = std::make_unique<PlanNode>();
  auto copy = [](const std::vector<BoundExprPtr>& es) {
    std::vector<BoundExprPtr> out;
    out.reserve(es.size());
    for (const auto& e : es) out.push_back(e->Clone());
    return out;
  };
  p->kind = kind;
  p->types = types;
  for (const auto& c : children) p->children.push_back(c->Clone());
  p->table = table;
  p->table_name = table_name;
  p->lo = lo;
  p->hi = hi;
  p->index = index;
  p->index_name = index_name;
  p->rows = rows;
  if (predicate) p->predicate = predicate->Clone();
  p->exprs = copy(exprs);
  p->groups = copy(groups);
  for (const auto& a : aggs) {
    p->aggs.push_back({a.func, a.arg ? a.arg->Clone() : nullptr, a.type, a.distinct,
                       a.separator ? a.separator->Clone() : nullptr});
  }
  p->agg_mode = agg_mode;
  for (const auto& k : keys) p->keys.push_back({k.expr->Clone(), k.desc, k.nulls_first});
  p->limit = limit;
  p->offset = offset;
  p->join_type = join_type;
  p->left_keys = copy(left_keys);
  p->right_keys = copy(right_keys);
  p->set_op = set_op;
  p->set_all = set_all;
  p->est_rows = est_rows;
  return p;
}

std::string PlanNode::ToString(int indent) const {
  std::string pad(indent * 2, ' ');
  std::string s = pad;
  auto list = [](const std::vector<BoundExprPtr>& es) {
    std::string o;
    for (size_t i = 0; i < es.size(); i++) o += (i ? ", " : "") + es[i]->ToString();
    return o;
  };
  switch (kind) {
    case Kind::kScan:
      if (index) {
        s += fmt::format("Index Scan {} using {}", table_name, index_name);
      } else {
        s += fmt::format("Scan {}{}", table_name,
                         lo.empty() && hi.empty() ? "" : " (key range pruned)");
      }
      break;
    case Kind::kValues:
      s += fmt::format("Values rows={}", rows.size());
      break;
    case Kind::kFilter:
      s += "Filter " + predicate->ToString();
      break;
    case Kind::kProject:
      s += "Project " + list(exprs);
      break;
    case Kind::kAggregate: {
      static const char* kModes[] = {"HashAggregate", "PartialAggregate", "FinalAggregate"};
      s +=
          std::string(kModes[static_cast<int>(agg_mode)]) + " groups=[" + list(groups) + "] aggs=[";
      for (size_t i = 0; i < aggs.size(); i++) {
        s += (i ? ", " : "") + std::string(AggName(aggs[i].func));
        if (aggs[i].arg)
          s += std::string("(") + (aggs[i].distinct ? "DISTINCT " : "") + aggs[i].arg->ToString() +
               ")";
      }
      s += "]";
      break;
    }
    case Kind::kSort: {
      s += "Sort ";
      for (size_t i = 0; i < keys.size(); i++) {
        s += (i ? ", " : "") + keys[i].expr->ToString() + (keys[i].desc ? " DESC" : "");
      }
      break;
    }
    case Kind::kLimit:
      s += fmt::format("Limit {} offset {}", limit, offset);
      break;
    case Kind::kHashJoin:
    case Kind::kNestedLoopJoin: {
      s += kind == Kind::kHashJoin ? "HashJoin" : "NestedLoopJoin";
      s += join_type == JoinType::kLeft ? " left" : " inner";
      if (!left_keys.empty()) s += " keys=[" + list(left_keys) + "] = [" + list(right_keys) + "]";
      if (predicate) s += " on " + predicate->ToString();
      break;
    }
    case Kind::kGenerateSeries:
      s += "GenerateSeries " + list(exprs);
      break;
    case Kind::kUnnest:
      s += "Unnest " + list(exprs);
      break;
    case Kind::kIndexJoin:
      s +=
          fmt::format("IndexJoin {} on {} keys=[{}]",
                      join_type == JoinType::kLeft ? "left" : "inner", table_name, list(left_keys));
      if (predicate) s += " filter " + predicate->ToString();
      break;
    case Kind::kExchange:
      s += "Exchange";
      break;
    case Kind::kOffload:
      s += index ? fmt::format("Offload to node {}", index) : "Offload";
      break;
    case Kind::kPartition:
      s += fmt::format("Partition per segment of {} on [{}]", table_name, list(exprs));
      break;
    case Kind::kGather:
      s += fmt::format("Gather per segment of {}", table_name);
      break;
    case Kind::kSetOp: {
      static const char* kOps[] = {"Union", "Except", "Intersect"};
      s += std::string(kOps[static_cast<int>(set_op)]) + (set_all ? " all" : "");
      break;
    }
  }
  if (est_rows >= 0) s += fmt::format("  (rows={:.0f})", est_rows);
  s += "\n";
  for (const auto& c : children) s += c->ToString(indent + 1);
  return s;
}

void PlanNode::Serialize(std::string* out) const {
  ByteWriter w(out);
  w.U8(1);  // format version
  SerializeTo(w);
}

const std::string& PlanNode::Encoded() const {
  if (auto kept = encoded_.load(std::memory_order_acquire)) return *kept;
  auto made = std::make_shared<std::string>();
  Serialize(made.get());
  std::shared_ptr<const std::string> expected;
  std::shared_ptr<const std::string> mine = std::move(made);
  // Two first calls at once: the first kept stays (its string is never freed before the node).
  if (encoded_.compare_exchange_strong(expected, mine, std::memory_order_acq_rel)) return *mine;
  return *expected;
}

Result<PlanPtr> PlanNode::Deserialize(std::string_view in) {
  ByteReader r(in);
  uint8_t v;
  if (!r.U8(&v) || v != 1) return Status::Corruption("unknown plan format");
  ASSIGN_OR_RETURN(PlanPtr p, DeserializeFrom(r, 0));
  if (!r.empty()) return Status::Corruption("trailing bytes after plan");
  return p;
}

void PlanNode::SerializeTo(ByteWriter& w) const {
  w.U8(static_cast<uint8_t>(kind));
  w.VarU64(types.size());
  for (const auto& t : types) WriteType(w, t);
  w.VarU64(table);
  w.Str(table_name);
  w.Str(lo);
  w.Str(hi);
  w.VarU64(index);
  w.Str(index_name);
  w.VarU64(rows.size());
  for (const auto& row : rows) {
    std::string enc;
    EncodeRow(row, &enc);
    w.Str(enc);
  }
  w.U8(predicate ? 1 : 0);
  if (predicate) predicate->Serialize(w);
  WriteExprs(w, exprs);
  WriteExprs(w, groups);
  w.VarU64(aggs.size());
  for (const auto& a : aggs) {
    w.U8(static_cast<uint8_t>(a.func));
    WriteType(w, a.type);
    w.U8((a.arg ? 1 : 0) | (a.distinct ? 2 : 0) | (a.separator ? 4 : 0));
    if (a.arg) a.arg->Serialize(w);
    if (a.separator) a.separator->Serialize(w);
  }
  w.VarU64(keys.size());
  for (const auto& k : keys) {
    k.expr->Serialize(w);
    w.U8((k.desc ? 1 : 0) | (k.nulls_first ? 2 : 0));
  }
  w.VarI64(limit);
  w.VarI64(offset);
  w.U8(static_cast<uint8_t>(join_type));
  WriteExprs(w, left_keys);
  WriteExprs(w, right_keys);
  w.U8(static_cast<uint8_t>(set_op) | (set_all ? 0x80 : 0));
  w.U8(static_cast<uint8_t>(agg_mode));
  w.VarI64(static_cast<int64_t>(est_rows));
  w.VarU64(children.size());
  for (const auto& c : children) c->SerializeTo(w);
}

Result<PlanPtr> PlanNode::DeserializeFrom(ByteReader& r, int depth) {
  auto bad = [] { return Status::Corruption("plan does not decode"); };
  if (depth > 64) return bad();
  auto p = std::make_unique<PlanNode>();
  uint8_t kind;
  uint64_t n, table;
  if (!r.U8(&kind) || kind > static_cast<uint8_t>(Kind::kGather) || !r.VarU64(&n) || n > 10000) {
    return bad();
  }
  p->kind = static_cast<Kind>(kind);
  p->types.resize(n);
  for (auto& t : p->types) {
    if (!ReadType(r, &t)) return bad();
  }
  uint64_t index;
  if (!r.VarU64(&table) || !r.Str(&p->table_name) || !r.Str(&p->lo) || !r.Str(&p->hi) ||
      !r.VarU64(&index) || !r.Str(&p->index_name) || !r.VarU64(&n) || n > 10000000) {
    return bad();
  }
  p->table = static_cast<TableId>(table);
  p->index = static_cast<uint32_t>(index);
  for (uint64_t i = 0; i < n; i++) {
    std::string_view enc;
    if (!r.Str(&enc)) return bad();
    std::vector<Value> row;
    RETURN_NOT_OK(DecodeRow(enc, &row));
    p->rows.push_back(std::move(row));
  }
  uint8_t has;
  if (!r.U8(&has)) return bad();
  if (has) {
    ASSIGN_OR_RETURN(p->predicate, BoundExpr::Deserialize(r));
  }
  RETURN_NOT_OK(ReadExprs(r, &p->exprs));
  RETURN_NOT_OK(ReadExprs(r, &p->groups));
  if (!r.VarU64(&n) || n > 10000) return bad();
  for (uint64_t i = 0; i < n; i++) {
    AggSpec a;
    uint8_t f;
    if (!r.U8(&f) || f > static_cast<uint8_t>(AggFunc::kStringAgg) || !ReadType(r, &a.type) ||
        !r.U8(&has)) {
      return bad();
    }
    a.func = static_cast<AggFunc>(f);
    a.distinct = has & 2;
    if (has & 1) {
      ASSIGN_OR_RETURN(a.arg, BoundExpr::Deserialize(r));
    }
    if (has & 4) {
      ASSIGN_OR_RETURN(a.separator, BoundExpr::Deserialize(r));
    }
    p->aggs.push_back(std::move(a));
  }
  if (!r.VarU64(&n) || n > 10000) return bad();
  for (uint64_t i = 0; i < n; i++) {
    SortKey k;
    ASSIGN_OR_RETURN(k.expr, BoundExpr::Deserialize(r));
    uint8_t flags;
    if (!r.U8(&flags)) return bad();
    k.desc = flags & 1;
    k.nulls_first = flags & 2;
    p->keys.push_back(std::move(k));
  }
  uint8_t jt, so, mode;
  int64_t est;
  if (!r.VarI64(&p->limit) || !r.VarI64(&p->offset) || !r.U8(&jt) ||
      jt > static_cast<uint8_t>(JoinType::kLeft)) {
    return bad();
  }
  p->join_type = static_cast<JoinType>(jt);
  RETURN_NOT_OK(ReadExprs(r, &p->left_keys));
  RETURN_NOT_OK(ReadExprs(r, &p->right_keys));
  if (!r.U8(&so) || (so & 0x7f) > static_cast<uint8_t>(SetOpType::kIntersect) || !r.U8(&mode) ||
      mode > static_cast<uint8_t>(AggMode::kFinal) || !r.VarI64(&est) || !r.VarU64(&n) ||
      n > 1000) {
    return bad();
  }
  p->agg_mode = static_cast<AggMode>(mode);
  p->set_op = static_cast<SetOpType>(so & 0x7f);
  p->set_all = so & 0x80;
  p->est_rows = static_cast<double>(est);
  if (p->left_keys.size() != p->right_keys.size()) return bad();
  for (uint64_t i = 0; i < n; i++) {
    ASSIGN_OR_RETURN(PlanPtr c, DeserializeFrom(r, depth + 1));
    p->children.push_back(std::move(c));
  }
  return p;
}

}  // namespace wattdb::plan
