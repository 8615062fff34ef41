#include "query/exec/packed_ints.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

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

namespace {

// Entries of B bits (a constant, so each of eight entries' shift is one too): eight entries
// take B bytes, read as whole 64-bit words where the input lasts, the rest from a padded copy.
template <int B, typename U>
void UnpackBitsAs(const char* __restrict in, size_t rows, char* __restrict out) {
  constexpr uint64_t kMask = (uint64_t{1} << B) - 1;
  const size_t bytes = BitEntryBytes(rows, B);
  auto group = [&](const char* g, size_t first, size_t n) {  // entries [first, first + n), the first at g
    for (size_t j = 0; j < n; j++) {
      const size_t at = j * B;
      uint64_t word;
      std::memcpy(&word, g + at / 8, 8);
      auto u = static_cast<U>((word >> (at % 8)) & kMask);
      std::memcpy(out + (first + j) * sizeof(U), &u, sizeof(U));
    }
  };
  size_t i = 0;
  for (; i + 8 <= rows && (i / 8) * B + B + 8 <= bytes; i += 8) group(in + (i / 8) * B, i, 8);
  if (i < rows) {  // fewer than B + 8 bytes left; each entry read with 8 bytes from its first
    char tail[B + 16] = {};
    std::memcpy(tail, in + (i / 8) * B, bytes - (i / 8) * B);
    group(tail, i, rows - i);
  }
}

template <int B>
void UnpackBits(const char* in, size_t rows, uint8_t width, char* out) {
  switch (width) {
    case 1: if constexpr (B <= 8) return UnpackBitsAs<B, uint8_t>(in, rows, out); break;
    case 2: if constexpr (B <= 16) return UnpackBitsAs<B, uint16_t>(in, rows, out); break;
    case 4: return UnpackBitsAs<B, uint32_t>(in, rows, out);
    default: return UnpackBitsAs<B, uint64_t>(in, rows, out);
  }
}

template <int B>
void PackBits(const uint64_t* __restrict e, size_t rows, char* __restrict out) {
  std::memset(out, 0, BitEntryBytes(rows, B) + 8);
  for (size_t i = 0; i < rows; i++) {
    const size_t at = i * B;
    uint64_t word;
    std::memcpy(&word, out + at / 8, 8);
    word |= e[i] << (at % 8);  // B + 7 bits at most: within the word
    std::memcpy(out + at / 8, &word, 8);
  }
}

template <int... B>
void PackBitsOf(std::integer_sequence<int, B...>, const uint64_t* e, size_t rows, uint8_t bits, char* out) {
  ((bits == B + 1 ? PackBits<B + 1>(e, rows, out) : void()), ...);
}

template <int... B>
void UnpackBitsOf(std::integer_sequence<int, B...>, const char* in, size_t rows, uint8_t bits, uint8_t width,
                  char* out) {
  ((bits == B + 1 ? UnpackBits<B + 1>(in, rows, width, out) : void()), ...);
}

}  // namespace

void PackBitEntries(const uint64_t* e, size_t rows, uint8_t bits, char* out) {
  PackBitsOf(std::make_integer_sequence<int, kMaxBitEntry>(), e, rows, bits, out);
}

void UnpackBitEntries(const char* in, size_t rows, uint8_t bits, uint8_t width, char* out) {
  UnpackBitsOf(std::make_integer_sequence<int, kMaxBitEntry>(), in, rows, bits, width, out);
}

uint64_t MinEntry(const PackedInts& p, size_t n) { return ExtremeEntry<true>(p, n); }
uint64_t MaxEntry(const PackedInts& p, size_t n) { return ExtremeEntry<false>(p, n); }

}  // namespace wattdb::exec
