// Evaluation of the scalar built-ins plan/builtins.h resolves (Func::kBuiltin).
#pragma once

#include <string>
#include <vector>

#include "common/value.h"

namespace wattdb::exec {

// `args` already have the resolved parameter types. NULL in, NULL out (except concat and
// concat_ws, which skip NULLs).
Result<Value> CallBuiltin(const std::string& name, const std::vector<Value>& args);

}  // namespace wattdb::exec
