// Scalar built-in functions resolved by name and argument types (math and string functions
// such as ceil, sqrt, substring, replace). A call binds to Func::kBuiltin with the function's
// name in BoundExpr::value; exec/builtins.cc evaluates it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/value.h"

namespace wattdb::plan {

struct BuiltinSig {
  std::vector<SqlType> params;  // the arguments are coerced to these
  SqlType result;
};

// The signature `name` takes for arguments of types `args` (`untyped[i]`: an untyped literal
// or parameter, which fits any parameter), as PostgreSQL resolves it: an exact match first,
// then one reached by numeric promotion (preferring double precision). nullopt if none.
std::optional<BuiltinSig> ResolveBuiltin(const std::string& name, const std::vector<SqlType>& args,
                                         const std::vector<bool>& untyped);

}  // namespace wattdb::plan
