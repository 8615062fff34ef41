// The hash join over typed batches (see hash_join.cc). Null if the join's key pairs are not
// of one comparable family each (int/int, numeric/numeric, text/text, ...): the caller then
// uses the row-at-a-time join. `left` and `right` are taken only when it returns non-null.
#pragma once

#include <memory>

#include "query/exec/operator.h"

namespace wattdb::exec {

std::unique_ptr<Operator> MakeTypedHashJoin(const plan::PlanNode& p,
                                            std::unique_ptr<Operator>& left,
                                            std::unique_ptr<Operator>& right);

}  // namespace wattdb::exec
