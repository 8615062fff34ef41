// Batch: up to kBatchRows rows stored column by column (typed vectors); the unit operators
// pass upward.
#pragma once

#include <cstddef>
#include <vector>

#include "common/value.h"
#include "query/exec/vector.h"

namespace wattdb::exec {

// Large enough that what is paid per batch (a message through the exchange, an operator's
// call, a vector's allocation) is small next to the rows' work; small enough that a batch's
// columns stay in the core's cache (4096 rows: 32 KB an integer column, 64 KB of text views).
constexpr size_t kBatchRows = 4096;

struct Batch {
  std::vector<Vector> cols;
  size_t rows = 0;

  void Reset(size_t ncols) {
    cols.resize(ncols);
    for (auto& c : cols) c.Clear();
    rows = 0;
  }
  // REQUIRES: row.size() == cols.size().
  void AppendRow(std::vector<Value>&& row) {
    for (size_t i = 0; i < cols.size(); i++) cols[i].Append(std::move(row[i]));
    rows++;
  }
  // Appends row r of `src`. REQUIRES: same column count, &src != this.
  void AppendRowFrom(const Batch& src, size_t r) {
    for (size_t i = 0; i < cols.size(); i++) cols[i].AppendFrom(src.cols[i], r);
    rows++;
  }
  Value Get(size_t col, size_t r) const { return cols[col].GetValue(r); }
  std::vector<Value> Row(size_t r) const {
    std::vector<Value> out;
    out.reserve(cols.size());
    for (const auto& c : cols) out.push_back(c.GetValue(r));
    return out;
  }
};

}  // namespace wattdb::exec
