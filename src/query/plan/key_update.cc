#include "query/plan/key_update.h"

#include <algorithm>

#include "common/codec.h"
#include "query/plan/fragment.h"
#include "query/plan/generic_plan.h"
#include "query/plan/query_binder.h"

namespace wattdb::plan {

namespace {

// `m`'s source if it is a Filter a node can evaluate over a Scan of the table's rows (not of
// an index), with a visible primary key; else null.
const PlanNode* NodeFilter(const BoundModify& m) {
  const PlanNode* src = m.source.get();
  if (!src || m.table.HasHiddenKey() || src->kind != PlanNode::Kind::kFilter ||
      src->children.size() != 1) {
    return nullptr;
  }
  const PlanNode& scan = *src->children[0];
  if (scan.kind != PlanNode::Kind::kScan || scan.index != 0 || !src->predicate ||
      !NodeSafe(*src->predicate)) {
    return nullptr;
  }
  return src;
}

// The key's range if NodeFilter finds `m`'s filter and it fixes the whole key to constants.
std::optional<KeyUpdate> OneKey(const BoundModify& m) {
  const PlanNode* src = NodeFilter(m);
  if (!src) return std::nullopt;
  KeyUpdate out;
  bool point = false;
  DeriveKeyRange(src->predicate.get(), m.table, &out.lo, &out.hi, &point);
  if (!point || out.lo.empty() || out.hi.empty()) return std::nullopt;
  return out;
}

// Project(the new row, every column in schema order) over a copy of `update`'s source; null
// if a SET writes a key column or an expression a node cannot evaluate.
PlanPtr NewRowPlan(const BoundModify& update) {
  const TableSchema& t = update.table;
  std::vector<const BoundExpr*> set_of(t.columns.size(), nullptr);
  for (const auto& [col, e] : update.sets) {
    bool key = std::find(t.key_columns.begin(), t.key_columns.end(), col) != t.key_columns.end();
    if (key || !NodeSafe(*e)) return nullptr;
    set_of[col] = e.get();
  }
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  for (size_t c = 0; c < t.columns.size(); c++) {
    project->exprs.push_back(set_of[c] ? set_of[c]->Clone()
                                       : MakeColumn(static_cast<int>(c), t.columns[c].type));
    project->types.push_back(t.columns[c].type);
  }
  project->children.push_back(update.source->Clone());
  return project;
}

// The parameter each key column of `t` equals in `filter`'s predicate (`k = $n` for every
// key column k), if it has them all.
std::optional<std::vector<int>> KeyParams(const PlanNode& filter, const TableSchema& t) {
  std::vector<int> out;
  std::vector<const BoundExpr*> conj = Conjuncts(filter.predicate.get());
  for (int col : t.key_columns) {
    int param = -1;
    for (const BoundExpr* e : conj) {
      if (e->kind != BoundExpr::Kind::kBinary || e->op != BinOp::kEq) continue;
      const BoundExpr* a = e->children[0].get();
      const BoundExpr* b = e->children[1].get();
      if (a->kind == BoundExpr::Kind::kParam) std::swap(a, b);
      if (a->kind == BoundExpr::Kind::kColumn && a->column == col &&
          b->kind == BoundExpr::Kind::kParam && b->column >= 0) {
        param = b->column;
        break;
      }
    }
    if (param < 0) return std::nullopt;
    out.push_back(param);
  }
  return out;
}

// For a generic statement: KeyParams of `m`'s filter, if NodeFilter finds it.
std::optional<KeyWriteTemplate> OneKeyTemplate(const BoundModify& m) {
  const PlanNode* src = NodeFilter(m);
  if (!src) return std::nullopt;
  auto params = KeyParams(*src, m.table);
  if (!params) return std::nullopt;
  KeyWriteTemplate out;
  out.key_params = std::move(*params);
  return out;
}

// `out` with `plan`, if both are there and the plan does not read the statement's time (a
// template is not filled in: its node would not know that time). A filter of `m` that holds
// nothing but the key's `k = $n` goes: the key's range, taken from the same values (whose
// type TemplateKeyRange checks), holds that one key's row alone.
std::optional<KeyWriteTemplate> WithPlan(std::optional<KeyWriteTemplate> out, PlanPtr plan,
                                         const BoundModify& m) {
  if (!out || !plan || ReadsStatementTime(*plan)) return std::nullopt;
  PlanPtr* filter = plan->kind == PlanNode::Kind::kFilter ? &plan : &plan->children[0];
  if ((*filter)->kind == PlanNode::Kind::kFilter &&
      Conjuncts((*filter)->predicate.get()).size() == m.table.key_columns.size()) {
    PlanPtr scan = std::move((*filter)->children[0]);
    *filter = std::move(scan);
  }
  out->plan = std::move(plan);
  return out;
}

}  // namespace

std::optional<KeyUpdate> PlanKeyDelete(const BoundModify& del) {
  auto out = OneKey(del);
  if (out) out->plan = del.source->Clone();
  return out;
}

std::optional<KeyUpdate> PlanKeyUpdate(const BoundModify& update) {
  auto out = OneKey(update);
  if (!out) return std::nullopt;
  out->plan = NewRowPlan(update);
  if (!out->plan) return std::nullopt;
  return out;
}

std::optional<KeyWriteTemplate> PlanKeyDeleteTemplate(const BoundModify& del) {
  auto out = OneKeyTemplate(del);
  return out ? WithPlan(std::move(out), del.source->Clone(), del) : std::nullopt;
}

std::optional<KeyWriteTemplate> PlanKeyUpdateTemplate(const BoundModify& update) {
  auto out = OneKeyTemplate(update);
  return out ? WithPlan(std::move(out), NewRowPlan(update), update) : std::nullopt;
}

std::optional<std::vector<int>> PlanPointReadTemplate(const PlanNode& plan, const TableSchema& t) {
  if (plan.kind != PlanNode::Kind::kExchange || plan.children.size() != 1 || t.HasHiddenKey() ||
      ReadsStatementTime(plan)) {
    return std::nullopt;
  }
  const PlanNode* filter = plan.children[0].get();
  if (filter->kind == PlanNode::Kind::kProject) {
    for (const auto& e : filter->exprs) {
      if (!NodeSafe(*e)) return std::nullopt;
    }
    filter = filter->children.size() == 1 ? filter->children[0].get() : nullptr;
  }
  if (!filter || filter->kind != PlanNode::Kind::kFilter || filter->children.size() != 1 ||
      !filter->predicate || !NodeSafe(*filter->predicate)) {
    return std::nullopt;
  }
  const PlanNode& scan = *filter->children[0];
  if (scan.kind != PlanNode::Kind::kScan || scan.index != 0 || scan.table != t.id)
    return std::nullopt;
  return KeyParams(*filter, t);
}

std::optional<std::pair<std::string, std::string>> TemplateKeyRange(
    const std::vector<int>& key_params, const TableSchema& t, const std::vector<Value>& params) {
  if (key_params.size() != t.key_columns.size()) return std::nullopt;
  std::string lo;
  for (size_t i = 0; i < key_params.size(); i++) {
    size_t p = static_cast<size_t>(key_params[i]);
    if (p >= params.size() ||
        !AppendKeyValue(params[p], t.columns[t.key_columns[i]].type.id, &lo)) {
      return std::nullopt;
    }
  }
  std::string hi = PrefixSuccessor(lo);
  if (lo.empty() || hi.empty()) return std::nullopt;
  return std::make_pair(std::move(lo), std::move(hi));
}

}  // namespace wattdb::plan
