#include "storage/kv_store.h"

#include <filesystem>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "storage/log_prefill_fs.h"

namespace wattdb::storage {

Result<std::unique_ptr<KvStore>> KvStore::Open(const std::string& dir, rocksdb::Env* env) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  rocksdb::Options o;
  o.create_if_missing = true;
  // Synced commit decisions: the log is written over zeros, as SegmentStore's.
  o.env = env ? env : LogPrefillEnv();
  o.keep_log_file_num = kKeptInfoLogs;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw);
  if (!s.ok()) return Status::IOError(fmt::format("open {}: {}", dir, s.ToString()));
  std::unique_ptr<KvStore> kv(new KvStore());
  kv->db_.reset(raw);
  return kv;
}

KvStore::~KvStore() {
  if (db_) (void)db_->Close();
}

Status KvStore::Write(const std::vector<Op>& ops, bool sync) {
  rocksdb::WriteBatch b;
  for (const auto& op : ops) {
    rocksdb::Status s = op.erase ? b.Delete(op.key) : b.Put(op.key, op.value);
    if (!s.ok()) return Status::IOError(s.ToString());
  }
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  rocksdb::Status s = db_->Write(wo, &b);
  return s.ok() ? Status::OK() : Status::IOError("metadata write: " + s.ToString());
}

Result<std::string> KvStore::Get(const std::string& key) const {
  std::string v;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key, &v);
  if (s.IsNotFound()) return Status::NotFound(key);
  if (!s.ok()) return Status::IOError(s.ToString());
  return v;
}

Status KvStore::Scan(
    const std::string& prefix,
    const std::function<Status(const std::string&, const std::string&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    RETURN_NOT_OK(fn(it->key().ToString(), it->value().ToString()));
  }
  return it->status().ok() ? Status::OK() : Status::IOError(it->status().ToString());
}

}  // namespace wattdb::storage
