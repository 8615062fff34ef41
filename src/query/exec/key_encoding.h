// Hash keys from typed columns: values that grouping and joins treat as equal (1 and 1.00 as
// NUMERIC, -0.0 and 0.0, integer and bigint) encode to equal bytes, so hash tables key on
// strings instead of boxed Values.
#pragma once

#include <string>

#include "query/exec/vector.h"

namespace wattdb::exec {

// Key families whose values compare equal exactly when their encodings are equal.
enum class Family { kInt, kNumeric, kDouble, kText, kBool, kTimestamp, kOther };

Family FamilyOf(TypeId t);

// Appends row r of column v, encoded as family f; false (nothing appended) if it is NULL.
bool PutKey(Family f, const Vector& v, size_t r, std::string* out);

}  // namespace wattdb::exec
