// Decoding stored rows (common/codec.h's row format) straight into a batch's typed columns,
// without a Value per datum.
#pragma once

#include <string_view>

#include "common/status.h"
#include "query/exec/batch.h"

namespace wattdb::exec {

// Appends the row encoded in `in` to `out`. Corruption if it does not decode or its width is
// not out->cols.size() (nothing is appended then). With `used`, the columns it marks false
// are skipped and left as they are: PadUnused makes them NULL once the batch is complete.
Status AppendEncodedRow(std::string_view in, Batch* out, const std::vector<bool>* used = nullptr);
void PadUnused(const std::vector<bool>& used, Batch* out);
// The number of columns of the row encoded in `in`.
Result<size_t> EncodedRowWidth(std::string_view in);

}  // namespace wattdb::exec
