#include "master/cluster/transaction.h"

namespace wattdb::master {

Transaction::Mark Transaction::mark() const {
  Mark m{sent, unique_locks.size(), {}};
  for (const auto& [node, ws] : deferred) m.deferred[node] = ws.size();
  return m;
}

Transaction::~Transaction() {
  for (auto& [seg, latch] : latches) latch->unlock_shared();
}

}  // namespace wattdb::master
