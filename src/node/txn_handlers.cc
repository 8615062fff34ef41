// The node service's transaction requests: prepare (and one-phase commit), commit, abort,
// statement rollback, outcome.
#include "node/node_server.h"

#include "node/wire.h"

namespace wattdb::node {

using net::Connection;

bool NodeServer::OnPrepare(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto p = req.getPrepare();
  std::vector<TxnWrite> writes;
  for (auto w : p.getWrites()) {
    TxnWrite tw;
    tw.op.segment = w.getSegment();
    tw.op.key = Str(w.getKey());
    if (w.getKind() != 1 && w.getKind() != 2) return Reply(conn, Status::InvalidArgument("bad write kind")).ok();
    tw.op.kind = static_cast<storage::VersionKind>(w.getKind());
    tw.op.row = Str(w.getRow());
    tw.check = w.getCheck() == proto::Write::Check::INSERT   ? WriteCheck::kInsert
               : w.getCheck() == proto::Write::Check::UPDATE ? WriteCheck::kUpdate
               : w.getCheck() == proto::Write::Check::LOCK   ? WriteCheck::kLock
                                                             : WriteCheck::kNone;
    writes.push_back(std::move(tw));
  }
  if (p.getCommitTs() == 0) {
    return Reply(conn, participant_->Prepare(p.getTxn(), p.getSnapshotTs(), std::move(writes), p.getDurable(),
                                             /*wait=*/true, p.getExpect(), p.getMinCommitTs()))
        .ok();
  }
  // One phase: a single-node transaction prepares and commits in one round trip.
  std::set<SegmentId> touched;
  Status st = participant_->Prepare(p.getTxn(), p.getSnapshotTs(), std::move(writes), false, /*wait=*/false);
  if (st.ok()) {
    st = participant_->Commit(p.getTxn(), p.getCommitTs(), &touched);
    if (!st.ok()) participant_->Abort(p.getTxn());
  }
  return ReplyWithSizes(conn, st, touched);
}

bool NodeServer::OnCommit(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto c = req.getCommit();
  std::set<SegmentId> touched;
  Status st = participant_->Commit(c.getTxn(), c.getCommitTs(), &touched, c.getExpect());
  return ReplyWithSizes(conn, st, touched);
}

bool NodeServer::OnAbort(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  bool aborted = participant_->Abort(req.getAbort());
  return Reply(conn, aborted ? Status::OK()
                             : Status::InvalidArgument(fmt::format("txn {} is committing", req.getAbort())))
      .ok();
}

bool NodeServer::OnBreakWait(Connection& conn, net::ReceivedMessage& msg) {
  auto r = msg.Root<proto::Request>().getBreakWait();
  bool broken = participant_->BreakWait(r.getTxn(), r.getHolder());
  return Reply(conn, broken ? Status::OK() : Status::NotFound("the transaction no longer waits for that lock")).ok();
}

bool NodeServer::OnRollbackTo(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto r = req.getRollbackTo();
  Status s = participant_->RollbackTo(r.getTxn(), r.getKeep());
  MaybeFail("node.rollback_to.before_reply");
  return Reply(conn, s).ok();
}

bool NodeServer::OnOutcome(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto done = participant_->FenceAndGetOutcome(req.getOutcome());
  capnp::MallocMessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), done.status());
  resp.setCommittedTs(done.ok() && *done ? **done : 0);
  return SendResponse(conn, mb).ok();
}

}  // namespace wattdb::node
