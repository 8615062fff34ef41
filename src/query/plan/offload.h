// Operator offloading (the WattDB paper's helper nodes): the blocking operators above the
// Exchanges of a pushed-down plan -- hash aggregation merging the nodes' partial states, sort,
// hash join, set operations -- may run on a node other than the master, which then only
// forwards their output. A subtree qualifies when everything in it can run on a node: its
// leaves are Exchanges (or constant rows), its expressions are NodeSafe, and it has no index
// join or master-side scan. The largest such subtrees holding a blocking operator with work
// worth moving (not the merge of one state per segment, nor the sort of the nodes' top-N
// rows) are wrapped in an Offload node; the master's executor runs each on a helper node
// (rpc/exchange.h reads the Exchanges there), or, when no helper suits, in place.
#pragma once

#include "query/plan/plan.h"

namespace wattdb::plan {

// `helper`: the node to run on (0: chosen when the statement runs, from node telemetry).
PlanPtr PlaceOffload(PlanPtr plan, uint32_t helper);

// The Exchanges of `p` in pre-order (a helper node learns their segments in this order).
std::vector<const PlanNode*> Exchanges(const PlanNode& p);

}  // namespace wattdb::plan
