// Execution context shared by the operators and expression evaluation of one statement:
// where scans read from, cancellation, and the state of subqueries.
#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "query/exec/batch.h"
#include "query/plan/plan.h"

namespace wattdb::exec {

// Where scans get their rows: the master implements it with remote segment scans on nodes
// (and system views); tests use in-memory tables.
class RowSource {
 public:
  virtual ~RowSource() = default;
  // Fills `out` (already Reset to the scan's column count) with up to kBatchRows rows.
  // Returns false when exhausted.
  virtual Result<bool> Next(Batch& out) = 0;
};

class ScanProvider {
 public:
  virtual ~ScanProvider() = default;
  virtual Result<std::unique_ptr<RowSource>> OpenScan(const plan::PlanNode& scan) = 0;
  // Functions that read the catalog (pg_get_indexdef, regclass output, ...), by name.
  virtual Result<Value> CallCatalog(const std::string& name, const std::vector<Value>& args) {
    return Status::Sql("0A000", "function " + name + " is not available here");
  }
};

// Results of subqueries that read nothing of the enclosing query: computed once per execution.
struct SubqueryResult {
  bool any = false;             // at least one row
  Value scalar;                 // scalar subquery: the value of the one row
  std::vector<Value> values;    // IN: the distinct non-null values, sorted
  bool has_null = false;        // IN: some row was NULL
};

struct ExecContext {
  ExecContext() = default;
  explicit ExecContext(ScanProvider* s, const std::atomic<bool>* c = nullptr) : scans(s), cancelled(c) {}

  ScanProvider* scans = nullptr;                   // borrowed; outlives the execution
  const std::atomic<bool>* cancelled = nullptr;    // optional; checked between batches
  // Rows of the enclosing queries while a correlated subquery runs, innermost last.
  std::vector<std::vector<Value>> outer;
  std::unordered_map<const plan::BoundExpr*, SubqueryResult> subqueries;
};

// 57014 once the statement was cancelled; operators check it between batches.
inline Status CheckCancel(const ExecContext& ctx) {
  if (ctx.cancelled && ctx.cancelled->load()) {
    return Status::Sql("57014", "canceling statement due to user request");
  }
  return Status::OK();
}

}  // namespace wattdb::exec
