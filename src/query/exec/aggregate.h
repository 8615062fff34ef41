// Hash aggregation. Group keys and arguments are evaluated a batch at a time; the states
// update from the typed columns. Three modes (plan::AggMode):
//   complete: input rows -> groups and finished aggregates;
//   partial:  input rows -> groups and one state column per aggregate (what a node sends);
//   final:    groups and state columns (of many partials) -> groups and finished aggregates.
// Partial and final together give the complete results for count, sum, avg, min and max
// (not DISTINCT or string_agg, which the planner keeps whole).
#pragma once

#include <memory>

#include "query/exec/operator.h"

namespace wattdb::exec {

std::unique_ptr<Operator> MakeHashAggregate(const plan::PlanNode& p,
                                            std::unique_ptr<Operator> child);

}  // namespace wattdb::exec
