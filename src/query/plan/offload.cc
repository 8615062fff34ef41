#include "query/plan/offload.h"

#include "query/plan/fragment.h"

namespace wattdb::plan {

namespace {

using Kind = PlanNode::Kind;

bool AllNodeSafe(const std::vector<BoundExprPtr>& es) {
  for (const auto& e : es) {
    if (!NodeSafe(*e)) return false;
  }
  return true;
}

// p's own expressions can be evaluated on a node.
bool ExprsNodeSafe(const PlanNode& p) {
  if (p.predicate && !NodeSafe(*p.predicate)) return false;
  if (!AllNodeSafe(p.exprs) || !AllNodeSafe(p.groups) || !AllNodeSafe(p.left_keys) ||
      !AllNodeSafe(p.right_keys)) {
    return false;
  }
  for (const auto& a : p.aggs) {
    if ((a.arg && !NodeSafe(*a.arg)) || (a.separator && !NodeSafe(*a.separator))) return false;
  }
  for (const auto& k : p.keys) {
    if (!NodeSafe(*k.expr)) return false;
  }
  return true;
}

// A blocking operator with work worth moving: not the merge of one partial state per segment
// (an aggregate without groups), nor the sort of the nodes' top-N rows.
bool Heavy(const PlanNode& p) {
  switch (p.kind) {
    case Kind::kAggregate:
      return !(p.agg_mode == AggMode::kFinal && p.groups.empty());
    case Kind::kSort: {
      const PlanNode& in = *p.children[0];
      return !(in.kind == Kind::kExchange && in.children[0]->kind == Kind::kLimit);
    }
    case Kind::kHashJoin:
    case Kind::kNestedLoopJoin:
    case Kind::kSetOp:
      return true;
    default:
      return false;
  }
}

struct Verdict {
  bool runs_on_node = false;  // the whole subtree can run on a helper
  bool blocking = false;      // it holds a blocking operator outside its Exchanges
};

Verdict Judge(const PlanNode& p) {
  switch (p.kind) {
    case Kind::kExchange:
      return {true, false};
    case Kind::kScan:  // a system view or an index scan: the master's
    case Kind::kIndexJoin:
    case Kind::kPartition:  // its parts run on the nodes already
      return {false, false};
    default:
      break;
  }
  Verdict v{ExprsNodeSafe(p), Heavy(p)};
  for (const auto& c : p.children) {
    Verdict cv = Judge(*c);
    v.runs_on_node = v.runs_on_node && cv.runs_on_node;
    v.blocking = v.blocking || cv.blocking;
  }
  return v;
}

PlanPtr Wrap(PlanPtr p, uint32_t helper) {
  auto o = std::make_unique<PlanNode>();
  o->kind = Kind::kOffload;
  o->types = p->types;
  o->est_rows = p->est_rows;
  o->index = helper;
  o->children.push_back(std::move(p));
  return o;
}

void Place(PlanPtr& p, uint32_t helper) {
  if (p->kind == Kind::kExchange || p->kind == Kind::kOffload || p->kind == Kind::kPartition)
    return;
  Verdict v = Judge(*p);
  if (v.runs_on_node && v.blocking) {
    p = Wrap(std::move(p), helper);
    return;
  }
  for (auto& c : p->children) Place(c, helper);
}

void CollectExchanges(const PlanNode& p, std::vector<const PlanNode*>* out) {
  if (p.kind == Kind::kExchange) {
    out->push_back(&p);
    return;  // a fragment holds no Exchange
  }
  for (const auto& c : p.children) CollectExchanges(*c, out);
}

}  // namespace

PlanPtr PlaceOffload(PlanPtr plan, uint32_t helper) {
  Place(plan, helper);
  return plan;
}

std::vector<const PlanNode*> Exchanges(const PlanNode& p) {
  std::vector<const PlanNode*> out;
  CollectExchanges(p, &out);
  return out;
}

}  // namespace wattdb::plan
