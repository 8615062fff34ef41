// Operators over two inputs: hash join, nested-loop join, and set operations. Each reads its
// right input completely at the first Next() (the build side) and then streams the left.
#pragma once

#include <memory>

#include "query/exec/operator.h"

namespace wattdb::exec {

std::unique_ptr<Operator> MakeHashJoin(const plan::PlanNode& p, std::unique_ptr<Operator> left,
                                       std::unique_ptr<Operator> right);
std::unique_ptr<Operator> MakeNestedLoopJoin(const plan::PlanNode& p,
                                             std::unique_ptr<Operator> left,
                                             std::unique_ptr<Operator> right);
// kIndexJoin over its single child (the outer input).
std::unique_ptr<Operator> MakeIndexJoin(const plan::PlanNode& p, std::unique_ptr<Operator> outer);
std::unique_ptr<Operator> MakeSetOp(const plan::PlanNode& p, std::unique_ptr<Operator> left,
                                    std::unique_ptr<Operator> right);

}  // namespace wattdb::exec
