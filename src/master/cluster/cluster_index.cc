// Cluster: building, dropping and enforcing secondary indexes.
#include <thread>
#include <unordered_set>

#include "common/codec.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/cluster.h"
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

bool AnyNull(const IndexKeySpec& spec, const std::vector<Value>& row) {
  for (int c : spec.columns) {
    if (row[c].is_null()) return true;
  }
  return false;
}

Status Duplicate(const std::string& index) {
  return Status::Sql(sqlstate::kUniqueViolation,
                     fmt::format("duplicate key value violates unique constraint \"{}\"", index));
}

}  // namespace

bool Cluster::HasUniqueIndex(TableId table) const { return catalog_->HasUniqueIndex(table); }

void Cluster::ReleaseUniqueClaims(Transaction& t, size_t keep) {
  if (t.unique_locks.size() <= keep) return;
  MutexLock l(unique_mu_);
  for (size_t i = keep; i < t.unique_locks.size(); i++) {
    auto it = unique_claims_.find(t.unique_locks[i]);
    if (it != unique_claims_.end() && it->second == t.id) unique_claims_.erase(it);
  }
  t.unique_locks.resize(keep);
  unique_cv_.SignalAll();
}

Status Cluster::CheckUnique(Transaction& t, TableId table, const WritesByNode& writes) {
  auto schema = catalog_->TableById(table);
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
        if (!AnyNull(ix.spec, row)) keys.insert(EncodeIndexKey(ix.spec, row));
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
      IndexScanSource src(*this, table, ix.spec.id, key, PrefixSuccessor(key), ts_.Read(),
                          schema->columns.size(), t.id);
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

Result<std::unique_ptr<Cluster::WriteBlock>> Cluster::BlockWrites(TableId table) {
  MutexLock admin(admin_mu_);
  return BlockWritesLocked(table);
}

Result<std::unique_ptr<Cluster::WriteBlock>> Cluster::BlockWritesLocked(TableId table) {
  // Splits and moves hold admin_mu_, and a split needs its segment's latch: once every listed
  // segment is latched, the table cannot gain a segment writers could use.
  auto block = std::make_unique<WriteBlock>();
  for (const auto& s : catalog_->SegmentsOverlapping(table, "", "")) {
    block->latches.emplace_back(*Latch(s.id), std::chrono::milliseconds(config_.latch_wait_ms));
    if (!block->latches.back().owns_lock()) {
      return Status(
          Status::Code::kUnavailable,
          fmt::format(
              "the table is being written by a transaction that did not finish within {} ms; "
              "try again",
              config_.latch_wait_ms),
          sqlstate::kObjectInUse);
    }
  }
  return block;
}

Result<uint32_t> Cluster::CreateIndex(const std::string& table, IndexDef def) {
  MutexLock admin(admin_mu_);  // no moves or splits meanwhile
  ASSIGN_OR_RETURN(TableSchema t, catalog_->GetTable(table));
  def.spec.id = t.next_index_id;
  auto segs = catalog_->SegmentsOverlapping(t.id, "", "");
  // Block the table's writers: wait for open transactions that wrote it to end.
  ASSIGN_OR_RETURN(auto block, BlockWritesLocked(t.id));
  // Every commit so far has completed: the snapshot below includes all writes to the table.
  ts_.AwaitStable();
  Timestamp build_ts = ts_.Read();
  std::vector<SegmentEntry> done;
  auto undo = [&] {
    for (const auto& s : done) {
      auto c = registry_->Client(s.node);
      if (c.ok()) (void)RpcDropIndex(**c, s.id, def.spec.id);
    }
  };
  for (const auto& s : segs) {
    Status st;
    auto c = registry_->Client(s.node);
    st = c.ok() ? RpcAddIndex(**c, s.id, def.spec, build_ts) : c.status();
    if (!st.ok()) {
      undo();
      return st.Prepend(fmt::format("index \"{}\" on segment {}", def.name, s.id));
    }
    done.push_back(s);
  }
  if (def.unique) {
    IndexScanSource src(*this, t.id, def.spec.id, "", "", build_ts, t.columns.size(), 0);
    std::unordered_set<std::string> seen;
    exec::Batch b;
    std::vector<Value> row;
    while (true) {
      b.Reset(t.columns.size());
      auto more = src.Next(b);
      if (!more.ok()) {
        undo();
        return more.status();
      }
      if (!*more) break;
      for (size_t r = 0; r < b.rows; r++) {
        row = b.Row(r);
        if (AnyNull(def.spec, row)) continue;
        if (!seen.insert(EncodeIndexKey(def.spec, row)).second) {
          undo();
          return Status::Sql(sqlstate::kUniqueViolation,
                             fmt::format("could not create unique index \"{}\": the table holds "
                                         "duplicate keys",
                                         def.name));
        }
      }
    }
  }
  def.ready_ts = build_ts;
  t.indexes.push_back(def);
  t.next_index_id = std::max(t.next_index_id, def.spec.id + 1);
  Status st = catalog_->UpdateTable(t);
  if (!st.ok()) {
    undo();
    return st;
  }
  Log("master")->info("index created table={} index={} id={} segments={} build_ts={}", table,
                      def.name, def.spec.id, segs.size(), build_ts);
  return def.spec.id;
}

Status Cluster::DropIndex(const std::string& table, uint32_t index) {
  MutexLock admin(admin_mu_);
  ASSIGN_OR_RETURN(TableSchema t, catalog_->GetTable(table));
  std::erase_if(t.indexes, [&](const IndexDef& ix) { return ix.spec.id == index; });
  RETURN_NOT_OK(catalog_->UpdateTable(t));
  // Segments stop maintaining it; one that cannot be reached keeps harmless entries.
  for (const auto& s : catalog_->SegmentsOverlapping(t.id, "", "")) {
    auto c = registry_->Client(s.node);
    Status st = c.ok() ? RpcDropIndex(**c, s.id, index) : c.status();
    if (!st.ok())
      Log("master")->warn("index entries not dropped seg={} index={} err={}", s.id, index,
                          st.ToString());
  }
  return Status::OK();
}

}  // namespace wattdb::master
