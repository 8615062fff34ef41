#include "master/cluster/drain.h"

#include <fmt/format.h>

#include "common/sqlstate.h"

namespace wattdb::master {

Status DrainRounds(NodeId node, int max_rounds, const DrainSteps& steps, int* moves) {
  for (int round = 0;; round++) {
    ASSIGN_OR_RETURN(std::vector<SegmentId> left, steps.owned());
    if (left.empty()) return Status::OK();
    if (round == max_rounds) {
      return Status::Sql(
          sqlstate::kObjectNotInPrerequisiteState,
          fmt::format("node {} still owns {} segment(s) after {} rounds of moves; writes keep "
                      "splitting them: try again",
                      node, left.size(), max_rounds));
    }
    for (SegmentId seg : left) {
      RETURN_NOT_OK(steps.move(seg));
      if (moves) (*moves)++;
    }
  }
}

}  // namespace wattdb::master
