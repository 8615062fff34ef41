// MVCC encoding of versioned records inside a segment's column family.
//
// A segment holds two key spaces, each versioned the same way:
//   rows:           user key = 0x01 || encoded primary key
//                   value    = kind byte (kPut | kDelete) || encoded row (empty for kDelete)
//   index entries:  user key = 0x02 || big-endian index id || index key || encoded primary key
//                   value    = kind byte (kPut = entry live, kDelete = gone) || encoded primary key
//   stored key      = user key || big-endian(~commit_ts)     (8-byte suffix)
//
// An index entry changes at the commit timestamp of the row change that caused it, so a
// reader at snapshot S sees exactly the entries of the row versions it sees.
// Primary-key encodings are prefix-free (common/codec.h), so the suffix never reorders keys:
// all versions of one key are adjacent, newest first. A reader at snapshot S seeks to
// key||~S and takes the first entry of the same key: the newest version with ts <= S.
// We use our own suffix rather than RocksDB user-defined timestamps because it keeps the
// default comparator, survives export/import and SstFileWriter unchanged, and lets a scan
// decide visibility without a second lookup.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/schema.h"

namespace wattdb::storage {

enum class VersionKind : uint8_t { kPut = 1, kDelete = 2 };

constexpr char kRowSpace = 0x01;
constexpr char kIndexSpace = 0x02;

inline std::string RowUserKey(std::string_view pk) {
  std::string k(1, kRowSpace);
  k += pk;
  return k;
}

// The user-key prefix of every entry of index `index`.
inline std::string IndexSpacePrefix(uint32_t index) {
  std::string k(1, kIndexSpace);
  for (int i = 3; i >= 0; i--) k.push_back(static_cast<char>((index >> (i * 8)) & 0xff));
  return k;
}

inline std::string MvccKey(std::string_view user_key, Timestamp ts) {
  std::string k(user_key);
  uint64_t inv = ~ts;
  for (int i = 7; i >= 0; i--) k.push_back(static_cast<char>((inv >> (i * 8)) & 0xff));
  return k;
}

// REQUIRES: k.size() >= 8 (checked by callers against corruption).
inline std::string_view UserKey(std::string_view k) { return k.substr(0, k.size() - 8); }

inline Timestamp VersionTs(std::string_view k) {
  uint64_t inv = 0;
  for (size_t i = k.size() - 8; i < k.size(); i++) inv = (inv << 8) | static_cast<uint8_t>(k[i]);
  return ~inv;
}

}  // namespace wattdb::storage
