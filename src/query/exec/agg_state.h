// The partial state of one aggregate of one group (HashAggregateOp, aggregate.cc), and its
// encoding as a value of a state column: what a node's partial aggregation sends the master
// (AggMode::kPartial), and what the final aggregation merges.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>

#include "common/decimal.h"
#include "common/status.h"
#include "common/value.h"
#include "query/exec/row_hash.h"
#include "query/plan/plan.h"

namespace wattdb::exec {

struct AggState {  // the fields sums touch first: within 64 bytes
  Decimal nsum;    // NUMERIC arguments
  int64_t count = 0;
  double dsum = 0;
  __int128 isum = 0;
  std::string text;                                                     // string_agg
  Value best;                                                           // min, max
  std::unique_ptr<std::unordered_set<Value, ValueHash, ValueEq>> seen;  // DISTINCT aggregates
};

// A byte of flags, then only the fields in use (a count or a sum of integers takes a few
// bytes, and merging it allocates nothing).
Value EncodeState(const AggState& s);
// Adds the encoded state `in` of aggregate `a` into `*s`; Corruption if it does not decode.
Status MergeState(const plan::AggSpec& a, std::string_view in, AggState* s);

}  // namespace wattdb::exec
