// TxnCoordinator: claims on unique index keys, and the check that a new key belongs to no
// other live row (coordinator.h).
#include <set>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "master/cluster/coordinator.h"
#include "master/cluster/index_scan.h"

namespace wattdb::master {

namespace {

constexpr auto kClaimWait = std::chrono::milliseconds(1000);

std::string ClaimKey(TableId table, uint32_t index, const std::string& key) {
  std::string k;
  for (int i = 3; i >= 0; i--) k.push_back(static_cast<char>((table >> (i * 8)) & 0xff));
  for (int i = 3; i >= 0; i--) k.push_back(static_cast<char>((index >> (i * 8)) & 0xff));
  return k + key;
}

Status Duplicate(const std::string& index) {
  return Status::Sql(sqlstate::kUniqueViolation,
                     fmt::format("duplicate key value violates unique constraint \"{}\"", index));
}

}  // namespace

bool TxnCoordinator::HasUniqueIndex(TableId table) const { return catalog_.HasUniqueIndex(table); }

void TxnCoordinator::ReleaseUniqueClaims(Transaction& t, size_t keep) {
  if (t.unique_locks.size() <= keep) return;
  MutexLock l(unique_mu_);
  for (size_t i = keep; i < t.unique_locks.size(); i++) {
    auto it = unique_claims_.find(t.unique_locks[i]);
    if (it != unique_claims_.end() && it->second == t.id) unique_claims_.erase(it);
  }
  t.unique_locks.resize(keep);
  unique_cv_.SignalAll();
}

Status TxnCoordinator::CheckUnique(Transaction& t, TableId table, const WritesByNode& writes) {
  auto schema = catalog_.TableById(table);
  if (!schema) return Status::OK();
  std::vector<Value> row;
  for (const auto& ix : schema->indexes) {
    if (!ix.unique) continue;
    std::set<std::string> keys;  // this statement's new keys, each checked once
    for (const auto& [node, ws] : writes) {
      for (const auto& w : ws) {
        if (w.is_delete || w.check == RemoteWrite::Check::kLock) continue;
        RETURN_NOT_OK(DecodeRow(w.row, &row));
        if (row.size() != schema->columns.size())
          return Status::Corruption("row width does not match the table");
        if (!IndexKeyHasNull(ix.spec, row)) keys.insert(EncodeIndexKey(ix.spec, row));
      }
    }
    for (const auto& key : keys) {
      // Claim the key: of two transactions giving it to different rows, the second waits
      // for the first to end, then sees its row (23505) or not.
      std::string claim = ClaimKey(table, ix.spec.id, key);
      {
        MutexLock l(unique_mu_);
        auto until = CondVar::Clock::now() + kClaimWait;
        for (bool timed_out = false;;) {
          auto it = unique_claims_.find(claim);
          if (it == unique_claims_.end() || it->second == t.id) break;
          if (timed_out)
            return Status::Aborted("could not serialize access due to concurrent update");
          timed_out = !unique_cv_.WaitUntil(unique_mu_, until);
        }
        if (!unique_claims_.count(claim)) {
          unique_claims_[claim] = t.id;
          t.unique_locks.push_back(claim);
        }
      }
      // Every other claimant has ended, so the latest committed state plus this
      // transaction's own pending writes is what counts.
      IndexScanSource src(catalog_, registry_, table, ix.spec.id, key, PrefixSuccessor(key),
                          ts_.Read(), schema->columns.size(), t.id);
      size_t live = 0;
      exec::Batch b;
      while (true) {
        b.Reset(schema->columns.size());
        ASSIGN_OR_RETURN(bool more, src.Next(b));
        if (!more) break;
        live += b.rows;
      }
      if (live > 1) return Duplicate(ix.name);
    }
  }
  return Status::OK();
}

}  // namespace wattdb::master
