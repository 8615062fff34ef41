// Column batches on the wire: what a plan fragment on a node sends to the master. Each column
// travels as its physical type: a NULL bitmap, then its values: integers as fixed-width
// offsets from their smallest value, or from the smallest difference between neighbours when
// that is narrower (0-8 bytes a row: keys in order take none; 1-31 bits instead where whole
// bytes would waste some), one entry per row; raw doubles,
// one per row; the non-NULL values of other types (128-bit decimals with their scale; texts
// length-prefixed, or as a dictionary and one byte per value when a column has few distinct
// values, no byte when it has one; boxed values in the row format). Decoding never reads past its
// input and checks every count.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "query/exec/batch.h"
#include "query/exec/context.h"

namespace wattdb::exec {

void EncodeBatch(const Batch& b, std::string* out);
// Appends the encoding of v's first `rows` rows as one column of a batch (what EncodeBatch
// writes for it: a vector's attached encoding, made this way, is sent as it is).
void EncodeColumn(const Vector& v, size_t rows, std::string* out);
// Replaces `out` with the decoded batch; Corruption on malformed input (`out` is then left
// without columns). Given `in_owner`,
// which keeps `in`'s bytes alive, text values are views into `in` instead of copies.
Status DecodeBatch(std::string_view in, Batch* out,
                   const std::shared_ptr<const TextArena>& in_owner = nullptr);

// Operator counters (a fragment's, in its plan's pre-order) as a node sends them.
std::string EncodeOperatorStats(const std::vector<OperatorStats>& stats);
bool DecodeOperatorStats(std::string_view in, std::vector<OperatorStats>* stats);

}  // namespace wattdb::exec
