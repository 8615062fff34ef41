#include "query/plan/generic_plan.h"

#include "common/sqlstate.h"
#include "query/plan/expr_binder.h"

namespace wattdb::plan {

namespace {

bool PlanHasParams(const PlanNode& plan, bool time_only);

// `time_only`: only the statement's time (kTimeParam) counts, not the values ($n).
bool ExprHasParams(const BoundExpr* e, bool time_only = false) {
  if (!e) return false;
  if (e->kind == BoundExpr::Kind::kParam && (!time_only || e->column == kTimeParam)) return true;
  if (e->subplan && PlanHasParams(*e->subplan, time_only)) return true;
  for (const auto& c : e->children) {
    if (ExprHasParams(c.get(), time_only)) return true;
  }
  return false;
}

// Calls fn on every expression slot of `p` (not its children's); Node: PlanNode, const or not.
template <typename Node, typename Fn>
Status ForEachExpr(Node* p, Fn fn) {
  RETURN_NOT_OK(fn(p->predicate));
  for (auto* list : {&p->exprs, &p->groups, &p->left_keys, &p->right_keys}) {
    for (auto& e : *list) RETURN_NOT_OK(fn(e));
  }
  for (auto& a : p->aggs) {
    RETURN_NOT_OK(fn(a.arg));
    RETURN_NOT_OK(fn(a.separator));
  }
  for (auto& k : p->keys) RETURN_NOT_OK(fn(k.expr));
  return Status::OK();
}

// Whether an expression of `plan` or its children reads a parameter (as ExprHasParams).
bool PlanHasParams(const PlanNode& plan, bool time_only) {
  bool found = false;
  (void)ForEachExpr(&plan, [&](const BoundExprPtr& e) {
    found = found || ExprHasParams(e.get(), time_only);
    return Status::OK();
  });
  for (const auto& c : plan.children) found = found || PlanHasParams(*c, time_only);
  return found;
}

Status Substitute(BoundExprPtr& e, const std::vector<Value>& params, const CatalogReader& catalog) {
  if (!e) return Status::OK();
  if (e->kind == BoundExpr::Kind::kParam && e->column == kTimeParam) {
    e = MakeConst(Value::Timestamp(catalog.StatementTime()), e->type);
    return Status::OK();
  }
  if (e->kind == BoundExpr::Kind::kParam) {
    if (e->column < 0 || static_cast<size_t>(e->column) >= params.size()) {
      return Status::Sql(sqlstate::kProtocolViolation,
                         fmt::format("no value bound for parameter ${}", e->column + 1));
    }
    e = MakeConst(params[e->column], e->type);
    return Status::OK();
  }
  if (e->subplan && HasParams(*e->subplan)) {
    ASSIGN_OR_RETURN(PlanPtr sub, Instantiate(*e->subplan, params, catalog));
    e->subplan = std::shared_ptr<const PlanNode>(std::move(sub));
  }
  for (auto& c : e->children) RETURN_NOT_OK(Substitute(c, params, catalog));
  if (!e->children.empty()) e = FoldIntegerArithmetic(std::move(e));  // $1 + 99: a key bound
  return Status::OK();
}

// Fills `p` (a clone of `orig`) with the parameters' values.
Status Fill(const PlanNode& orig, PlanNode* p, const std::vector<Value>& params,
            const CatalogReader& catalog) {
  for (size_t i = 0; i < p->children.size(); i++)
    RETURN_NOT_OK(Fill(*orig.children[i], p->children[i].get(), params, catalog));
  RETURN_NOT_OK(ForEachExpr(p, [&](BoundExprPtr& e) { return Substitute(e, params, catalog); }));
  if (p->kind == PlanNode::Kind::kFilter && p->children[0]->kind == PlanNode::Kind::kScan &&
      ExprHasParams(orig.predicate.get())) {
    PlanNode* scan = p->children[0].get();
    ASSIGN_OR_RETURN(TableSchema t, catalog.GetTable(scan->table_name));
    if (t.id != scan->table)
      return Status::InvalidArgument(
          fmt::format("table {} changed since the plan was made", t.name));
    scan->lo.clear();
    scan->hi.clear();
    scan->index = 0;
    scan->index_name.clear();
    DeriveKeyRange(p->predicate.get(), t, &scan->lo, &scan->hi);
    double est = -1;
    ChooseScanIndex(p->predicate.get(), t, scan, &est);
  }
  return Status::OK();
}

void ClearEstimates(PlanNode* p) {
  p->est_rows = -1;
  for (auto& c : p->children) ClearEstimates(c.get());
}

}  // namespace

bool HasParams(const PlanNode& plan) { return PlanHasParams(plan, false); }

bool ReadsStatementTime(const PlanNode& plan) { return PlanHasParams(plan, true); }

Result<PlanPtr> Instantiate(const PlanNode& plan, const std::vector<Value>& params,
                            const CatalogReader& catalog) {
  PlanPtr p = plan.Clone();
  RETURN_NOT_OK(Fill(plan, p.get(), params, catalog));
  return p;
}

Result<BoundExprPtr> InstantiateExpr(const BoundExpr& e, const std::vector<Value>& params,
                                     const CatalogReader& catalog) {
  BoundExprPtr c = e.Clone();
  RETURN_NOT_OK(Substitute(c, params, catalog));
  return c;
}

bool SameExpr(const BoundExpr& a, const BoundExpr& b) {
  std::string x, y;
  ByteWriter wx(&x), wy(&y);
  a.Serialize(wx);
  b.Serialize(wy);
  return x == y;
}

bool SamePlan(const PlanNode& a, const PlanNode& b) {
  PlanPtr x = a.Clone(), y = b.Clone();
  ClearEstimates(x.get());
  ClearEstimates(y.get());
  std::string sx, sy;
  x->Serialize(&sx);
  y->Serialize(&sy);
  return sx == sy;
}

}  // namespace wattdb::plan
