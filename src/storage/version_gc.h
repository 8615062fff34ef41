// VersionGc: a RocksDB compaction filter that removes MVCC versions no reader can see.
//
// With GC horizon H (every snapshot in use is >= H), a key keeps all versions newer than H
// and its newest version at or below H (what a reader at H sees); older versions are
// dropped as flushes and compactions rewrite them. That newest version goes too if it is a
// deletion and the compaction holds all of the segment's table files (a full one): a deleted
// row, or an index entry its row left, leaves nothing behind once no snapshot sees it.
// Compaction visits a key's versions newest first, so the filter only needs to remember the
// key it is in. Horizon 0 keeps everything.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <rocksdb/compaction_filter.h>

namespace wattdb::storage {

class VersionGcFactory : public rocksdb::CompactionFilterFactory {
 public:
  explicit VersionGcFactory(std::shared_ptr<std::atomic<uint64_t>> horizon)
      : horizon_(std::move(horizon)) {}
  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override;
  // Flushes too: a hot row's shadowed versions in a memtable never reach the table files.
  bool ShouldFilterTableFileCreation(rocksdb::TableFileCreationReason reason) const override {
    return reason == rocksdb::TableFileCreationReason::kFlush ||
           reason == rocksdb::TableFileCreationReason::kCompaction;
  }
  const char* Name() const override { return "wattdb.VersionGc"; }

 private:
  std::shared_ptr<std::atomic<uint64_t>> horizon_;  // shared with the SegmentStore
};

}  // namespace wattdb::storage
