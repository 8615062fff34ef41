#include "storage/version_gc.h"

#include <string>

#include "storage/mvcc.h"

namespace wattdb::storage {

namespace {

class VersionGc : public rocksdb::CompactionFilter {
 public:
  explicit VersionGc(uint64_t horizon) : horizon_(horizon) {}

  bool Filter(int, const rocksdb::Slice& key, const rocksdb::Slice&, std::string*, bool*) const override {
    if (key.size() < 8) return false;
    std::string_view k(key.data(), key.size());
    std::string_view user = UserKey(k);
    if (user != last_key_) {
      last_key_.assign(user);
      seen_visible_ = false;
    }
    if (VersionTs(k) > horizon_) return false;  // newer than every snapshot in use
    if (!seen_visible_) {                         // the version readers at the horizon see
      seen_visible_ = true;
      return false;
    }
    return true;  // shadowed for every snapshot in use
  }
  const char* Name() const override { return "wattdb.VersionGc"; }

 private:
  const uint64_t horizon_;
  // One filter serves one compaction, which visits keys in order on one thread.
  mutable std::string last_key_;
  mutable bool seen_visible_ = false;
};

}  // namespace

std::unique_ptr<rocksdb::CompactionFilter> VersionGcFactory::CreateCompactionFilter(
    const rocksdb::CompactionFilter::Context&) {
  return std::make_unique<VersionGc>(horizon_->load());
}

}  // namespace wattdb::storage
