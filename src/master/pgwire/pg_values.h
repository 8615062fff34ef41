// Values in the PostgreSQL wire formats: text (format 0) and binary (format 1, network byte
// order) for the types WattDB has (bool, int2/int4/int8, float4/float8, text, varchar).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/value.h"

namespace wattdb::master::pg {

// Appends `v` (not NULL) of SQL type `t` in text or binary format.
void EncodeValue(const Value& v, const SqlType& t, bool binary, std::string* out);

// Decodes a parameter sent as `bytes` in text or binary format into type `t`; `oid` is the
// type the client declared for it (0 = none), which fixes the width of binary integers.
// Bad bytes give 22P02 (text) or 08P01 (binary).
Result<Value> DecodeParam(std::string_view bytes, bool binary, const SqlType& t, int32_t oid);

// The SQL type of a parameter type OID; 0 and 705 (unknown) give kNull ("infer it").
Result<SqlType> TypeFromOid(int32_t oid);

}  // namespace wattdb::master::pg
