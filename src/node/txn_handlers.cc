// The node service's transaction requests: prepare (and one-phase commit), key-routed
// updates, commit, abort, statement rollback, outcome.
#include "common/codec.h"
#include "common/failpoint.h"
#include "common/sqlstate.h"
#include "net/message_builder.h"
#include "node/fragment_runner.h"
#include "node/node_server.h"
#include "node/segment_rows.h"
#include "node/wire.h"

namespace wattdb::node {

using net::Connection;

namespace {

// The plan of updateKey `u` (RequestPlan), its parameters' values into *params.
Result<std::shared_ptr<const plan::PlanNode>> KeyWritePlan(PlanCache& plans,
                                                           proto::Request::UpdateKey::Reader u,
                                                           std::vector<Value>* params) {
  std::string_view values = View(u.getParams());
  return RequestPlan(plans, View(u.getPlan()), u.hasParams() ? &values : nullptr, params);
}

// The write updateKey `u` makes of the row `sr` reads (`plan` run over it with `params`, NOT
// NULL checked): nullopt if the plan yields no row.
Result<std::optional<TxnWrite>> KeyWriteOf(storage::SegmentStore& store, Participant& participant,
                                           ColumnCache* columns, const ScanRequest& sr,
                                           proto::Request::UpdateKey::Reader u,
                                           const plan::PlanNode& plan,
                                           const std::vector<Value>& params) {
  ASSIGN_OR_RETURN(auto rows, SegmentRows::Open(store, participant, sr, columns));
  std::vector<Value> row;
  std::string key;
  size_t produced = 0;
  FragmentOptions opts;
  opts.params = &params;
  RETURN_NOT_OK(
      RunScanPlan(plan, *rows, opts, [&](std::vector<Value>&& r, const std::string& last_key) {
        if (++produced == 1) {
          row = std::move(r);
          key = last_key;
        }
        return Status::OK();
      }));
  if (produced == 0) return std::optional<TxnWrite>();
  if (produced > 1) return Status::Internal("updateKey: the key range holds more than one row");
  if (key < sr.lo || (!sr.hi.empty() && key >= sr.hi)) {
    return Status::Internal("updateKey: the plan yielded a key outside the range");
  }
  for (size_t i = 0; i < u.getNotNull().size() && !u.getDelete(); i++) {
    uint32_t c = u.getNotNull()[i];
    if (c >= row.size()) return Status::InvalidArgument("updateKey: notNull column out of range");
    if (row[c].is_null())
      return Status::Sql(sqlstate::kNotNullViolation, std::string(u.getNotNullErrors()[i].cStr()));
  }
  TxnWrite w;
  w.op.segment = sr.segment;
  w.op.key = std::move(key);
  w.check = WriteCheck::kUpdate;
  w.seen = rows->first_seen();  // the prepare's conflict check may use it
  w.op.kind = u.getDelete() ? storage::VersionKind::kDelete : storage::VersionKind::kPut;
  if (!u.getDelete()) EncodeRow(row, &w.op.row);
  return std::optional<TxnWrite>(std::move(w));
}

}  // namespace

bool NodeServer::OnPrepare(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto p = req.getPrepare();
  std::vector<TxnWrite> writes;
  for (auto w : p.getWrites()) {
    TxnWrite tw;
    tw.op.segment = w.getSegment();
    tw.op.key = Str(w.getKey());
    if (w.getKind() != 1 && w.getKind() != 2)
      return Reply(conn, Status::InvalidArgument("bad write kind")).ok();
    tw.op.kind = static_cast<storage::VersionKind>(w.getKind());
    tw.op.row = Str(w.getRow());
    tw.check = w.getCheck() == proto::Write::Check::INSERT   ? WriteCheck::kInsert
               : w.getCheck() == proto::Write::Check::UPDATE ? WriteCheck::kUpdate
               : w.getCheck() == proto::Write::Check::LOCK   ? WriteCheck::kLock
                                                             : WriteCheck::kNone;
    writes.push_back(std::move(tw));
  }
  if (p.getCommitTs() == 0) {
    PrepareOptions opts;
    opts.durable = p.getDurable();
    opts.expect = p.getExpect();
    opts.min_commit_ts = p.getMinCommitTs();
    std::vector<ReplicaFailure> lagging;
    opts.lagging = &lagging;
    Status st = participant_->Prepare(p.getTxn(), p.getSnapshotTs(), std::move(writes), opts);
    return ReplyWithSizes(conn, st, {}, lagging);
  }
  // One phase: a single-node transaction prepares and commits in one round trip.
  SmallFlatSet<SegmentId> touched;
  std::vector<ReplicaFailure> lagging;
  Status st =
      participant_->Prepare(p.getTxn(), p.getSnapshotTs(), std::move(writes), {.wait = false});
  if (st.ok()) {
    st =
        participant_->Commit(p.getTxn(), p.getCommitTs(), &touched, p.getExpect(), false, &lagging);
    if (!st.ok()) participant_->Abort(p.getTxn());
  }
  return ReplyWithSizes(conn, st, touched, lagging);
}

bool NodeServer::OnUpdateKey(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto u = req.getUpdateKey();
  auto reply = [&](const Status& st, uint64_t updated) {
    net::MessageBuilder mb;
    auto resp = mb.initRoot<proto::Response>();
    SetStatus(resp.initStatus(), st);
    resp.setUpdated(updated);
    return SendResponse(conn, mb).ok();
  };
  if (u.getNotNull().size() != u.getNotNullErrors().size()) {
    return reply(Status::InvalidArgument("updateKey: notNull and notNullErrors differ in length"),
                 0);
  }
  // The row as the statement sees it (its snapshot and the transaction's own writes), and
  // the new row the plan makes of it: what the master would compute, without shipping the
  // row there and the write back.
  ScanRequest sr;
  sr.segment = u.getSegment();
  sr.lo = Str(u.getLo());
  sr.hi = Str(u.getHi());
  sr.read_ts = u.getSnapshotTs();
  sr.txn = u.getTxn();
  // READ COMMITTED: a version committed after the snapshot is re-read with the key locked for
  // the transaction (no rival can take it meanwhile) and the plan runs again on it, as
  // PostgreSQL re-checks the newest version of a row it waited for. A lock taken so and
  // not written is released before the answer.
  KeptConflict kept;
  uint64_t durable_dep =
      0;  // a re-check read a commit still syncing (KeptConflict::durable_ticket)
  auto answer = [&](Status st, uint64_t updated) {
    if (kept.locked && updated == 0) participant_->Unlock(sr.txn, kept.segment, kept.key);
    // Without a write of its own here, the answer waits until what it read is durable.
    if (updated == 0 && durable_dep) {
      if (Status d = participant_->AwaitDurable(durable_dep); !d.ok()) st = d;
    }
    return reply(st, updated);
  };
  std::vector<Value> params;
  auto plan = KeyWritePlan(plans_, u, &params);
  if (!plan.ok()) return reply(plan.status(), 0);
  for (int attempt = 0;; attempt++) {
    auto write = KeyWriteOf(*store_, *participant_, kept.ts ? nullptr : columns_.get(), sr, u,
                            **plan, params);
    if (!write.ok()) return answer(write.status(), 0);
    if (!*write) return answer(Status::OK(), 0);  // no such row, or the filter failed
    std::vector<TxnWrite> writes;
    writes.push_back(std::move(**write));
    PrepareOptions opts;
    KeptConflict newer;
    if (u.getReadCommitted() && attempt < kMaxRechecks) opts.keep_conflict = &newer;
    Status st = participant_->Prepare(sr.txn, sr.read_ts, std::move(writes), opts);
    durable_dep = std::max(durable_dep, newer.durable_ticket);
    if (st.IsConflict() && newer.ts > sr.read_ts) {
      if (newer.locked) kept = newer;
      sr.read_ts = newer.ts;
      sr.locked = true;
      continue;
    }
    if (st.ok()) MaybeFail("node.update_key.after_prepare");
    return answer(st, st.ok() ? 1 : 0);
  }
}

bool NodeServer::OnCommit(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto c = req.getCommit();
  SmallFlatSet<SegmentId> touched;
  std::vector<ReplicaFailure> lagging;
  Status st = participant_->Commit(c.getTxn(), c.getCommitTs(), &touched, c.getExpect(),
                                   c.getUnsynced(), &lagging);
  return ReplyWithSizes(conn, st, touched, lagging);
}

bool NodeServer::OnSyncWal(Connection& conn, net::ReceivedMessage& msg) {
  return Reply(conn, store_->SyncWal()).ok();
}

bool NodeServer::OnAbort(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  bool aborted = participant_->Abort(req.getAbort());
  return Reply(conn, aborted ? Status::OK()
                             : Status::InvalidArgument(
                                   fmt::format("txn {} is committing", req.getAbort())))
      .ok();
}

bool NodeServer::OnBreakWait(Connection& conn, net::ReceivedMessage& msg) {
  auto r = msg.Root<proto::Request>().getBreakWait();
  bool broken = participant_->BreakWait(r.getTxn(), r.getHolder());
  return Reply(conn, broken ? Status::OK()
                            : Status::NotFound("the transaction no longer waits for that lock"))
      .ok();
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
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), done.status());
  resp.setCommittedTs(done.ok() && *done ? **done : 0);
  return SendResponse(conn, mb).ok();
}

}  // namespace wattdb::node
