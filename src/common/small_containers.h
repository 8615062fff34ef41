// Containers for the few elements a statement or a transaction usually holds: the first N
// live inline, so building and dropping them allocates nothing until they outgrow it.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

#include <boost/container/flat_map.hpp>
#include <boost/container/flat_set.hpp>
#include <boost/container/small_vector.hpp>

namespace wattdb {

template <typename T, size_t N = 4>
using SmallVector = boost::container::small_vector<T, N>;

// Ordered by key like std::map (iteration in key order, find, operator[], erase); an insert
// or erase moves the elements after it, and invalidates iterators and references.
template <typename K, typename V, size_t N = 4>
using SmallFlatMap =
    boost::container::flat_map<K, V, std::less<K>, SmallVector<std::pair<K, V>, N>>;

template <typename K, size_t N = 4>
using SmallFlatSet = boost::container::flat_set<K, std::less<K>, SmallVector<K, N>>;

}  // namespace wattdb
