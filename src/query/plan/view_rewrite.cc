#include "query/plan/view_rewrite.h"

#include <fmt/format.h>

#include "common/sqlstate.h"
#include "query/plan/query_binder.h"
#include "query/sql/parser.h"

namespace wattdb::plan {

namespace {

using sql::Expr;
using sql::ExprPtr;

constexpr int kMaxViewNesting = 100;

ExprPtr Clone(const Expr& e) {
  auto c = std::make_unique<Expr>(e.kind, e.pos);
  c->value = e.value;
  c->untyped = e.untyped;
  c->table = e.table;
  c->name = e.name;
  c->op = e.op;
  c->negated = e.negated;
  c->distinct = e.distinct;
  c->star_arg = e.star_arg;
  c->cast_type = e.cast_type;
  c->param = e.param;
  c->subquery = e.subquery;  // shared: a subquery's tree is never changed here
  for (const auto& a : e.args) c->args.push_back(a ? Clone(*a) : nullptr);
  if (e.operand) c->operand = Clone(*e.operand);
  if (e.else_expr) c->else_expr = Clone(*e.else_expr);
  return c;
}

// Calls fn on every node of `e` outside subqueries, parents first; fn returns false to skip
// the node's children.
template <typename Fn>
void Walk(Expr& e, const Fn& fn) {
  if (!fn(e)) return;
  for (auto& a : e.args) {
    if (a) Walk(*a, fn);
  }
  if (e.operand) Walk(*e.operand, fn);
  if (e.else_expr) Walk(*e.else_expr, fn);
}

// Drops the qualifier `ref_name` from e's column references (the rewritten statement has
// the view's relation alone in scope) and marks e's depths for measuring again.
void StripQualifier(Expr& e, const std::string& ref_name) {
  Walk(e, [&](Expr& x) {
    if (x.kind == Expr::Kind::kColumn && x.table == ref_name) x.table.clear();
    x.depth = 0;
    return true;
  });
}

// A view's column: its output name and defining expression; `column` names the column of
// the view's relation it is, if it is one ("" for an expression).
struct ViewColumn {
  std::string name;
  const Expr* expr = nullptr;
  std::string column;
};

// What a write through view `name` needs to know about it.
struct UpdatableView {
  std::vector<sql::Statement> parsed;  // owns the view's query
  std::string relation;                // the table or view it reads
  std::string ref_name;                // what its query calls that relation
  const Expr* where = nullptr;
  std::vector<ViewColumn> columns;
};

Result<std::vector<std::string>> RelationColumns(const std::string& name,
                                                 const CatalogReader& catalog, int nesting);

Result<UpdatableView> Analyze(const std::string& name, const std::string& text,
                              const CatalogReader& catalog, const char* verb, int nesting) {
  UpdatableView v;
  auto parsed = sql::Parse(text);
  if (!parsed.ok() || parsed->size() != 1 ||
      !std::holds_alternative<sql::SelectStmt>((*parsed)[0])) {
    return Status::Sql(sqlstate::kInternalError,
                       fmt::format("the definition of view \"{}\" does not parse", name));
  }
  v.parsed = std::move(parsed).value();
  auto& q = std::get<sql::SelectStmt>(v.parsed[0]);
  auto refuse = [&](const char* why) {
    return Status::Sql(
        sqlstate::kObjectNotInPrerequisiteState,
        fmt::format("cannot {} view \"{}\": views {} are not automatically updatable", verb, name,
                    why));
  };
  if (q.set_op != sql::SetOp::kNone) return refuse("containing UNION, INTERSECT, or EXCEPT");
  if (q.distinct) return refuse("containing DISTINCT");
  if (!q.group_by.empty()) return refuse("containing GROUP BY");
  if (q.having) return refuse("containing HAVING");
  if (q.limit || q.offset) return refuse("containing LIMIT or OFFSET");
  if (q.from.size() != 1 || q.from[0].kind != sql::TableRef::Kind::kTable) {
    return refuse("that do not select from a single table or view");
  }
  for (auto& item : q.items) {
    if (item.expr && ContainsAggregate(*item.expr))
      return refuse("that return aggregate functions");
  }
  v.relation = q.from[0].name;
  v.ref_name = q.from[0].alias.empty() ? q.from[0].name : q.from[0].alias;
  v.where = q.where.get();
  for (auto& item : q.items) {
    Expr& e = *item.expr;
    if (e.kind == Expr::Kind::kStar) {
      ASSIGN_OR_RETURN(auto names, RelationColumns(v.relation, catalog, nesting + 1));
      for (auto& n : names) v.columns.push_back({n, nullptr, n});
      continue;
    }
    bool plain = e.kind == Expr::Kind::kColumn && (e.table.empty() || e.table == v.ref_name);
    v.columns.push_back({item.alias.empty() ? OutputName(e) : item.alias, &e, plain ? e.name : ""});
  }
  return v;
}

// The visible column names of a table or view.
Result<std::vector<std::string>> RelationColumns(const std::string& name,
                                                 const CatalogReader& catalog, int nesting) {
  if (nesting > kMaxViewNesting)
    return Status::Sql(sqlstate::kStatementTooComplex, "views nested too deeply");
  std::vector<std::string> out;
  if (auto text = catalog.GetView(name)) {
    ASSIGN_OR_RETURN(auto v, Analyze(name, *text, catalog, "write through", nesting));
    for (auto& c : v.columns) out.push_back(c.name);
    return out;
  }
  ASSIGN_OR_RETURN(TableSchema t, catalog.GetTable(name));
  for (const auto& c : t.columns) {
    if (!c.hidden) out.push_back(c.name);
  }
  return out;
}

const ViewColumn* Find(const UpdatableView& v, const std::string& name) {
  for (const auto& c : v.columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The view's expression for `c`, in terms of the relation's columns (unqualified: the
// rewritten statement has that relation alone in scope).
ExprPtr Definition(const UpdatableView& v, const ViewColumn& c, int pos) {
  ExprPtr e;
  if (c.expr) {
    e = Clone(*c.expr);
  } else {  // from a * of the view
    e = std::make_unique<Expr>(Expr::Kind::kColumn, pos);
    e->name = c.column;
  }
  StripQualifier(*e, v.ref_name);
  return e;
}

// Replaces references to the view's columns (unqualified, or qualified with `target`) in `e`
// by their definitions.
void MapColumns(ExprPtr& e, const UpdatableView& v, const std::string& target) {
  if (!e) return;
  Walk(*e, [&](Expr& x) {
    x.depth = 0;
    if (x.kind != Expr::Kind::kColumn || !(x.table.empty() || x.table == target)) return true;
    const ViewColumn* c = Find(v, x.name);
    if (c) x = std::move(*Definition(v, *c, x.pos));
    return false;  // a definition is already in the relation's terms
  });
}

// `where` AND-ed with the view's condition (in the relation's terms).
ExprPtr AddViewCondition(const UpdatableView& v, ExprPtr where) {
  if (!v.where) return where;
  ExprPtr cond = Clone(*v.where);
  StripQualifier(*cond, v.ref_name);
  if (!where) return cond;
  auto both = std::make_unique<Expr>(Expr::Kind::kBinary, where->pos);
  both->op = "and";
  both->args.push_back(std::move(cond));
  both->args.push_back(std::move(where));
  return both;
}

// Rewrites the statement while its target is a view, one view at a time.
template <typename Stmt, typename Fn>
Status RewriteLevels(Stmt& s, const CatalogReader& catalog, const char* verb, Fn rewrite) {
  for (int nesting = 0;; nesting++) {
    auto text = catalog.GetView(s.table);
    if (!text) return Status::OK();
    if (nesting > kMaxViewNesting)
      return Status::Sql(sqlstate::kStatementTooComplex, "views nested too deeply");
    ASSIGN_OR_RETURN(UpdatableView v, Analyze(s.table, *text, catalog, verb, nesting));
    RETURN_NOT_OK(rewrite(v));
    s.table = v.relation;
  }
}

}  // namespace

Status RewriteViewTarget(sql::InsertStmt& s, const CatalogReader& catalog) {
  return RewriteLevels(s, catalog, "insert into", [&](const UpdatableView& v) -> Status {
    if (s.columns.empty()) {
      for (const auto& c : v.columns) {
        s.columns.push_back(c.name);
        s.column_pos.push_back(s.table_pos);
      }
    }
    for (size_t i = 0; i < s.columns.size(); i++) {
      const ViewColumn* c = Find(v, s.columns[i]);
      if (!c) {
        return Status::Sql(
            sqlstate::kUndefinedColumn,
            fmt::format("column \"{}\" of relation \"{}\" does not exist", s.columns[i], s.table),
            s.column_pos[i]);
      }
      if (c->column.empty()) {
        return Status::Sql(
            sqlstate::kFeatureNotSupported,
            fmt::format("cannot insert into column \"{}\" of view \"{}\": it is not a column "
                        "of the view's relation",
                        s.columns[i], s.table),
            s.column_pos[i]);
      }
      s.columns[i] = c->column;
    }
    return Status::OK();
  });
}

Status RewriteViewTarget(sql::UpdateStmt& s, const CatalogReader& catalog) {
  return RewriteLevels(s, catalog, "update", [&](const UpdatableView& v) -> Status {
    for (size_t i = 0; i < s.sets.size(); i++) {
      const ViewColumn* c = Find(v, s.sets[i].first);
      if (!c) {
        return Status::Sql(sqlstate::kUndefinedColumn,
                           fmt::format("column \"{}\" of relation \"{}\" does not exist",
                                       s.sets[i].first, s.table),
                           s.set_pos[i]);
      }
      if (c->column.empty()) {
        return Status::Sql(
            sqlstate::kFeatureNotSupported,
            fmt::format("cannot update column \"{}\" of view \"{}\": it is not a column of "
                        "the view's relation",
                        s.sets[i].first, s.table),
            s.set_pos[i]);
      }
      s.sets[i].first = c->column;
      MapColumns(s.sets[i].second, v, s.table);
      sql::MeasureDepth(*s.sets[i].second);
    }
    MapColumns(s.where, v, s.table);
    s.where = AddViewCondition(v, std::move(s.where));
    if (s.where) sql::MeasureDepth(*s.where);
    return Status::OK();
  });
}

Status RewriteViewTarget(sql::DeleteStmt& s, const CatalogReader& catalog) {
  return RewriteLevels(s, catalog, "delete from", [&](const UpdatableView& v) -> Status {
    MapColumns(s.where, v, s.alias.empty() ? s.table : s.alias);
    s.where = AddViewCondition(v, std::move(s.where));
    if (s.where) sql::MeasureDepth(*s.where);
    s.alias.clear();
    return Status::OK();
  });
}

}  // namespace wattdb::plan
