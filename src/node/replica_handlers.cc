// The node service's replication requests (docs/design/replication.md): the master's lead
// follow and catchUp, and a leader's replicaApply.
#include "common/sqlstate.h"
#include "node/node_server.h"
#include "node/wire.h"

namespace wattdb::node {

using net::Connection;

bool NodeServer::OnLead(Connection& conn, net::ReceivedMessage& msg) {
  auto l = msg.Root<proto::Request>().getLead();
  std::vector<NodeId> followers;
  for (auto f : l.getFollowers()) {
    if (f.getNode() == 0 || f.getNode() == opts_.self.id || f.getPort() == 0) {
      return Reply(conn, Status::InvalidArgument("a follower must be another node, with a port"))
          .ok();
    }
    peers_->Learn(f.getNode(), f.getHost(), f.getPort());
    followers.push_back(f.getNode());
  }
  if (!store_->Get(l.getSegment()).ok()) {
    return Reply(conn, Status::NotFound(fmt::format("segment {} is not here", l.getSegment())))
        .ok();
  }
  // Taking the lead after following: the prepares the old leader shipped become this node's
  // own, durable and locked, in doubt until the master resolves them by its decision log.
  Status s = participant_->AdoptReplicaPrepares(l.getSegment());
  if (s.ok())
    s = replicator_->Lead(l.getSegment(), l.getEpoch(), std::move(followers), l.getNextSeq(),
                          l.getKeepBytes());
  if (s.ok()) follower_log_->Unfollow(l.getSegment());  // a leader follows no one
  return Reply(conn, s).ok();
}

bool NodeServer::OnFollow(Connection& conn, net::ReceivedMessage& msg) {
  auto f = msg.Root<proto::Request>().getFollow();
  if (f.getNextSeq() == 0) {
    follower_log_->Unfollow(f.getSegment());
    return Reply(conn, store_->EraseReplicaPreparedOf(f.getSegment())).ok();
  }
  if (!store_->Get(f.getSegment()).ok()) {
    return Reply(conn, Status::NotFound(fmt::format("segment {} is not here", f.getSegment())))
        .ok();
  }
  // A leader handing over: a transaction prepared here on the segment would be committed here
  // and not shipped; the master tries again once it ended.
  if (!follower_log_->Epoch(f.getSegment()) && participant_->HasPrepared(f.getSegment())) {
    return Reply(conn, Status(Status::Code::kUnavailable,
                              fmt::format("segment {}: a prepared transaction holds writes there",
                                          f.getSegment()),
                              sqlstate::kObjectInUse))
        .ok();
  }
  Status s = follower_log_->Follow(f.getSegment(), f.getEpoch(), f.getNextSeq());
  if (s.ok()) replicator_->Drop(f.getSegment());  // a follower ships nothing
  return Reply(conn, s).ok();
}

bool NodeServer::OnCatchUp(Connection& conn, net::ReceivedMessage& msg) {
  auto c = msg.Root<proto::Request>().getCatchUp();
  auto f = c.getFollower();
  if (f.getNode() == 0 || f.getNode() == opts_.self.id || f.getPort() == 0) {
    return Reply(conn, Status::InvalidArgument("a follower must be another node, with a port"))
        .ok();
  }
  peers_->Learn(f.getNode(), f.getHost(), f.getPort());
  return Reply(conn, replicator_->CatchUp(c.getSegment(), f.getNode(), c.getFromSeq())).ok();
}

bool NodeServer::OnReplicaApply(Connection& conn, net::ReceivedMessage& msg) {
  auto a = msg.Root<proto::Request>().getReplicaApply();
  if (a.getKind() > static_cast<uint8_t>(ReplicaRecord::Kind::kAbort) ||
      (a.getKind() != 0 && a.getTxn() == 0)) {
    return Reply(conn, Status::InvalidArgument("bad replica record kind")).ok();
  }
  ReplicaRecord r{a.getSegment(), a.getEpoch(), a.getSeq(),
                  a.getTs(),      {},           static_cast<ReplicaRecord::Kind>(a.getKind()),
                  a.getTxn(),     a.getOffset()};
  r.ops.reserve(a.getWrites().size());
  for (auto w : a.getWrites()) {
    if (w.getSegment() != r.segment) {
      return Reply(conn, Status::InvalidArgument("a replica record holds one segment's writes"))
          .ok();
    }
    if (w.getKind() != 1 && w.getKind() != 2)
      return Reply(conn, Status::InvalidArgument("bad write kind")).ok();
    storage::WriteOp op;
    op.segment = r.segment;
    op.key = Str(w.getKey());
    op.kind = static_cast<storage::VersionKind>(w.getKind());
    op.row = Str(w.getRow());
    r.ops.push_back(std::move(op));
  }
  return Reply(conn, ApplyReplicaRecord(*follower_log_, *store_, r)).ok();
}

}  // namespace wattdb::node
