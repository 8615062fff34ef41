// KvStore: a small durable key-value map (RocksDB underneath) for metadata such as the
// master's catalog and partition map. Every Write is one atomic, synced batch.
// Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace rocksdb {
class DB;
class Env;
}  // namespace rocksdb

namespace wattdb::storage {

// RocksDB's informational logs (LOG, LOG.old.*) a database of ours keeps: one is started at
// every open, and without a bound a node restarted often would keep a thousand.
inline constexpr size_t kKeptInfoLogs = 10;

class KvStore {
 public:
  // `env` (tests): the RocksDB environment to use instead of the default; it must outlive
  // the store.
  static Result<std::unique_ptr<KvStore>> Open(const std::string& dir, rocksdb::Env* env = nullptr);
  ~KvStore();

  struct Op {
    std::string key;
    std::string value;
    bool erase = false;
  };
  // Applies all ops atomically; with `sync` (the default) the log is fsynced first.
  Status Write(const std::vector<Op>& ops, bool sync = true);
  Result<std::string> Get(const std::string& key) const;  // NotFound if absent
  // Calls fn(key, value) for every key starting with `prefix`, in key order.
  Status Scan(const std::string& prefix,
              const std::function<Status(const std::string&, const std::string&)>& fn) const;

 private:
  KvStore() = default;
  std::unique_ptr<rocksdb::DB> db_;
};

}  // namespace wattdb::storage
