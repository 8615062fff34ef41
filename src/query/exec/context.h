// Execution context shared by the operators and expression evaluation of one statement:
// where scans read from, cancellation, and the state of subqueries.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "common/sqlstate.h"
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

struct ExecContext;

// Per-operator counters filled by an instrumented execution (EXPLAIN ANALYZE).
struct OperatorStats {
  uint64_t rows = 0;
  uint64_t batches = 0;
  double ms = 0;  // time in Open + Next, children included
  void Add(const OperatorStats& o) {
    rows += o.rows;
    batches += o.batches;
    ms += o.ms;
  }
  bool empty() const { return rows == 0 && batches == 0 && ms == 0; }
};
// Counters of operators that ran on the nodes (below an Exchange), by plan node and node id.
using RemoteStats = std::map<const plan::PlanNode*, std::map<uint32_t, OperatorStats>>;

class ScanProvider {
 public:
  virtual ~ScanProvider() = default;
  virtual Result<std::unique_ptr<RowSource>> OpenScan(const plan::PlanNode& scan) = 0;
  // The rows of an Exchange's fragment run where its scan's data lives; null: run it here.
  virtual Result<std::unique_ptr<RowSource>> OpenExchange(const plan::PlanNode& exchange,
                                                          const ExecContext& ctx) {
    return std::unique_ptr<RowSource>();
  }
  // The rows of a Partition's subtree (plan/partition.h), its parts run where A's segments
  // are; null: run it here.
  virtual Result<std::unique_ptr<RowSource>> OpenPartition(const plan::PlanNode& partition,
                                                           const ExecContext& ctx) {
    return std::unique_ptr<RowSource>();
  }
  // The rows of a Gather's subtree (plan.h), run per segment on threads of this process;
  // null: run it here, on the statement's thread.
  virtual Result<std::unique_ptr<RowSource>> OpenGather(const plan::PlanNode& gather,
                                                        const ExecContext& ctx) {
    return std::unique_ptr<RowSource>();
  }
  // The rows of an Offload's subtree (plan/offload.h) run on a helper node; null: run it here.
  virtual Result<std::unique_ptr<RowSource>> OpenOffload(const plan::PlanNode& offload,
                                                         const ExecContext& ctx) {
    return std::unique_ptr<RowSource>();
  }
  // Functions that read the catalog (pg_get_indexdef, regclass output, ...), by name.
  virtual Result<Value> CallCatalog(const std::string& name, const std::vector<Value>& args) {
    return Status::Sql(sqlstate::kFeatureNotSupported,
                       "function " + name + " is not available here");
  }
};

// A failure of the node running an offloaded subtree or of the link to it (not an error of the
// query itself): the subtree can run elsewhere.
inline bool IsHelperFailure(const Status& st) {
  switch (st.code()) {
    case Status::Code::kIOError:
    case Status::Code::kUnavailable:
    case Status::Code::kTimedOut:
    case Status::Code::kStale:
    case Status::Code::kNotFound:
    case Status::Code::kCorruption:
      return true;
    default:
      return false;
  }
}

// Results of subqueries that read nothing of the enclosing query: computed once per execution.
struct SubqueryResult {
  bool any = false;           // at least one row
  Value scalar;               // scalar subquery: the value of the one row
  std::vector<Value> values;  // IN: the distinct non-null values, sorted
  bool has_null = false;      // IN: some row was NULL
};

struct ExecContext {
  ExecContext() = default;
  explicit ExecContext(ScanProvider* s, const std::atomic<bool>* c = nullptr)
      : scans(s), cancelled(c) {}

  ScanProvider* scans = nullptr;                 // borrowed; outlives the execution
  const std::atomic<bool>* cancelled = nullptr;  // optional; checked between batches
  // Rows of the enclosing queries while a correlated subquery runs, innermost last.
  std::vector<std::vector<Value>> outer;
  std::unordered_map<const plan::BoundExpr*, SubqueryResult> subqueries;
  // Bytes each sort, hash table or materialized input may hold (0: no limit). Past it the
  // statement fails with 53200 instead of the process running out of memory.
  int64_t work_mem = 0;
  // Exchanges read several segments at once into buffers (false: one at a time, off the wire).
  bool prefetch = true;
  // EXPLAIN ANALYZE: where exchanges leave the counters of the operators they ran remotely.
  RemoteStats* remote_stats = nullptr;
  // EXPLAIN ANALYZE: where the counters of operators this process ran on other threads (a
  // Gather's parts) go, summed over the parts, at the end of the Gather; told on the
  // statement's thread.
  std::map<const plan::PlanNode*, OperatorStats>* local_stats = nullptr;
  // The values of a generic plan's parameters ($n: BoundExpr::kParam), for a plan run with
  // them in place (plan/key_update.h's templates); borrowed. Null: a parameter is an error.
  const std::vector<Value>* params = nullptr;
  // now() (kTimeParam) of a plan run with its parameters in place: the statement's time, in
  // microseconds. Unset: now() is an error, as a parameter without `params` is.
  std::optional<int64_t> statement_time;
  // Set with `params` for a point-read template (plan/key_update.h): the key range its one
  // Exchange reads, which its fragment's scan, bound before the values were known, lacks.
  const std::pair<std::string, std::string>* exchange_range = nullptr;
};

// The value of parameter expression `e` (kParam) in `ctx`; 08P01 if it has none.
Result<Value> ParamValue(const plan::BoundExpr& e, const ExecContext* ctx);

// Approximate bytes one row of values occupies in memory.
inline size_t RowBytes(const std::vector<Value>& row) {
  size_t n = sizeof(row) + row.capacity() * sizeof(Value);
  for (const auto& v : row) n += v.HeapBytes();
  return n;
}

// What one materializing operator holds, checked against ExecContext::work_mem.
class MemoryGauge {
 public:
  explicit MemoryGauge(const char* what) : what_(what) {}
  // Counts `bytes` more; 53200 once the total passes the limit.
  Status Add(const ExecContext& ctx, size_t bytes) {
    used_ += static_cast<int64_t>(bytes);
    if (ctx.work_mem <= 0 || used_ <= ctx.work_mem) return Status::OK();
    return Status::Sql(
        sqlstate::kOutOfMemory,
        fmt::format("out of memory: {} needs more than work_mem ({} kB); raise work_mem or "
                    "narrow the query",
                    what_, ctx.work_mem / 1024));
  }
  // Starts counting again from zero (the operator released what it had).
  void Reset() { used_ = 0; }

 private:
  const char* what_;
  int64_t used_ = 0;
};

// 57014 once the statement was cancelled; operators check it between batches.
inline Status CheckCancel(const ExecContext& ctx) {
  if (ctx.cancelled && ctx.cancelled->load()) {
    return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
  }
  return Status::OK();
}

}  // namespace wattdb::exec
