// Splitting a plan for distributed execution. Above each scan of a table stored on the nodes,
// the longest chain a node can run on its own segments -- filters, projections, and the
// partial half of an aggregation -- moves below an Exchange; the master keeps the rest and
// merges (a final aggregation over the nodes' partial states). When only filters and
// projections go to the nodes, an aggregation still splits: its partial half runs per segment
// on the reader's threads (a Gather), so that the rows crossing are aggregated in parallel.
// Expressions that need the master (subqueries, outer columns, catalog functions) stay on the
// master. Parameters move: a plan that reads them (a generic plan) gets their values before it runs
// (generic_plan.h).
#pragma once

#include <functional>

#include "query/plan/plan.h"

namespace wattdb::plan {

struct PushDownOptions {
  // The scan reads segments on the nodes (not a system view or an index).
  std::function<bool(const PlanNode& scan)> remote;
  // Also the partial half of aggregations and top-N sorts; false: filters and projections only
  // (every row the query reads crosses to the master).
  bool blocking = true;
  // With `blocking` false: an aggregation that splits does its partial half on the reader's
  // threads, a segment's rows at a time, several segments at once (a Gather), and merges
  // their states on the statement's thread; false: all of it on the statement's thread.
  bool gather = true;
};
PlanPtr PushDownFragments(PlanPtr plan, const PushDownOptions& options);

// An aggregation a node can do its part of: the states of count, sum, avg, min and max merge.
bool Splittable(const PlanNode& agg);
// The aggregation split in two: FinalAggregate(wrap(PartialAggregate(agg's input))).
// REQUIRES: Splittable(*agg).
PlanPtr SplitAggregate(PlanPtr agg, const std::function<PlanPtr(PlanPtr)>& wrap);

// The Scan at the bottom of a chain of single-input nodes (a fragment); null if none.
const PlanNode* LeafScan(const PlanNode& chain);

// True if `e` can be evaluated on a node (see above).
bool NodeSafe(const BoundExpr& e);

// Which columns of the leaf Scan of `fragment` (a chain of single-input nodes) the fragment
// reads; the others need not be decoded. Empty if the chain has no scan.
std::vector<bool> UsedScanColumns(const PlanNode& fragment);

}  // namespace wattdb::plan
