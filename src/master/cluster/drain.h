// DrainRounds: the loop that empties a node of its segments, shared by ALTER NODE ... DRAIN
// (Placement::DrainNode) and the energy controller's drain before a sleep, which differ only
// in the order of the segments, where each goes and how fast.
#pragma once

#include <functional>
#include <vector>

#include "common/schema.h"
#include "common/status.h"

namespace wattdb::master {

struct DrainSteps {
  // The segments the node owns now, in the order to move them; empty: it is drained. An
  // error ends the drain.
  std::function<Result<std::vector<SegmentId>>()> owned;
  // Moves one segment off the node (choosing where to).
  std::function<Status(SegmentId)> move;
};

// Moves the segments of `node` away until it owns none. Writes go on while a node drains, so
// its segments may split meanwhile: each round lists what the node owns and moves all of it,
// and a later round moves the pieces. Stops at the first error; fails with 55000 if the node
// still owns segments after `max_rounds` rounds. `*moves` (if given) counts the moves made.
Status DrainRounds(NodeId node, int max_rounds, const DrainSteps& steps, int* moves = nullptr);

}  // namespace wattdb::master
