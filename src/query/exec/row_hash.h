// Hashing and equality of rows and values for hash tables (grouping, joins, set operations).
// NULLs are equal to each other here (grouping semantics); integral numbers hash alike
// whatever their width, so 1 and 1.0 fall into one group.
#pragma once

#include <vector>

#include "common/value.h"

namespace wattdb::exec {

struct RowHash {
  size_t operator()(const std::vector<Value>& r) const {
    size_t h = 1469598103934665603ull;
    for (const auto& v : r) h = (h ^ v.Hash()) * 1099511628211ull;
    return h;
  }
};
struct RowEq {
  bool operator()(const std::vector<Value>& a, const std::vector<Value>& b) const {
    for (size_t i = 0; i < a.size(); i++) {
      if (a[i].is_null() != b[i].is_null()) return false;
      if (!a[i].is_null() && a[i].Compare(b[i]) != 0) return false;
    }
    return true;
  }
};

struct ValueHash {
  size_t operator()(const Value& v) const { return v.Hash(); }
};
struct ValueEq {
  bool operator()(const Value& a, const Value& b) const { return a.Compare(b) == 0; }
};

}  // namespace wattdb::exec
