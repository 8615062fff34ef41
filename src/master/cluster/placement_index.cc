// Placement: building and dropping secondary indexes, and blocking a table's writers
// meanwhile (placement.h).
#include <unordered_set>

#include "common/codec.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/cluster/index_scan.h"
#include "master/cluster/placement.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

Result<std::unique_ptr<Placement::WriteBlock>> Placement::BlockWrites(TableId table) {
  MutexLock admin(admin_mu_);
  return BlockWritesLocked(table);
}

Result<std::unique_ptr<Placement::WriteBlock>> Placement::BlockWritesLocked(TableId table) {
  // Splits and moves hold admin_mu_, and a split needs its segment's latch: once every listed
  // segment is latched, the table cannot gain a segment writers could use.
  auto block = std::make_unique<WriteBlock>();
  for (const auto& s : catalog_.SegmentsOverlapping(table, "", "")) {
    block->latches.emplace_back(*latches_.Get(s.id),
                                std::chrono::milliseconds(config_.latch_wait_ms));
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

Result<uint32_t> Placement::CreateIndex(const std::string& table, IndexDef def) {
  MutexLock admin(admin_mu_);  // no moves or splits meanwhile
  ASSIGN_OR_RETURN(TableSchema t, catalog_.GetTable(table));
  def.spec.id = t.next_index_id;
  auto segs = catalog_.SegmentsOverlapping(t.id, "", "");
  // Block the table's writers: wait for open transactions that wrote it to end.
  ASSIGN_OR_RETURN(auto block, BlockWritesLocked(t.id));
  // Every commit so far has completed: the snapshot below includes all writes to the table.
  ts_.AwaitStable();
  Timestamp build_ts = ts_.Read();
  std::vector<SegmentEntry> done;
  auto undo = [&] {
    for (const auto& s : done) {
      auto c = registry_.Client(s.node);
      if (c.ok()) (void)RpcDropIndex(**c, s.id, def.spec.id);
    }
  };
  for (const auto& s : segs) {
    Status st;
    auto c = registry_.Client(s.node);
    st = c.ok() ? RpcAddIndex(**c, s.id, def.spec, build_ts) : c.status();
    if (!st.ok()) {
      undo();
      return st.Prepend(fmt::format("index \"{}\" on segment {}", def.name, s.id));
    }
    done.push_back(s);
  }
  if (def.unique) {
    IndexScanSource src(catalog_, registry_, t.id, def.spec.id, "", "", build_ts, t.columns.size(),
                        0);
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
        if (IndexKeyHasNull(def.spec, row)) continue;
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
  Status st = catalog_.UpdateTable(t);
  if (!st.ok()) {
    undo();
    return st;
  }
  Log("master")->info("index created table={} index={} id={} segments={} build_ts={}", table,
                      def.name, def.spec.id, segs.size(), build_ts);
  return def.spec.id;
}

Status Placement::DropIndex(const std::string& table, uint32_t index) {
  MutexLock admin(admin_mu_);
  ASSIGN_OR_RETURN(TableSchema t, catalog_.GetTable(table));
  std::erase_if(t.indexes, [&](const IndexDef& ix) { return ix.spec.id == index; });
  RETURN_NOT_OK(catalog_.UpdateTable(t));
  // Segments stop maintaining it; one that cannot be reached keeps harmless entries.
  for (const auto& s : catalog_.SegmentsOverlapping(t.id, "", "")) {
    auto c = registry_.Client(s.node);
    Status st = c.ok() ? RpcDropIndex(**c, s.id, index) : c.status();
    if (!st.ok())
      Log("master")->warn("index entries not dropped seg={} index={} err={}", s.id, index,
                          st.ToString());
  }
  return Status::OK();
}

}  // namespace wattdb::master
