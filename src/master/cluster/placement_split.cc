// Placement: splitting segments (at the middle, or many pieces off the top at once), and
// settling a logged split whose outcome was not learned.
#include <algorithm>

#include "common/failpoint.h"
#include "common/logging.h"
#include "master/cluster/placement.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

Result<SegmentId> Placement::SplitSegment(SegmentId seg, uint64_t top_bytes) {
  ASSIGN_OR_RETURN(auto fresh, SplitPieces(seg, top_bytes, 1));
  return fresh.empty() ? SegmentId{0} : fresh.front();
}

Result<std::vector<SegmentId>> Placement::SplitPieces(SegmentId seg, uint64_t piece_bytes,
                                                      uint32_t pieces) {
  pieces = std::max<uint32_t>(pieces, 1);
  NodeId node;
  TableId table;
  std::vector<SegmentId> fresh;
  {
    MutexLock admin(admin_mu_);
    ASSIGN_OR_RETURN(auto excl, latches_.LockExclusive(seg, config_.latch_wait_ms));
    // A split of this segment whose outcome is not settled yet (lost reply, crash) is
    // settled first: the node may hold new segments the catalog does not know.
    for (const auto& si : catalog_.PendingSplits()) {
      if (si.segment == seg) RETURN_NOT_OK(RecoverSplitLocked(si));
    }
    ASSIGN_OR_RETURN(SegmentEntry e, catalog_.GetSegment(seg));
    if (!e.followers.empty()) {
      // The leader splits alone; upkeep seeds followers of each piece again.
      RETURN_NOT_OK(Unreplicate(seg));
      ASSIGN_OR_RETURN(e, catalog_.GetSegment(seg));
    }
    ASSIGN_OR_RETURN(auto client, registry_.Client(e.node));
    ASSIGN_OR_RETURN(SegmentId first, catalog_.NextSegmentIds(pieces));
    // Logged first: if the reply is lost (or the master dies) after the node split, the
    // intent tells recovery to look for the new segments on the node.
    RETURN_NOT_OK(catalog_.LogSplitIntent({seg, first, e.node, pieces}));
    MaybeFail("master.split.after_intent");
    auto keys = RpcSplitPieces(*client, seg, first, piece_bytes, pieces);
    MaybeFail("master.split.after_node_split");
    if (!keys.ok()) {
      if (keys.status().code() == Status::Code::kInvalidArgument) {
        RETURN_NOT_OK(catalog_.ClearSplitIntent(seg));
        return fresh;
      }
      // Did the node split before the failure? Settled now if it can be asked, else later.
      Status r = RecoverSplitLocked({seg, first, e.node, pieces});
      if (!r.ok())
        Log("master")->warn("split outcome unknown seg={} new={} (maintenance retries): {}", seg,
                            first, r.ToString());
      return keys.status();
    }
    RETURN_NOT_OK(catalog_.ApplySplits(seg, first, *keys));
    for (size_t i = 0; i < keys->size(); i++) fresh.push_back(first + i);
    node = e.node;
    table = e.table;
    Log("master")->info("segment split seg={} new={}..{} node=n{}", seg, fresh.front(),
                        fresh.back(), node);
  }
  if (opts_.balance) BalanceSplit(node, table, fresh);
  return fresh;
}

void Placement::BalanceSplit(NodeId node, TableId table, const std::vector<SegmentId>& fresh) {
  // A new segment goes where its table has the fewest segments (then where the fewest
  // are): a table's pieces spread over the nodes, so that its scans use them all.
  for (SegmentId id : fresh) {
    auto load = SegmentCounts(table);
    NodeId target = LeastLoaded(load, table);
    if (target == 0 || target == node) continue;
    const NodeLoad& from = load[node];
    const NodeLoad& to = load[target];
    if (from.of_table > to.of_table + 1 || (from.of_table > to.of_table && from.all > to.all + 1)) {
      SettleLoggedReshapes();  // many moves may follow one cut: none waits for all of them
      auto moved = MoveSegment(id, target);
      if (!moved.ok())
        Log("master")->warn("balance move failed seg={} err={}", id, moved.status().ToString());
    }
  }
}

Status Placement::RecoverSplit(const SplitIntent& si) {
  // REQUIRES admin_mu_ held. Writers stay out while the map changes.
  ASSIGN_OR_RETURN(auto excl, latches_.LockExclusive(si.segment, config_.latch_wait_ms));
  return RecoverSplitLocked(si);
}

Status Placement::RecoverSplitLocked(const SplitIntent& si) {
  // Settled meanwhile (the caller's list of intents may be older than the admin lock)?
  auto pending = catalog_.PendingSplits();
  if (std::none_of(pending.begin(), pending.end(), [&](const SplitIntent& p) {
        return p.segment == si.segment && p.new_id == si.new_id;
      })) {
    return Status::OK();
  }
  // The new segments, if any, are on the node that split; ApplySplits records them with the
  // old segment's owner, which must therefore still be that node (moves settle splits first).
  ASSIGN_OR_RETURN(SegmentEntry owner, catalog_.GetSegment(si.segment));
  if (owner.node != si.node) {
    return Status::Internal(
        fmt::format("segment {} moved to node {} with its split into {} on node {} unsettled",
                    si.segment, owner.node, si.new_id, si.node));
  }
  ASSIGN_OR_RETURN(auto c, registry_.Client(si.node));
  // The node's split is one atomic write: it made the first n of the ids, n >= 0. Asking
  // for an id it did not make also bars a late request from making it.
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < std::max<uint32_t>(si.pieces, 1); i++) {
    auto key = RpcSettleSplit(*c, si.segment, si.new_id + i);
    if (key.ok()) {
      if (keys.size() != i) {
        return Status::Internal(fmt::format("split of segment {} made segment {} but not {}",
                                            si.segment, si.new_id + i, si.new_id + keys.size()));
      }
      keys.push_back(*key);
    } else if (!key.status().IsNotFound()) {
      return key.status();
    }
  }
  if (!keys.empty()) {
    RETURN_NOT_OK(catalog_.ApplySplits(si.segment, si.new_id, keys));
    Log("master")->info("logged split finished seg={} new={}..{} node=n{}", si.segment, si.new_id,
                        si.new_id + keys.size() - 1, si.node);
    return Status::OK();
  }
  RETURN_NOT_OK(catalog_.ClearSplitIntent(si.segment));
  Log("master")->info("logged split rolled back seg={} node=n{}", si.segment, si.node);
  return Status::OK();
}

}  // namespace wattdb::master
