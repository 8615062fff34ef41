// A transaction in progress, as the master's coordinator (coordinator.h) keeps it, and the
// row changes its statements write.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/schema.h"
#include "common/small_containers.h"
#include "master/cluster/segment_latches.h"
#include "master/nodes/node_rpc.h"

namespace wattdb::master {

// One row change of a statement, addressed by table and encoded primary key.
struct RowWrite {
  std::string key;
  bool is_delete = false;
  std::string row;  // encoded row (empty for deletes)
  RemoteWrite::Check check = RemoteWrite::Check::kNone;
};

// A statement's or a transaction's writes by the node they go to (a few nodes: inline).
using WritesByNode = SmallFlatMap<NodeId, std::vector<RemoteWrite>, 2>;

// Its writes are prepared on the nodes statement by statement (taking key locks there) and
// the latches of the segments it wrote stay held until it ends. Owned and used by one
// session thread.
struct Transaction {
  uint64_t id = 0;
  Timestamp snapshot = 0;
  SmallFlatMap<NodeId, std::shared_ptr<NodeClient>> participants;
  SmallFlatMap<NodeId, uint64_t> sent;  // writes prepared on each participant (lock-only included)
  SmallFlatMap<SegmentId, std::shared_ptr<SegmentLatches::Latch>> latches;  // held shared
  std::vector<std::string> unique_locks;  // unique index keys claimed (CheckUnique)
  // Inserts that cannot conflict (fresh hidden row ids, no unique index), routed and their
  // segments latched but not sent yet: they travel with a one-node commit, or are sent
  // before the transaction's next statement (TxnCoordinator::SendDeferred).
  WritesByNode deferred;
  // How far the transaction had got when a statement began (TxnCoordinator::RollbackStatement).
  struct Mark {
    SmallFlatMap<NodeId, uint64_t> sent;
    size_t unique_locks = 0;
    SmallFlatMap<NodeId, size_t> deferred;
  };
  Mark mark() const;
  ~Transaction();  // releases the latches still held
};

}  // namespace wattdb::master
