// RpcReplicaPeer: a follower node as a leader reaches it over the cluster protocol: each record
// is one replicaApply request through the node's client to the follower (PeerClients; a pool
// of connections, so concurrent records of one segment do not queue behind one another on one
// connection while the follower holds one until those before it arrive). Thread-safe.
#pragma once

#include "node/node_server.h"
#include "node/replicator.h"

namespace wattdb::node {

class RpcReplicaPeer : public ReplicaPeer {
 public:
  // `peers` must outlive the peer and know `node`'s address (PeerClients::Learn).
  RpcReplicaPeer(PeerClients& peers, NodeId node) : peers_(peers), node_(node) {}
  Status Send(const ReplicaRecord& r) override;
  std::unique_ptr<Pending> Start(const ReplicaRecord& r) override;

 private:
  PeerClients& peers_;
  NodeId node_;
};

}  // namespace wattdb::node
