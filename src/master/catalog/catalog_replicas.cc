// The catalog's segment records and replica sets (catalog.h): how a segment's entry is
// encoded, and the changes of its leader, followers and asleep copies.
#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "common/bytes.h"
#include "master/catalog/catalog.h"

namespace wattdb::master {

std::string Catalog::EncodeSegment(const SegmentEntry& e) {
  std::string out;
  ByteWriter w(&out);
  w.VarU64(e.id);
  w.VarU64(e.table);
  w.Str(e.lo);
  w.Str(e.hi);
  w.VarU64(e.node);
  w.VarU64(e.epoch);
  w.VarU64(e.followers.size());
  for (NodeId f : e.followers) w.VarU64(f);
  if (!e.asleep.empty()) {  // (none: the record as before asleep copies existed)
    w.VarU64(e.asleep.size());
    for (NodeId n : e.asleep) w.VarU64(n);
  }
  return out;
}

Result<SegmentEntry> Catalog::DecodeSegment(const std::string& v) {
  ByteReader r(v);
  SegmentEntry e;
  uint64_t id, table, node;
  if (!r.VarU64(&id) || !r.VarU64(&table) || !r.Str(&e.lo) || !r.Str(&e.hi) || !r.VarU64(&node)) {
    return Status::Corruption("segment record does not decode");
  }
  e.id = id;
  e.table = static_cast<TableId>(table);
  e.node = static_cast<NodeId>(node);
  if (r.empty()) return e;  // written before replica sets: a set of one, epoch 1
  uint64_t epoch, n;
  if (!r.VarU64(&epoch) || !r.VarU64(&n) || n > 64) {
    return Status::Corruption("segment record does not decode");
  }
  e.epoch = epoch;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t f;
    if (!r.VarU64(&f)) return Status::Corruption("segment record does not decode");
    e.followers.push_back(static_cast<NodeId>(f));
  }
  if (r.empty()) return e;
  if (!r.VarU64(&n) || n > 64) return Status::Corruption("segment record does not decode");
  for (uint64_t i = 0; i < n; i++) {
    uint64_t a;
    if (!r.VarU64(&a)) return Status::Corruption("segment record does not decode");
    e.asleep.push_back(static_cast<NodeId>(a));
  }
  if (!r.empty()) return Status::Corruption("segment record does not decode");
  return e;
}

Result<SegmentEntry> Catalog::SetReplicas(SegmentId seg, NodeId leader,
                                          std::vector<NodeId> followers,
                                          std::optional<uint64_t> epoch) {
  std::vector<NodeId> all = followers;
  all.push_back(leader);
  std::sort(all.begin(), all.end());
  if (leader == 0 || std::adjacent_find(all.begin(), all.end()) != all.end() ||
      std::find(all.begin(), all.end(), 0) != all.end()) {
    return Status::InvalidArgument(
        fmt::format("a replica set of segment {} needs distinct nodes", seg));
  }
  WriterLock l(mu_);
  auto ix = seg_index_.find(seg);
  if (ix == seg_index_.end()) return Status::NotFound(fmt::format("segment {}", seg));
  SegmentEntry e = by_table_[ix->second.first][ix->second.second];
  uint64_t next = epoch ? *epoch : e.epoch + 1;
  if (next < e.epoch || (next == e.epoch && e.node != leader)) {
    return Status::InvalidArgument(fmt::format(
        "segment {}: epoch {} after {} (a new leader needs a new epoch)", seg, next, e.epoch));
  }
  if (next != e.epoch) e.asleep.clear();  // another numbering: they cannot catch up
  e.epoch = next;
  e.node = leader;
  e.followers = std::move(followers);
  for (NodeId n : e.followers) std::erase(e.asleep, n);
  std::erase(e.asleep, leader);
  RETURN_NOT_OK(kv_->Write({{SegmentKey(seg), EncodeSegment(e)}}));
  by_table_[ix->second.first][ix->second.second] = e;
  return e;
}

Result<SegmentEntry> Catalog::SetAsleep(SegmentId seg, NodeId node, AsleepChange change) {
  WriterLock l(mu_);
  auto ix = seg_index_.find(seg);
  if (ix == seg_index_.end()) return Status::NotFound(fmt::format("segment {}", seg));
  SegmentEntry e = by_table_[ix->second.first][ix->second.second];
  const bool sleep = change == AsleepChange::kSleep;
  auto& from = sleep ? e.followers : e.asleep;
  if (std::find(from.begin(), from.end(), node) == from.end()) {
    return Status::NotFound(fmt::format("segment {}: node {} is not {}", seg, node,
                                        sleep ? "a follower" : "an asleep copy"));
  }
  std::erase(from, node);
  if (sleep) e.asleep.push_back(node);
  if (change == AsleepChange::kWake) e.followers.push_back(node);
  RETURN_NOT_OK(kv_->Write({{SegmentKey(seg), EncodeSegment(e)}}));
  by_table_[ix->second.first][ix->second.second] = e;
  return e;
}

}  // namespace wattdb::master
