#include "storage/version_gc.h"

#include <string>

#include "storage/mvcc.h"

namespace wattdb::storage {

namespace {

class VersionGc : public rocksdb::CompactionFilter {
 public:
  VersionGc(uint64_t horizon, bool full) : horizon_(horizon), full_(full) {}

  bool Filter(int, const rocksdb::Slice& key, const rocksdb::Slice& value, std::string*,
              bool*) const override {
    if (key.size() < 8) return false;
    std::string_view k(key.data(), key.size());
    std::string_view user = UserKey(k);
    if (user != last_key_) {
      last_key_.assign(user);
      seen_visible_ = false;
    }
    if (VersionTs(k) > horizon_) return false;  // newer than every snapshot in use
    if (!seen_visible_) {                       // the version readers at the horizon see
      seen_visible_ = true;
      // A deletion (of a row, or of an index entry) goes too when this compaction holds every
      // file of the segment: readers at or above the horizon find nothing either way, and no
      // older version is left elsewhere to show again.
      return full_ && !value.empty() && static_cast<VersionKind>(value[0]) == VersionKind::kDelete;
    }
    return true;  // shadowed for every snapshot in use
  }
  const char* Name() const override { return "wattdb.VersionGc"; }

 private:
  const uint64_t horizon_;
  const bool full_;  // the compaction holds every table file of the segment
  // One filter serves one compaction, which visits keys in order on one thread.
  mutable std::string last_key_;
  mutable bool seen_visible_ = false;
};

}  // namespace

std::unique_ptr<rocksdb::CompactionFilter> VersionGcFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context& context) {
  return std::make_unique<VersionGc>(horizon_->load(), context.is_full_compaction);
}

}  // namespace wattdb::storage
