#include "query/plan/fragment.h"

#include "common/small_containers.h"

namespace wattdb::plan {

namespace {

using Kind = PlanNode::Kind;

// Larger limits are sorted on the master only (each node would send that many rows).
constexpr int64_t kMaxPushedLimit = 100000;

bool Rewrite(PlanPtr& p, const PushDownOptions& pd);  // below

bool AllNodeSafe(const std::vector<BoundExprPtr>& es) {
  for (const auto& e : es) {
    if (!NodeSafe(*e)) return false;
  }
  return true;
}

// p's operator can run on a node above a node-side input.
bool Pushable(const PlanNode& p) {
  switch (p.kind) {
    case Kind::kFilter:
      return NodeSafe(*p.predicate);
    case Kind::kProject:
      return AllNodeSafe(p.exprs);
    default:
      return false;
  }
}

}  // namespace

bool Splittable(const PlanNode& p) {
  if (p.kind != Kind::kAggregate || p.agg_mode != AggMode::kComplete || !AllNodeSafe(p.groups))
    return false;
  for (const auto& a : p.aggs) {
    if (a.distinct || a.func == AggFunc::kStringAgg || (a.arg && !NodeSafe(*a.arg))) return false;
  }
  return true;
}

namespace {

PlanPtr Exchange(PlanPtr fragment) {
  auto x = std::make_unique<PlanNode>();
  x->kind = Kind::kExchange;
  x->types = fragment->types;
  x->est_rows = fragment->est_rows;
  x->children.push_back(std::move(fragment));
  return x;
}

}  // namespace

PlanPtr SplitAggregate(PlanPtr agg, const std::function<PlanPtr(PlanPtr)>& wrap) {
  size_t ng = agg->groups.size();
  auto final_agg = std::make_unique<PlanNode>();
  final_agg->kind = Kind::kAggregate;
  final_agg->agg_mode = AggMode::kFinal;
  final_agg->types = agg->types;
  final_agg->est_rows = agg->est_rows;
  for (size_t g = 0; g < ng; g++)
    final_agg->groups.push_back(MakeColumn(static_cast<int>(g), agg->groups[g]->type));
  for (const auto& a : agg->aggs) {
    AggSpec f;
    f.func = a.func;
    f.type = a.type;
    if (a.arg) f.arg = a.arg->Clone();  // its type picks the result's form
    final_agg->aggs.push_back(std::move(f));
  }
  agg->agg_mode = AggMode::kPartial;
  agg->types.resize(ng);
  for (size_t i = 0; i < agg->aggs.size(); i++) agg->types.push_back(SqlType{TypeId::kText});
  final_agg->children.push_back(wrap(std::move(agg)));
  return final_agg;
}

namespace {

// The aggregation split in two: FinalAggregate(Exchange(PartialAggregate(input))).
PlanPtr Split(PlanPtr agg) { return SplitAggregate(std::move(agg), Exchange); }

// Closes a node-side chain at child i of p.
void Close(PlanPtr& p, size_t i) { p->children[i] = Exchange(std::move(p->children[i])); }

// Group keys and arguments of `partial` that are expressions, not columns, are computed at
// the top of its node-side input (a Project) and read from there as columns: the rows that
// cross carry the values (length(pad): an integer) instead of the columns they are made of.
void ProjectArguments(PlanNode& partial) {
  bool any = false;
  for (const auto& g : partial.groups) any = any || g->kind != BoundExpr::Kind::kColumn;
  for (const auto& a : partial.aggs)
    any = any || (a.arg && a.arg->kind != BoundExpr::Kind::kColumn);
  if (!any) return;
  auto project = std::make_unique<PlanNode>();
  project->kind = Kind::kProject;
  project->est_rows = partial.children[0]->est_rows;
  auto move_out = [&](BoundExprPtr& e) {
    SqlType t = e->type;
    project->exprs.push_back(std::move(e));
    project->types.push_back(t);
    e = MakeColumn(static_cast<int>(project->exprs.size() - 1), t);
  };
  for (auto& g : partial.groups) move_out(g);
  for (auto& a : partial.aggs) {
    if (a.arg) move_out(a.arg);
  }
  project->children.push_back(std::move(partial.children[0]));
  partial.children[0] = std::move(project);
}

// The partial half of an aggregation, its input closed with an Exchange, run per segment on
// the reader's threads: Gather(PartialAggregate(Exchange(input))).
PlanPtr Gather(PlanPtr partial) {
  ProjectArguments(*partial);
  Close(partial, 0);
  auto g = std::make_unique<PlanNode>();
  g->kind = Kind::kGather;
  g->types = partial->types;
  g->est_rows = partial->est_rows;
  const PlanNode* scan = LeafScan(*partial->children[0]->children[0]);
  g->table = scan->table;
  g->table_name = scan->table_name;
  g->children.push_back(std::move(partial));
  return g;
}

// ORDER BY ... LIMIT over a node-side chain: each node sends its first limit + offset rows
// (a top-N sort there), and the master sorts those and applies the limit.
bool TopN(PlanPtr& p, const PushDownOptions& pd) {
  PlanNode& sort = *p->children[0];
  for (const auto& k : sort.keys) {
    if (!NodeSafe(*k.expr)) return false;
  }
  if (!Rewrite(sort.children[0], pd)) return true;
  auto node_sort = std::make_unique<PlanNode>();
  node_sort->kind = Kind::kSort;
  node_sort->types = sort.types;
  for (const auto& k : sort.keys)
    node_sort->keys.push_back({k.expr->Clone(), k.desc, k.nulls_first});
  node_sort->children.push_back(std::move(sort.children[0]));
  auto node_limit = std::make_unique<PlanNode>();
  node_limit->kind = Kind::kLimit;
  node_limit->types = sort.types;
  node_limit->limit = p->limit + p->offset;
  node_limit->children.push_back(std::move(node_sort));
  sort.children[0] = Exchange(std::move(node_limit));
  return true;
}

// Rewrites p's subtree. Returns whether p itself is a node-side chain (a remote scan with
// pushable operators above it) that the caller may extend or must close with an Exchange.
bool Rewrite(PlanPtr& p, const PushDownOptions& pd) {
  if (p->kind == Kind::kScan) return p->index == 0 && pd.remote(*p);
  if (p->kind == Kind::kExchange) return false;
  if (p->kind == Kind::kLimit && p->limit >= 0 && p->limit + p->offset <= kMaxPushedLimit &&
      p->children[0]->kind == Kind::kSort && pd.blocking && TopN(p, pd)) {
    return false;
  }
  std::vector<bool> chain(p->children.size());
  for (size_t i = 0; i < p->children.size(); i++) chain[i] = Rewrite(p->children[i], pd);
  if (p->children.size() == 1 && chain[0]) {
    if (Pushable(*p)) return true;
    if (Splittable(*p) && (pd.blocking || pd.gather)) {
      p = pd.blocking ? Split(std::move(p)) : SplitAggregate(std::move(p), Gather);
      return false;
    }
  }
  for (size_t i = 0; i < p->children.size(); i++) {
    if (chain[i]) Close(p, i);
  }
  return false;
}

}  // namespace

const PlanNode* LeafScan(const PlanNode& p) {
  if (p.kind == Kind::kScan) return &p;
  return p.children.size() == 1 ? LeafScan(*p.children[0]) : nullptr;
}

bool NodeSafe(const BoundExpr& e) {
  switch (e.kind) {
    case BoundExpr::Kind::kOuterColumn:
    case BoundExpr::Kind::kSubquery:
    case BoundExpr::Kind::kExists:
    case BoundExpr::Kind::kInSubquery:
    case BoundExpr::Kind::kArraySubquery:
      return false;
    case BoundExpr::Kind::kFunc:
      if (e.func == Func::kCatalog) return false;
      break;
    default:
      break;
  }
  for (const auto& c : e.children) {
    if (!NodeSafe(*c)) return false;
  }
  return true;
}

namespace {

void MarkColumns(const BoundExpr& e, std::vector<bool>* used) {
  if (e.kind == BoundExpr::Kind::kColumn && e.column >= 0 &&
      static_cast<size_t>(e.column) < used->size()) {
    (*used)[e.column] = true;
  }
  for (const auto& c : e.children) MarkColumns(*c, used);
}

}  // namespace

std::vector<bool> UsedScanColumns(const PlanNode& fragment) {
  SmallVector<const PlanNode*, 8> path;  // root to scan
  for (const PlanNode* p = &fragment;; p = p->children[0].get()) {
    path.push_back(p);
    if (p->kind == Kind::kScan) break;
    if (p->children.size() != 1) return {};
  }
  const PlanNode& scan = *path.back();
  std::vector<bool> used(scan.types.size(), false);
  // Filters pass the scan's columns through unchanged; the first other node consumes them.
  for (size_t i = path.size() - 1; i-- > 0;) {
    const PlanNode& p = *path[i];
    switch (p.kind) {
      case Kind::kFilter:
        MarkColumns(*p.predicate, &used);
        continue;
      case Kind::kProject:
        for (const auto& e : p.exprs) MarkColumns(*e, &used);
        return used;
      case Kind::kAggregate:
        for (const auto& e : p.groups) MarkColumns(*e, &used);
        for (const auto& a : p.aggs) {
          if (a.arg) MarkColumns(*a.arg, &used);
          if (a.separator) MarkColumns(*a.separator, &used);
        }
        return used;
      default:
        return std::vector<bool>(scan.types.size(), true);
    }
  }
  return std::vector<bool>(scan.types.size(), true);  // the scan's rows are the output
}

namespace {

// Adds the columns `e` reads to `used`; false if `e` may read others too (subqueries and
// outer references: their columns are not this row's).
bool ReadColumns(const BoundExpr& e, std::vector<bool>* used) {
  if (!NodeSafe(e)) return false;
  MarkColumns(e, used);
  return true;
}

bool ReadColumns(const std::vector<BoundExprPtr>& es, std::vector<bool>* used) {
  for (const auto& e : es) {
    if (!ReadColumns(*e, used)) return false;
  }
  return true;
}

// Which of p's input columns (children[0] then children[1], concatenated as joins see
// them) p reads to produce its `needed` output columns; all if p's kind is not known here.
std::vector<bool> InputColumns(const PlanNode& p, const std::vector<bool>& needed) {
  size_t width = 0;
  for (const auto& c : p.children) width += c->types.size();
  std::vector<bool> used(width, false);
  bool known = true;
  switch (p.kind) {
    case Kind::kFilter:
      used = needed;
      known = ReadColumns(*p.predicate, &used);
      break;
    case Kind::kSort:
      used = needed;
      for (const auto& k : p.keys) known = known && ReadColumns(*k.expr, &used);
      break;
    case Kind::kLimit:
    case Kind::kExchange:
    case Kind::kGather:
      used = needed;
      break;
    case Kind::kProject:
      for (size_t i = 0; i < p.exprs.size(); i++) {
        if (i < needed.size() && needed[i]) known = known && ReadColumns(*p.exprs[i], &used);
      }
      break;
    case Kind::kAggregate:
      known = p.agg_mode != AggMode::kFinal && ReadColumns(p.groups, &used);
      for (const auto& a : p.aggs) {
        if (a.arg) known = known && ReadColumns(*a.arg, &used);
        if (a.separator) known = known && ReadColumns(*a.separator, &used);
      }
      break;
    case Kind::kHashJoin:
    case Kind::kNestedLoopJoin: {
      size_t left = p.children[0]->types.size();
      std::vector<bool> right(width - left, false);
      for (size_t i = 0; i < width && i < needed.size(); i++) used[i] = needed[i];
      known = ReadColumns(p.left_keys, &used) && ReadColumns(p.right_keys, &right) &&
              (!p.predicate || ReadColumns(*p.predicate, &used));
      for (size_t i = 0; i < right.size(); i++) used[left + i] = used[left + i] || right[i];
      break;
    }
    default:
      known = false;
  }
  if (!known || used.size() != width) used.assign(width, true);
  return used;
}

// Below each Exchange, the columns nobody above reads are replaced by NULLs (a Project on
// top of the node's chain): they are neither decoded on the node nor sent.
void PruneExchanges(PlanPtr& p, const std::vector<bool>& needed) {
  if (p->kind == Kind::kExchange) {
    PlanPtr& chain = p->children[0];
    bool prune = false;
    for (size_t i = 0; i < chain->types.size(); i++)
      prune = prune || (i < needed.size() && !needed[i]);
    if (!prune || chain->kind == Kind::kProject) {
      if (prune) {  // a Project already: NULLs in place of the unread expressions
        for (size_t i = 0; i < chain->exprs.size(); i++) {
          if (!needed[i]) chain->exprs[i] = MakeConst(Value::Null(), chain->types[i]);
        }
      }
      return;
    }
    auto project = std::make_unique<PlanNode>();
    project->kind = Kind::kProject;
    project->types = chain->types;
    project->est_rows = chain->est_rows;
    for (size_t i = 0; i < chain->types.size(); i++) {
      project->exprs.push_back(needed[i] ? MakeColumn(static_cast<int>(i), chain->types[i])
                                         : MakeConst(Value::Null(), chain->types[i]));
    }
    project->children.push_back(std::move(chain));
    chain = std::move(project);
    return;
  }
  std::vector<bool> input = InputColumns(*p, needed);
  size_t at = 0;
  for (auto& c : p->children) {
    std::vector<bool> child(input.begin() + at, input.begin() + at + c->types.size());
    at += c->types.size();
    PruneExchanges(c, child);
  }
}

}  // namespace

PlanPtr PushDownFragments(PlanPtr plan, const PushDownOptions& pd) {
  if (Rewrite(plan, pd)) plan = Exchange(std::move(plan));
  PruneExchanges(plan, std::vector<bool>(plan->types.size(), true));
  return plan;
}

}  // namespace wattdb::plan
