// Key-routed writes: the row's node reads it, computes the new row (or checks the DELETE's
// filter) and prepares the write, so a single-row UPDATE or DELETE costs one round trip
// instead of a scan and a prepare.
#include "master/cluster/coordinator.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

Result<std::optional<uint64_t>> TxnCoordinator::KeyWrite(Transaction& t, TableId table,
                                                         const KeyWriteSpec& w) {
  if (HasUniqueIndex(table))
    return std::optional<uint64_t>();  // unique keys are checked here, after prepare
  // Route latches the key's segment for the transaction, as a write to it would.
  std::vector<RowWrite> probe(1);
  probe[0].key = w.lo;
  WritesByNode by_node;
  RETURN_NOT_OK(Route(t, table, std::move(probe), &by_node));
  NodeId node = by_node.begin()->first;
  SegmentId segment = by_node.begin()->second.front().segment;
  ASSIGN_OR_RETURN(auto client, registry_.Client(node));
  uint64_t updated = 0;
  Status s = RpcUpdateKey(*client, t.id, t.snapshot, segment, w, &updated);
  if (s.IsStale() || s.IsNotFound())
    return std::optional<uint64_t>();                             // moved or split: nothing done
  if (s.ok() && updated == 0) return std::optional<uint64_t>(0);  // nothing prepared
  // An error the node answered with left nothing there (a prepare keeps its write only when
  // it succeeds). One write prepared, or a lost reply (perhaps prepared): counted, so that a
  // statement rollback or the transaction's end reaches the node.
  if (s.ok() || IsLinkFailure(s)) {
    t.participants[node] = client;
    t.sent[node] += 1;
  }
  RETURN_NOT_OK(s);
  return std::optional<uint64_t>(updated);
}

}  // namespace wattdb::master
