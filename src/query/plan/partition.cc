#include "query/plan/partition.h"

#include <algorithm>

#include "common/codec.h"
#include "query/plan/fragment.h"
#include "query/plan/offload.h"

namespace wattdb::plan {

namespace {

using Kind = PlanNode::Kind;

// The scan column that output column `col` of chain `p` passes on unchanged; -1 if computed.
int ScanColumn(const PlanNode& p, int col) {
  switch (p.kind) {
    case Kind::kScan:
      return col;
    case Kind::kFilter:
      return ScanColumn(*p.children[0], col);
    case Kind::kProject: {
      if (col < 0 || static_cast<size_t>(col) >= p.exprs.size()) return -1;
      const BoundExpr& e = *p.exprs[col];
      return e.kind == BoundExpr::Kind::kColumn ? ScanColumn(*p.children[0], e.column) : -1;
    }
    default:
      return -1;
  }
}

bool EncodeAlike(TypeId a, TypeId b) {
  auto integer = [](TypeId t) { return t == TypeId::kInt32 || t == TypeId::kInt64; };
  return a == b || (integer(a) && integer(b));
}

struct Side {
  const PlanNode* scan = nullptr;
  std::vector<int> cols;  // the scan columns of the join keys, pair by pair
  std::vector<int> pk;
};

// Side `a` as A and 1 - a as B: B's key is all the join columns, A's key starts with them.
bool Fits(const Side& a, const Side& b, std::vector<BoundExprPtr>* prefix) {
  size_t k = b.pk.size();
  if (k == 0 || k != b.cols.size() || a.pk.size() < k) return false;
  prefix->clear();
  for (size_t i = 0; i < k; i++) {
    auto pair = std::find(b.cols.begin(), b.cols.end(), b.pk[i]);
    if (pair == b.cols.end() || a.cols[pair - b.cols.begin()] != a.pk[i]) return false;
    TypeId ta = a.scan->types[a.pk[i]].id, tb = b.scan->types[b.pk[i]].id;
    if (!EncodeAlike(ta, tb)) return false;
    prefix->push_back(MakeColumn(a.pk[i], a.scan->types[a.pk[i]]));
  }
  return true;
}

// For a join that can be partitioned: the child whose table is A (0 or 1) and A's key prefix.
bool Partitionable(const PlanNode& j, const PartitionOptions& o, int* a_side,
                   std::vector<BoundExprPtr>* prefix) {
  if (j.kind != Kind::kHashJoin || j.join_type != PlanNode::JoinType::kInner || j.left_keys.empty())
    return false;
  Side sides[2];
  for (int s = 0; s < 2; s++) {
    const PlanNode& x = *j.children[s];
    if (x.kind != Kind::kExchange) return false;
    sides[s].scan = LeafScan(*x.children[0]);
    if (!sides[s].scan || sides[s].scan->index != 0) return false;
    for (const auto& e : s == 0 ? j.left_keys : j.right_keys) {
      int c = e->kind == BoundExpr::Kind::kColumn ? ScanColumn(*x.children[0], e->column) : -1;
      if (c < 0) return false;
      sides[s].cols.push_back(c);
    }
    sides[s].pk = o.key_columns(sides[s].scan->table);
  }
  // The larger input is A when either side could be.
  int first = j.children[0]->est_rows >= j.children[1]->est_rows ? 0 : 1;
  for (int a : {first, 1 - first}) {
    if (Fits(sides[a], sides[1 - a], prefix)) {
      *a_side = a;
      return true;
    }
  }
  return false;
}

PlanPtr Partition(PlanPtr subtree, int a_side, std::vector<BoundExprPtr> prefix) {
  auto xs = Exchanges(*subtree);
  const PlanNode* scan =
      xs[a_side]->children.empty() ? nullptr : LeafScan(*xs[a_side]->children[0]);
  auto p = std::make_unique<PlanNode>();
  p->kind = Kind::kPartition;
  p->types = subtree->types;
  p->est_rows = subtree->est_rows;
  p->index = static_cast<uint32_t>(a_side);
  p->table = scan->table;
  p->table_name = scan->table_name;
  p->exprs = std::move(prefix);
  p->children.push_back(std::move(subtree));
  return p;
}

// The join below an aggregation's filters and projections, if any.
PlanNode* JoinBelow(PlanNode& agg) {
  PlanNode* p = agg.children[0].get();
  while (p->kind == Kind::kFilter || p->kind == Kind::kProject) {
    if (p->predicate && !NodeSafe(*p->predicate)) return nullptr;
    for (const auto& e : p->exprs) {
      if (!NodeSafe(*e)) return nullptr;
    }
    p = p->children[0].get();
  }
  return p->kind == Kind::kHashJoin ? p : nullptr;
}

void Place(PlanPtr& p, const PartitionOptions& o) {
  int a_side;
  std::vector<BoundExprPtr> prefix;
  if (p->kind == Kind::kAggregate && Splittable(*p)) {
    PlanNode* j = JoinBelow(*p);
    if (j && Partitionable(*j, o, &a_side, &prefix) && (!j->predicate || NodeSafe(*j->predicate))) {
      p = SplitAggregate(std::move(p), [&](PlanPtr partial) {
        return Partition(std::move(partial), a_side, std::move(prefix));
      });
      return;
    }
  }
  if (p->kind == Kind::kExchange || p->kind == Kind::kPartition) return;
  for (auto& c : p->children) Place(c, o);
}

// Intersects [*lo, *hi) with [lo, hi) ("" = unbounded); false if empty.
bool Intersect(std::string* lo, std::string* hi, const std::string& l, const std::string& h) {
  *lo = std::max(*lo, l);
  if (hi->empty() || (!h.empty() && h < *hi)) *hi = h;
  return hi->empty() || *lo < *hi;
}

}  // namespace

PlanPtr PartitionJoins(PlanPtr plan, const PartitionOptions& options) {
  if (options.key_columns) Place(plan, options);
  return plan;
}

bool NarrowToPart(const PlanNode& partition, PlanNode* subtree, const std::string& lo,
                  const std::string& hi) {
  std::vector<SqlType> types;
  for (const auto& e : partition.exprs) types.push_back(e->type);
  auto prefix = [&](const std::string& key) -> std::string {
    auto n = KeyPrefixBytes(key, types);
    return n.ok() ? key.substr(0, *n) : std::string();
  };
  std::string plo = lo.empty() ? "" : prefix(lo);
  std::string phi;  // "" unbounded: past every key whose prefix is that of hi
  if (!hi.empty()) {
    auto n = KeyPrefixBytes(hi, types);
    if (n.ok()) phi = hi.substr(0, *n) + std::string(1, '\0');  // keys are prefix-free
  }
  auto xs = Exchanges(*subtree);
  for (size_t i = 0; i < xs.size(); i++) {
    auto* scan = const_cast<PlanNode*>(LeafScan(*xs[i]->children[0]));
    if (!scan) return false;
    bool a = i == partition.index;
    if (!Intersect(&scan->lo, &scan->hi, a ? lo : plo, a ? hi : phi)) return false;
  }
  return true;
}

}  // namespace wattdb::plan
