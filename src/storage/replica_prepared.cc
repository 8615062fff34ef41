// SegmentStore's copies of prepare records shipped by a segment's leader (segment_store.h).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/segment_store.h"
#include "storage/segment_store_util.h"

namespace wattdb::storage {

using internal::BigEndian64;
using internal::FromRocks;
using internal::kReplicaPreparedPrefix;
using internal::ReplicaPreparedKey;

namespace {

constexpr size_t kPrefixLen = sizeof(kReplicaPreparedPrefix) - 1;

uint64_t ReadBigEndian64(std::string_view b) {
  uint64_t v = 0;
  for (char c : b.substr(0, 8)) v = (v << 8) | static_cast<uint8_t>(c);
  return v;
}

}  // namespace

Status SegmentStore::PutReplicaPrepared(SegmentId segment, uint64_t txn, const std::string& blob) {
  RETURN_NOT_OK(FromRocks(db_->Put(rocksdb::WriteOptions(), ReplicaPreparedKey(segment, txn), blob),
                          "replica prepare"));
  return log_sync_.Sync(log_sync_.Written());
}

Status SegmentStore::EraseReplicaPrepared(SegmentId segment, uint64_t txn) {
  return FromRocks(db_->Delete(rocksdb::WriteOptions(), ReplicaPreparedKey(segment, txn)),
                   "erase replica prepare");
}

Result<std::vector<std::pair<uint64_t, std::string>>> SegmentStore::ListReplicaPrepared(
    SegmentId segment) const {
  std::vector<std::pair<uint64_t, std::string>> out;
  const std::string prefix = kReplicaPreparedPrefix + BigEndian64(segment);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    std::string_view k = it->key().ToStringView();
    if (k.size() != kPrefixLen + 16) return Status::Corruption("bad replica prepare key");
    out.emplace_back(ReadBigEndian64(k.substr(kPrefixLen + 8)), it->value().ToString());
  }
  RETURN_NOT_OK(FromRocks(it->status(), "list replica prepares"));
  return out;
}

Status SegmentStore::EraseReplicaPreparedOf(SegmentId segment) {
  ASSIGN_OR_RETURN(auto records, ListReplicaPrepared(segment));
  if (records.empty()) return Status::OK();
  rocksdb::WriteBatch b;
  for (const auto& [txn, blob] : records) {
    RETURN_NOT_OK(FromRocks(b.Delete(ReplicaPreparedKey(segment, txn)), "write batch"));
  }
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &b), "erase replica prepares");
}

}  // namespace wattdb::storage
