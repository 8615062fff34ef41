// Joins of tables co-located by key range, run where the data is. A hash join of two
// Exchanges, over tables A and B, on the leading primary-key columns of A that are all of B's
// primary key (a foreign key into B, as lineitem's l_orderkey into orders) splits into one
// join per segment of A: A's rows of the segment's key range meet the rows of B whose keys lie
// between the key prefixes of the range's ends. Under an aggregation that splits (through
// filters and projections), the join goes below a Partition node with the partial half of the
// aggregation (so a part's output is complete before any of it is sent, and a part whose node
// fails can run elsewhere). The master runs each part on the node owning the segment (its
// Exchanges read A there and B wherever it lives), a few at a time, or in place.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "query/plan/plan.h"

namespace wattdb::plan {

struct PartitionOptions {
  // The primary-key columns of a table, in key order (empty: unknown, no partitioning).
  std::function<std::vector<int>(TableId)> key_columns;
};
PlanPtr PartitionJoins(PlanPtr plan, const PartitionOptions& options);

// Narrows the scans of a Partition's subtree (a copy of children[0]) to one part: the
// partitioning Exchange's scan to [lo, hi) (within its own range), the other Exchanges' scans
// to the keys between the key prefixes of lo and hi (prefix of hi included). False if the
// part is empty.
bool NarrowToPart(const PlanNode& partition, PlanNode* subtree, const std::string& lo,
                  const std::string& hi);

}  // namespace wattdb::plan
