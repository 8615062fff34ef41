// Integers kept packed as a column batch carries them, and the loops that read them so.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wattdb::exec {

// Integers as a column batch carries them (batch_codec.h), not yet unpacked: row i holds
// base + the little-endian `width`-byte entry i (width 0: every row holds base, no entries),
// or, with `bits`, base + the `bits`-bit entry i (see PackBitEntries below).
// Arithmetic wraps (a corrupt peer's entries give wrong values, never undefined behaviour).
struct PackedInts {
  const char* entries = nullptr;
  uint8_t width = 0;  // 0, 1, 2, 4 or 8; unused with bits
  uint8_t bits = 0;   // 1..kMaxBitEntry: entries of this many bits; 0: of `width` bytes
  uint64_t base = 0;
};
// out[i] = base + entry i for i in [0, rows). REQUIRES: p holds rows' entries.
void UnpackInts(const PackedInts& p, size_t rows, int64_t* out);
// The sum (wrapping), least and greatest of p's first n entries (0 without entries).
uint64_t SumEntries(const PackedInts& p, size_t n);
uint64_t MinEntry(const PackedInts& p, size_t n);
uint64_t MaxEntry(const PackedInts& p, size_t n);

// Entries of `bits` bits each (1..kMaxBitEntry), row i's at bit i * bits, least significant
// bit first: what a column batch carries when whole bytes would waste bits.
constexpr uint8_t kMaxBitEntry = 32;
// Bytes `rows` entries of `bits` bits take.
inline size_t BitEntryBytes(size_t rows, uint8_t bits) { return (rows * bits + 7) / 8; }
// Writes entries e[0..rows) (each below 2^bits) to out[0..BitEntryBytes(rows, bits)).
// REQUIRES: 8 more bytes writable at out (whole words are written; the extra ones get 0).
void PackBitEntries(const uint64_t* e, size_t rows, uint8_t bits, char* out);
// Entry i of p's `rows` entries (0 without entries).
uint64_t EntryAt(const PackedInts& p, size_t rows, size_t i);

}  // namespace wattdb::exec
