// Writes through views, as PostgreSQL's automatically updatable views allow them: INSERT,
// UPDATE and DELETE whose target is a view that reads one table (or one such view) and has no
// DISTINCT, GROUP BY, HAVING, LIMIT/OFFSET, set operation or aggregate become the same
// statement on that table.
//
// - A view column that is a column of the table is written as that column; one that is an
//   expression cannot be written (0A000) but may be read in WHERE and SET expressions.
// - UPDATE and DELETE touch only rows the view shows: the view's WHERE is added to theirs.
//   INSERT does not check it (no WITH CHECK OPTION). Table columns the view leaves out get
//   their defaults.
// - A view that is not automatically updatable is refused with 55000.
// Column references inside subqueries of the statement are left as they are.
#pragma once

#include "common/status.h"
#include "query/plan/binder.h"
#include "query/sql/ast.h"

namespace wattdb::plan {

// If the statement's target is a view, rewrites the statement in place to target the view's
// table (through any number of views); otherwise leaves it unchanged.
Status RewriteViewTarget(sql::InsertStmt& s, const CatalogReader& catalog);
Status RewriteViewTarget(sql::UpdateStmt& s, const CatalogReader& catalog);
Status RewriteViewTarget(sql::DeleteStmt& s, const CatalogReader& catalog);

}  // namespace wattdb::plan
