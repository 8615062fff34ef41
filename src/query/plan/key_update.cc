#include "query/plan/key_update.h"

#include <algorithm>

#include "query/plan/fragment.h"
#include "query/plan/query_binder.h"

namespace wattdb::plan {

namespace {

// The key's range if `m`'s source is a Filter a node can evaluate over a Scan of one key.
std::optional<KeyUpdate> OneKey(const BoundModify& m) {
  const TableSchema& t = m.table;
  const PlanNode* src = m.source.get();
  if (!src || t.HasHiddenKey() || src->kind != PlanNode::Kind::kFilter || src->children.size() != 1) {
    return std::nullopt;
  }
  const PlanNode& scan = *src->children[0];
  if (scan.kind != PlanNode::Kind::kScan || scan.index != 0 || !src->predicate || !NodeSafe(*src->predicate)) {
    return std::nullopt;
  }
  KeyUpdate out;
  bool point = false;
  DeriveKeyRange(src->predicate.get(), t, &out.lo, &out.hi, &point);
  if (!point || out.lo.empty() || out.hi.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<KeyUpdate> PlanKeyDelete(const BoundModify& del) {
  auto out = OneKey(del);
  if (out) out->plan = del.source->Clone();
  return out;
}

std::optional<KeyUpdate> PlanKeyUpdate(const BoundModify& update) {
  const TableSchema& t = update.table;
  auto one = OneKey(update);
  if (!one) return std::nullopt;
  KeyUpdate out = std::move(*one);
  const PlanNode* src = update.source.get();
  std::vector<const BoundExpr*> set_of(t.columns.size(), nullptr);
  for (const auto& [col, e] : update.sets) {
    bool key = std::find(t.key_columns.begin(), t.key_columns.end(), col) != t.key_columns.end();
    if (key || !NodeSafe(*e)) return std::nullopt;
    set_of[col] = e.get();
  }
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  for (size_t c = 0; c < t.columns.size(); c++) {
    project->exprs.push_back(set_of[c] ? set_of[c]->Clone() : MakeColumn(static_cast<int>(c), t.columns[c].type));
    project->types.push_back(t.columns[c].type);
  }
  project->children.push_back(src->Clone());
  out.plan = std::move(project);
  return out;
}

}  // namespace wattdb::plan
