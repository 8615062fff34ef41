#include "query/exec/packed_ints.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>
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

// Entries of B bits (a constant, so each of eight entries' shift is one too): eight entries
// take B bytes, read as whole 64-bit words where the input lasts, the rest from a padded
// copy. Calls fn(i, entry i) for i in [0, rows).
template <int B, typename Fn>
void ForBitEntries(const char* __restrict in, size_t rows, const Fn& fn) {
  constexpr uint64_t kMask = (uint64_t{1} << B) - 1;
  const size_t bytes = BitEntryBytes(rows, B);
  auto group = [&](const char* g, size_t first,
                   size_t n) {  // entries [first, first + n), the first at g
    for (size_t j = 0; j < n; j++) {
      const size_t at = j * B;
      uint64_t word;
      std::memcpy(&word, g + at / 8, 8);
      fn(first + j, (word >> (at % 8)) & kMask);
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

// The operations on entries of B bits, for one B.
template <int B>
struct BitOps {
  static void Unpack(const char* in, size_t rows, uint64_t base, uint64_t* __restrict x) {
    ForBitEntries<B>(in, rows, [&](size_t i, uint64_t e) { x[i] = base + e; });
  }
  static void Pack(const uint64_t* __restrict e, size_t rows, char* __restrict out) {
    std::memset(out, 0, BitEntryBytes(rows, B) + 8);
    for (size_t i = 0; i < rows; i++) {
      const size_t at = i * B;
      uint64_t word;
      std::memcpy(&word, out + at / 8, 8);
      word |= e[i] << (at % 8);  // B + 7 bits at most: within the word
      std::memcpy(out + at / 8, &word, 8);
    }
  }
  static uint64_t Sum(const char* in, size_t rows) {
    uint64_t sum = 0;
    ForBitEntries<B>(in, rows, [&](size_t, uint64_t e) { sum += e; });
    return sum;
  }
  template <bool kMin>
  static uint64_t Extreme(const char* in, size_t rows) {
    uint64_t b = kMin ? std::numeric_limits<uint64_t>::max() : 0;
    ForBitEntries<B>(in, rows,
                     [&](size_t, uint64_t e) { b = kMin ? (e < b ? e : b) : (e > b ? e : b); });
    return b;
  }
};

// Runs f.template operator()<BitOps<bits>>() for the bits given (1..kMaxBitEntry) and
// returns what it returns (a value-initialized one for other bits).
template <typename F, int... B>
auto WithBitOps(std::integer_sequence<int, B...>, uint8_t bits, const F& f) {
  using R = decltype(f.template operator()<BitOps<1>>());
  if constexpr (std::is_void_v<R>) {
    ((bits == B + 1 ? f.template operator()<BitOps<B + 1>>() : void()), ...);
  } else {
    R r{};
    ((bits == B + 1 ? (void)(r = f.template operator()<BitOps<B + 1>>()) : void()), ...);
    return r;
  }
}
template <typename F>
auto WithBitOps(uint8_t bits, const F& f) {
  return WithBitOps(std::make_integer_sequence<int, kMaxBitEntry>(), bits, f);
}

template <bool kMin>
uint64_t ExtremeEntry(const PackedInts& p, size_t n) {
  if (p.bits) {
    return n == 0 ? 0 : WithBitOps(p.bits, [&]<typename Ops>() {
      return Ops::template Extreme<kMin>(p.entries, n);
    });
  }
  switch (p.width) {
    case 1:
      return ExtremeAs<uint8_t, kMin>(p.entries, n);
    case 2:
      return ExtremeAs<uint16_t, kMin>(p.entries, n);
    case 4:
      return ExtremeAs<uint32_t, kMin>(p.entries, n);
    case 8:
      return ExtremeAs<uint64_t, kMin>(p.entries, n);
    default:
      return 0;
  }
}

}  // namespace

// Each loop out of line, in a function of its own, so that it vectorizes.
void UnpackInts(const PackedInts& p, size_t rows, int64_t* out) {
  auto* x = reinterpret_cast<uint64_t*>(out);
  if (p.bits) {
    WithBitOps(p.bits, [&]<typename Ops>() { return Ops::Unpack(p.entries, rows, p.base, x); });
    return;
  }
  switch (p.width) {
    case 1:
      UnpackAs<uint8_t>(p.entries, rows, p.base, x);
      break;
    case 2:
      UnpackAs<uint16_t>(p.entries, rows, p.base, x);
      break;
    case 4:
      UnpackAs<uint32_t>(p.entries, rows, p.base, x);
      break;
    case 8:
      UnpackAs<uint64_t>(p.entries, rows, p.base, x);
      break;
    default:
      std::fill(x, x + rows, p.base);
      break;
  }
}

uint64_t SumEntries(const PackedInts& p, size_t n) {
  if (p.bits) return WithBitOps(p.bits, [&]<typename Ops>() { return Ops::Sum(p.entries, n); });
  switch (p.width) {
    case 1:
      return SumAs<uint8_t>(p.entries, n);
    case 2:
      return SumAs<uint16_t>(p.entries, n);
    case 4:
      return SumAs<uint32_t>(p.entries, n);
    case 8:
      return SumAs<uint64_t>(p.entries, n);
    default:
      return 0;
  }
}

uint64_t MinEntry(const PackedInts& p, size_t n) { return ExtremeEntry<true>(p, n); }
uint64_t MaxEntry(const PackedInts& p, size_t n) { return ExtremeEntry<false>(p, n); }

uint64_t EntryAt(const PackedInts& p, size_t rows, size_t i) {
  uint64_t e = 0;
  if (p.bits) {
    // The entry's bytes (at most five), within the entries.
    const size_t at = i * p.bits, first = at / 8;
    std::memcpy(&e, p.entries + first, std::min<size_t>(8, BitEntryBytes(rows, p.bits) - first));
    return (e >> (at % 8)) & ((uint64_t{1} << p.bits) - 1);
  }
  if (p.width > 0) std::memcpy(&e, p.entries + i * p.width, p.width);  // little-endian
  return e;
}

void PackBitEntries(const uint64_t* e, size_t rows, uint8_t bits, char* out) {
  WithBitOps(bits, [&]<typename Ops>() { return Ops::Pack(e, rows, out); });
}

}  // namespace wattdb::exec
