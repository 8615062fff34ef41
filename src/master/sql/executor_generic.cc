// Generic plans of prepared statements: SELECT, INSERT … VALUES, UPDATE and DELETE bound once
// with their parameters as placeholders and filled in at each execution, instead of parsing
// and binding the statement's text again (query/plan/generic_plan.h).
#include "common/codec.h"
#include "master/sql/executor.h"
#include "query/plan/fragment.h"
#include "query/plan/generic_plan.h"
#include "query/plan/view_rewrite.h"

namespace wattdb::master {

namespace {

// Pins the catalog's statement time while both forms of a statement are bound, so that
// now() is the same constant in the filled generic plan and in the custom one.
class PinnedTime {
 public:
  explicit PinnedTime(DatabaseCatalog& db) : db_(db) {
    db_.set_statement_time(db_.plan::CatalogReader::StatementTime());
  }
  ~PinnedTime() { db_.set_statement_time(std::nullopt); }

 private:
  DatabaseCatalog& db_;
};

bool SameExprs(const std::vector<plan::BoundExprPtr>& a, const std::vector<plan::BoundExprPtr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (!plan::SameExpr(*a[i], *b[i])) return false;
  }
  return true;
}

bool ReadsSubquery(const plan::BoundExpr& e) {
  return e.subplan ||
         std::any_of(e.children.begin(), e.children.end(),
                     [](const plan::BoundExprPtr& c) { return c && ReadsSubquery(*c); });
}

bool SameModify(const plan::BoundModify& a, const plan::BoundModify& b) {
  if (a.table.id != b.table.id || !a.source != !b.source ||
      (a.source && !plan::SamePlan(*a.source, *b.source)) || a.sets.size() != b.sets.size()) {
    return false;
  }
  for (size_t i = 0; i < a.sets.size(); i++) {
    if (a.sets[i].first != b.sets[i].first || !plan::SameExpr(*a.sets[i].second, *b.sets[i].second))
      return false;
  }
  return true;
}

}  // namespace

Result<plan::BoundInsert> Executor::FillInsert(const plan::BoundInsert& c,
                                               const std::vector<Value>& params) {
  plan::BoundInsert b;
  b.table = c.table;
  b.generated = c.generated;
  for (const auto& row : c.rows) {
    auto& out = b.rows.emplace_back();
    for (const auto& e : row) {
      ASSIGN_OR_RETURN(plan::BoundExprPtr x, plan::InstantiateExpr(*e, params, db_));
      out.push_back(std::move(x));
    }
  }
  return b;
}

Result<plan::BoundModify> Executor::FillModify(const plan::BoundModify& c,
                                               const std::vector<Value>& params) {
  plan::BoundModify b;
  b.table = c.table;
  ASSIGN_OR_RETURN(b.source, plan::Instantiate(*c.source, params, db_));
  for (const auto& [col, e] : c.sets) {
    ASSIGN_OR_RETURN(plan::BoundExprPtr x, plan::InstantiateExpr(*e, params, db_));
    b.sets.emplace_back(col, std::move(x));
  }
  return b;
}

std::unique_ptr<Executor::CachedPlan> Executor::PlanGeneric(sql::Statement& generic,
                                                            sql::Statement& custom,
                                                            const std::vector<SqlType>& param_types,
                                                            const std::vector<Value>& params) {
  auto c = std::make_unique<CachedPlan>();
  c->schema_version =
      cluster_.catalog().schema_version();  // before binding: DDL meanwhile re-plans
  c->planner = PlannerSettings();
  c->settings_changes = settings_changes_;
  PinnedTime pinned(db_);
  std::vector<SqlType> types = param_types;
  bool same = false;
  if (auto* sel = std::get_if<sql::SelectStmt>(&generic)) {
    if (sel->for_update) return nullptr;
    auto g = plan::BindSelect(*sel, db_, &types);
    if (!g.ok() || types != param_types) return nullptr;
    c->kind = sql::SelectStmt{};
    c->select = std::move(*g);
    PushDown(&c->select);
    auto made = PlanSelect(std::get<sql::SelectStmt>(custom));
    auto filled = made.ok() ? plan::Instantiate(*c->select.plan, params, db_) : made.status();
    same = filled.ok() && plan::SamePlan(**filled, *made->plan) && made->names == c->select.names &&
           made->types == c->select.types;
    if (same) c->point_read = PlanPointRead(*c->select.plan, **filled, params);
  } else if (auto* ins = std::get_if<sql::InsertStmt>(&generic)) {
    auto& cins = std::get<sql::InsertStmt>(custom);
    if (ins->select || !plan::RewriteViewTarget(*ins, db_).ok() ||
        !plan::RewriteViewTarget(cins, db_).ok()) {
      return nullptr;
    }
    auto g = plan::BindInsert(*ins, db_, &types);
    if (!g.ok() || types != param_types) return nullptr;
    c->kind = sql::InsertStmt{};
    c->insert = std::move(*g);
    auto made = plan::BindInsert(cins, db_);
    auto filled = made.ok() ? FillInsert(c->insert, params) : made.status();
    same = filled.ok() && made->table.id == filled->table.id &&
           made->generated == filled->generated && made->rows.size() == filled->rows.size();
    for (size_t r = 0; same && r < made->rows.size(); r++)
      same = SameExprs(made->rows[r], filled->rows[r]);
    c->insert_in_place =
        std::none_of(c->insert.rows.begin(), c->insert.rows.end(), [](const auto& row) {
          return std::any_of(row.begin(), row.end(),
                             [](const plan::BoundExprPtr& e) { return ReadsSubquery(*e); });
        });
  } else if (std::holds_alternative<sql::UpdateStmt>(generic) ||
             std::holds_alternative<sql::DeleteStmt>(generic)) {
    bool update = std::holds_alternative<sql::UpdateStmt>(generic);
    auto bind = [&](sql::Statement& st, std::vector<SqlType>* t) -> Result<plan::BoundModify> {
      if (update) {
        auto& up = std::get<sql::UpdateStmt>(st);
        RETURN_NOT_OK(plan::RewriteViewTarget(up, db_));
        return plan::BindUpdate(up, db_, t);
      }
      auto& del = std::get<sql::DeleteStmt>(st);
      RETURN_NOT_OK(plan::RewriteViewTarget(del, db_));
      return plan::BindDelete(del, db_, t);
    };
    auto g = bind(generic, &types);
    if (!g.ok() || types != param_types || !g->source) return nullptr;
    if (update) {
      c->kind = sql::UpdateStmt{};
    } else {
      c->kind = sql::DeleteStmt{};
    }
    c->modify = std::move(*g);
    auto made = bind(custom, nullptr);
    auto filled = made.ok() ? FillModify(c->modify, params) : made.status();
    same = filled.ok() && SameModify(*made, *filled);
    if (same) c->key_write = PlanKeyWrite(c->modify, update, *filled, params);
  }
  return same ? std::move(c) : nullptr;
}

std::optional<Executor::CachedPlan::PointRead> Executor::PlanPointRead(
    const plan::PlanNode& generic, const plan::PlanNode& filled, const std::vector<Value>& params) {
  const plan::PlanNode* scan = plan::LeafScan(generic);
  if (!scan) return std::nullopt;
  auto t = db_.GetTable(scan->table_name);
  if (!t.ok()) return std::nullopt;
  auto key_params = plan::PlanPointReadTemplate(generic, *t);
  if (!key_params) return std::nullopt;
  // Kept only if, for these values, it reads the key range the filled plan's scan reads.
  auto range = plan::TemplateKeyRange(*key_params, *t, params);
  const plan::PlanNode* filled_scan = plan::LeafScan(filled);
  if (!range || !filled_scan || filled_scan->index != 0 || filled_scan->lo != range->first ||
      filled_scan->hi != range->second) {
    return std::nullopt;
  }
  return CachedPlan::PointRead{std::move(*key_params), std::move(*t)};
}

std::optional<Executor::CachedPlan::KeyWrite> Executor::PlanKeyWrite(
    const plan::BoundModify& generic, bool update, const plan::BoundModify& filled,
    const std::vector<Value>& params) {
  const TableSchema& t = generic.table;
  if (t.id >= kFirstSystemTableId) return std::nullopt;
  auto tmpl = update ? plan::PlanKeyUpdateTemplate(generic) : plan::PlanKeyDeleteTemplate(generic);
  if (!tmpl) return std::nullopt;
  // The custom plan's key write addresses the same row with these values.
  auto range = plan::TemplateKeyRange(tmpl->key_params, t, params);
  auto custom = update ? plan::PlanKeyUpdate(filled) : plan::PlanKeyDelete(filled);
  if (!range || !custom || range->first != custom->lo || range->second != custom->hi)
    return std::nullopt;
  CachedPlan::KeyWrite k;
  k.spec = KeyWriteOf(generic, *tmpl->plan, !update);
  k.tmpl = std::move(*tmpl);
  return k;
}

Result<std::optional<std::string>> Executor::RunKeyWrite(const CachedPlan& c,
                                                         const std::vector<Value>& params) {
  auto range = plan::TemplateKeyRange(c.key_write->tmpl.key_params, c.modify.table, params);
  if (!range) return std::optional<std::string>();
  // The session's spec, assigned over: its plan, lists and values keep their memory.
  KeyWriteSpec& w = key_write_spec_;
  std::optional<std::string> values = std::move(w.params);
  w = c.key_write->spec;
  w.lo = std::move(range->first);
  w.hi = std::move(range->second);
  w.params = std::move(values);
  if (!w.params) w.params.emplace();
  w.params->clear();
  EncodeRow(params, &*w.params);
  return KeyWrite(c.modify.table, Snapshot(), w);
}

bool Executor::Valid(const CachedPlan& c) const {
  return c.schema_version == cluster_.catalog().schema_version() &&
         (c.settings_changes == settings_changes_ || c.planner == PlannerSettings());
}

}  // namespace wattdb::master
