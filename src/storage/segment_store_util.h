// Helpers shared by the files of SegmentStore (segment_store.cc, segment_apply.cc,
// segment_reshape.cc).
#pragma once

#include <memory>
#include <string>

#include <rocksdb/cache.h>
#include <rocksdb/options.h>
#include <rocksdb/status.h>
#include <rocksdb/table.h>

#include "common/status.h"

namespace wattdb::storage::internal {

// Metadata changes (segments created, dropped, split, imported) are acknowledged only once
// they are on disk.
inline rocksdb::WriteOptions Synced() {
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return wo;
}

// Keys of the per-transaction records in the default column family: durable prepares and
// commit outcomes, each prefix followed by the transaction id (big-endian).
constexpr char kPreparedPrefix[] = "p/txn/";
constexpr char kOutcomePrefix[] = "o/txn/";
// A follower's copies of its leaders' prepare records: the prefix, the segment, the txn.
constexpr char kReplicaPreparedPrefix[] = "r/txn/";

inline std::string BigEndian64(uint64_t v) {
  std::string out;
  for (int i = 7; i >= 0; i--) out.push_back(static_cast<char>((v >> (i * 8)) & 0xff));
  return out;
}
inline std::string PreparedKey(uint64_t txn) { return kPreparedPrefix + BigEndian64(txn); }
inline std::string OutcomeKey(uint64_t txn) { return kOutcomePrefix + BigEndian64(txn); }
inline std::string ReplicaPreparedKey(uint64_t segment, uint64_t txn) {
  return kReplicaPreparedPrefix + BigEndian64(segment) + BigEndian64(txn);
}

inline Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  // A segment dropped while an operation held it (it moved or split meanwhile): the caller's
  // view of placement is out of date, as when the segment is no longer found.
  if (s.IsColumnFamilyDropped()) return Status::Stale(what + ": the segment was dropped meanwhile");
  if (s.IsNotFound()) return Status::NotFound(what + ": " + s.ToString());
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  if (s.IsInvalidArgument()) return Status::InvalidArgument(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

// Options of every segment column family; `gc` drops versions no snapshot can see.
// One block cache for every segment of the process: scans find blocks decompressed there
// (RocksDB's default is a small cache per column family).
inline std::shared_ptr<rocksdb::Cache> SegmentBlockCache() {
  static const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(size_t{512} << 20);
  return cache;
}

inline rocksdb::ColumnFamilyOptions SegmentCfOptions(
    const std::shared_ptr<rocksdb::CompactionFilterFactory>& gc) {
  rocksdb::ColumnFamilyOptions o;
  o.write_buffer_size = 8 << 20;
  // Compactions write files of this size: a split's compaction of the moved range rewrites
  // only the file its split key falls in (and reads the ones above it).
  o.target_file_size_base = 8 << 20;
  o.compaction_filter_factory = gc;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = SegmentBlockCache();
  t.block_size = 16 << 10;  // scans read whole segments: fewer, larger blocks
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  o.compression = rocksdb::kLZ4Compression;  // decompresses about twice as fast as Snappy
  return o;
}

}  // namespace wattdb::storage::internal
