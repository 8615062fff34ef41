// Batch: up to kBatchRows rows stored column by column; the unit operators pass upward.
#pragma once

#include <cstddef>
#include <vector>

#include "common/value.h"

namespace wattdb::exec {

constexpr size_t kBatchRows = 1024;

struct Batch {
  std::vector<std::vector<Value>> cols;
  size_t rows = 0;

  void Reset(size_t ncols) {
    cols.resize(ncols);
    for (auto& c : cols) c.clear();
    rows = 0;
  }
  // REQUIRES: row.size() == cols.size().
  void AppendRow(std::vector<Value>&& row) {
    for (size_t i = 0; i < cols.size(); i++) cols[i].push_back(std::move(row[i]));
    rows++;
  }
  std::vector<Value> Row(size_t r) const {
    std::vector<Value> out;
    out.reserve(cols.size());
    for (const auto& c : cols) out.push_back(c[r]);
    return out;
  }
};

}  // namespace wattdb::exec
