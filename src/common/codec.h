// Encodings of keys and rows as stored in segments and shipped between processes.
//
// Key encoding is order-preserving and prefix-free: memcmp order of encoded keys equals the
// SQL order of the key tuples, and no encoded key is a prefix of another. Storage relies on
// prefix-freeness to append an MVCC timestamp suffix without disturbing key order.
//   bool   -> 1 byte
//   int    -> 8 bytes big-endian, sign bit flipped (INTEGER and BIGINT encode alike)
//   double -> 8 bytes, IEEE bits transformed to sort numerically
//   text   -> bytes with 0x00 escaped as 0x00 0xFF, terminated by 0x00 0x01
// Rows are self-describing: varint column count, then per column a type tag and payload.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/schema.h"
#include "common/status.h"
#include "common/value.h"

namespace wattdb {

// Appends the key encoding of `v` to `out`. REQUIRES: !v.is_null().
void EncodeKeyValue(const Value& v, std::string* out);
// The same for an integer or timestamp, and for a text, given without a Value.
void EncodeKeyInt(int64_t v, std::string* out);
void EncodeKeyText(std::string_view s, std::string* out);
// Encodes the key columns of `row` (a full row in schema order).
std::string EncodeKey(const TableSchema& schema, const std::vector<Value>& row);
// Decodes an encoded key back into values of the given types.
Result<std::vector<Value>> DecodeKey(std::string_view key, const std::vector<SqlType>& types);
// The length of the encoding of the first columns of `key`, one of each of `types`;
// Corruption if `key` is shorter or does not decode.
Result<size_t> KeyPrefixBytes(std::string_view key, const std::vector<SqlType>& types);
// The smallest encoded key strictly greater than every key that starts with `prefix`
// (used for upper bounds of prefix ranges). Returns "" (meaning +infinity) if none exists.
std::string PrefixSuccessor(std::string_view prefix);

// Secondary-index keys: per column a tag byte (0x01 value, 0x02 NULL, so NULLs sort last)
// and the value's key encoding; every byte of a DESC column is complemented, which reverses
// its order and keeps the encoding prefix-free. `row` is a full row in schema order.
void EncodeIndexColumn(const Value& v, bool desc, std::string* out);
std::string EncodeIndexKey(const IndexKeySpec& spec, const std::vector<Value>& row);
// True if a column of `spec` is NULL in `row`: a unique index lets such keys repeat.
bool IndexKeyHasNull(const IndexKeySpec& spec, const std::vector<Value>& row);

void EncodeRow(const std::vector<Value>& row, std::string* out);
// EncodeRow piece by piece: the column count, then each column in order (AppendRowValue, or
// for a value of a known type the functions after it, which write the same bytes).
void AppendRowHeader(size_t columns, std::string* out);
void AppendRowValue(const Value& v, std::string* out);
void AppendRowNull(std::string* out);
void AppendRowInt(TypeId type, int64_t v, std::string* out);  // kInt32, kInt64 or kTimestamp
void AppendRowNumeric(const Decimal& d, std::string* out);
void AppendRowText(std::string_view s, std::string* out);
Status DecodeRow(std::string_view in, std::vector<Value>* row);

// Human-readable form of an encoded key for views and logs ("-inf"/"+inf" for "").
std::string KeyToString(std::string_view key, const std::vector<SqlType>& types, bool upper);

}  // namespace wattdb
