// LogPrefillFs: a RocksDB FileSystem whose write-ahead log files are written over zeros
// already on disk, as PostgreSQL writes its WAL segments.
//
// RocksDB appends each log file from empty (its log recycling is switched off in the recovery
// mode our stores use), so every synced commit also makes fdatasync write the file's grown
// size and newly used blocks through the file system's journal: about 60 us of CPU and
// 130 us of latency per commit here, against 37 us and 86 us for a write over blocks that
// already hold zeros. A log file opened through this file system is extended with zeros
// kPrefillBytes at a time, ahead of the appends (through a second descriptor, without
// syncing: the next sync takes the zeros too, once per chunk), so that the appends and
// their syncs change neither size nor block map. Closing the file cuts it back to what was
// appended. After a crash a log may end in zeros: RocksDB's log reader skips zeroed blocks
// as preallocated space (the reader's kZeroType case), so recovery sees the same records.
//
// Files other than "*.log" pass through unchanged. Thread-compatible per file, as RocksDB
// uses them.
#pragma once

#include <memory>
#include <string>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

namespace wattdb::storage {

class LogPrefillFs : public rocksdb::FileSystemWrapper {
 public:
  static constexpr uint64_t kPrefillBytes = 1 << 20;

  explicit LogPrefillFs(std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default())
      : FileSystemWrapper(std::move(base)) {}
  static const char* kClassName() { return "LogPrefillFs"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& opts,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
};

// An Env over LogPrefillFs on the default file system, shared by every store of the process.
rocksdb::Env* LogPrefillEnv();

}  // namespace wattdb::storage
