// Vectorized volcano operators. A plan (query/plan) is immutable; BuildOperator() makes the
// operator tree holding per-execution state. Pull protocol: Open() once, Next() until it
// returns false, then Close(). Not thread-safe: one execution runs on one thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>

#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"
#include "query/plan/plan.h"

namespace wattdb::exec {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual Status Open(ExecContext& ctx) = 0;
  // Fills `out` with up to kBatchRows rows; returns false when exhausted. REQUIRES: Open() ok.
  virtual Result<bool> Next(Batch& out) = 0;
  virtual void Close() {}
};

Result<std::unique_ptr<Operator>> BuildOperator(const plan::PlanNode& plan);

// Like BuildOperator, but every operator records its output rows and time in `stats`,
// keyed by its plan node.
Result<std::unique_ptr<Operator>> BuildInstrumented(
    const plan::PlanNode& plan, std::map<const plan::PlanNode*, OperatorStats>* stats);

// Runs `plan` to completion, calling `sink` for each non-empty batch; the sink may take the
// batch's contents (leaving it as a default Batch: the next one is built afresh). With
// `stats`, the operators are instrumented and their counters land there, in the plan's
// pre-order.
Status Execute(const plan::PlanNode& plan, ExecContext& ctx,
               const std::function<Status(Batch&)>& sink,
               std::vector<OperatorStats>* stats = nullptr);

}  // namespace wattdb::exec
