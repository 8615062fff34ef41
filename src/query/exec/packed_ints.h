// Integers kept packed as a column batch carries them, and the loops that read them so.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wattdb::exec {

// Integers as a column batch carries them (batch_codec.h), not yet unpacked: row i holds
// base + the little-endian `width`-byte entry i (width 0: every row holds base, no entries).
// Arithmetic wraps (a corrupt peer's entries give wrong values, never undefined behaviour).
struct PackedInts {
  const char* entries = nullptr;
  uint8_t width = 0;  // 0, 1, 2, 4 or 8
  uint64_t base = 0;
};
// out[i] = base + entry i for i in [0, rows). REQUIRES: p holds rows * width bytes.
void UnpackInts(const PackedInts& p, size_t rows, int64_t* out);
// The sum (wrapping), least and greatest of p's first n entries (0 without entries).
uint64_t SumEntries(const PackedInts& p, size_t n);
uint64_t MinEntry(const PackedInts& p, size_t n);
uint64_t MaxEntry(const PackedInts& p, size_t n);

}  // namespace wattdb::exec
