#include "query/exec/packed_ints.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace wattdb::exec {

namespace {

template <typename U>
U Entry(const char* e, size_t i) {
  U u;
  std::memcpy(&u, e + i * sizeof(U), sizeof(U));  // little-endian, as the codec writes them
  return u;
}

template <typename U>
void UnpackAs(const char* __restrict p, size_t rows, uint64_t base, uint64_t* __restrict x) {
  for (size_t i = 0; i < rows; i++) x[i] = base + Entry<U>(p, i);
}

template <typename U>
uint64_t SumAs(const char* e, size_t n) {
  if constexpr (sizeof(U) <= 2) {
    // In 32 bits, a block at a time (65,536 entries below 2^16 cannot overflow them): the
    // loop adds twice as many entries a step as in 64 bits.
    constexpr size_t kBlock = 65536;
    uint64_t sum = 0;
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t end = std::min(n, at + kBlock);
      uint32_t part = 0;
      for (size_t i = at; i < end; i++) part += Entry<U>(e, i);
      sum += part;
    }
    return sum;
  }
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += Entry<U>(e, i);
  return sum;
}

template <typename U, bool kMin>
uint64_t ExtremeAs(const char* e, size_t n) {
  U b = kMin ? std::numeric_limits<U>::max() : 0;
  for (size_t i = 0; i < n; i++) {
    U u = Entry<U>(e, i);
    b = kMin ? (u < b ? u : b) : (u > b ? u : b);
  }
  return b;
}

template <bool kMin>
uint64_t ExtremeEntry(const PackedInts& p, size_t n) {
  switch (p.width) {
    case 1: return ExtremeAs<uint8_t, kMin>(p.entries, n);
    case 2: return ExtremeAs<uint16_t, kMin>(p.entries, n);
    case 4: return ExtremeAs<uint32_t, kMin>(p.entries, n);
    case 8: return ExtremeAs<uint64_t, kMin>(p.entries, n);
    default: return 0;
  }
}

}  // namespace

// Each loop out of line, in a function of its own, so that it vectorizes.
void UnpackInts(const PackedInts& p, size_t rows, int64_t* out) {
  auto* x = reinterpret_cast<uint64_t*>(out);
  switch (p.width) {
    case 1: UnpackAs<uint8_t>(p.entries, rows, p.base, x); break;
    case 2: UnpackAs<uint16_t>(p.entries, rows, p.base, x); break;
    case 4: UnpackAs<uint32_t>(p.entries, rows, p.base, x); break;
    case 8: UnpackAs<uint64_t>(p.entries, rows, p.base, x); break;
    default: std::fill(x, x + rows, p.base); break;
  }
}

uint64_t SumEntries(const PackedInts& p, size_t n) {
  switch (p.width) {
    case 1: return SumAs<uint8_t>(p.entries, n);
    case 2: return SumAs<uint16_t>(p.entries, n);
    case 4: return SumAs<uint32_t>(p.entries, n);
    case 8: return SumAs<uint64_t>(p.entries, n);
    default: return 0;
  }
}

uint64_t MinEntry(const PackedInts& p, size_t n) { return ExtremeEntry<true>(p, n); }
uint64_t MaxEntry(const PackedInts& p, size_t n) { return ExtremeEntry<false>(p, n); }

}  // namespace wattdb::exec
