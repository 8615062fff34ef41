// The node service's segment requests: create, drop, split, indexes, garbage collection,
// compaction, listing.
#include "net/message_builder.h"
#include "node/node_server.h"
#include "node/wire.h"

namespace wattdb::node {

using net::Connection;

bool NodeServer::OnCreateSegment(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  return Reply(conn, store_->CreateSegment(MetaFrom(req.getCreateSegment()))).ok();
}

bool NodeServer::OnDropSegment(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  SegmentId id = req.getDropSegment();
  Status s = store_->DropSegment(id);
  if (s.IsNotFound()) s = Status::OK();  // idempotent
  if (s.ok()) {
    participant_->SegmentGone(id);
    replicator_->Drop(id);
    follower_log_->Unfollow(id);
    s = store_->EraseReplicaPreparedOf(id);
  }
  if (s.ok()) Log("node")->info("segment dropped seg={}", id);
  return Reply(conn, s).ok();
}

namespace {

// Answers a settle-split request with the split key (or why there is none).
bool ReplySplitKey(Connection& conn, const Result<std::string>& key) {
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), key.status());
  if (key.ok()) resp.setSplitKey(Bytes(*key));
  return SendResponse(conn, mb).ok();
}

}  // namespace

bool NodeServer::OnSplit(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto s = req.getSplit();
  // Prepared writes are addressed to this segment's range: it must not change under them,
  // and no write may land in the upper half while it moves to the new segment.
  Result<std::vector<std::string>> keys = Result<std::vector<std::string>>(InUse(s.getSegment()));
  std::function<void()> compact;
  if (participant_->BeginExclusive(s.getSegment())) {
    keys = store_->SplitPieces(s.getSegment(), s.getNewId(), s.getTopBytes(),
                               std::max<uint32_t>(s.getPieces(), 1), &compact);
    participant_->EndExclusive(s.getSegment());
  }
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), keys.status());
  if (keys.ok()) {
    auto list = resp.initSplitKeys(keys->size());
    for (size_t i = 0; i < keys->size(); i++) list.set(i, Bytes((*keys)[i]));
  }
  bool ok = SendResponse(conn, mb).ok();
  // After the answer, on the upkeep thread: the master goes on (the next split of a freshly
  // loaded table) while the moved range is compacted away here.
  if (compact) Defer(std::move(compact));
  return ok;
}

bool NodeServer::OnSettleSplit(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto s = req.getSettleSplit();
  Result<std::string> key = store_->SettleSplit(s.getSegment(), s.getNewId());
  return ReplySplitKey(conn, key);
}

bool NodeServer::OnAddIndex(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto a = req.getAddIndex();
  Status st = participant_->AwaitReadable(a.getSegment(), "", "", a.getBuildTs(), 0);
  if (st.ok()) st = store_->AddIndex(a.getSegment(), SpecFrom(a.getSpec()), a.getBuildTs());
  if (st.code() == Status::Code::kAlreadyExists) st = Status::OK();  // a retried request
  return Reply(conn, st).ok();
}

bool NodeServer::OnDropIndex(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto d = req.getDropIndex();
  return Reply(conn, store_->DropIndex(d.getSegment(), d.getIndex())).ok();
}

bool NodeServer::OnGcHorizon(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  store_->SetGcHorizon(req.getGcHorizon());
  return Reply(conn, Status::OK()).ok();
}

bool NodeServer::OnCompact(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  Status st = store_->CompactSegment(req.getCompact());
  if (st.IsNotFound()) st = Status::Stale(st.message());
  return Reply(conn, st).ok();
}

bool NodeServer::OnListSegments(Connection& conn, net::ReceivedMessage& msg) {
  auto list = store_->List();
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), Status::OK());
  auto l = resp.initSegments(list.size());
  for (size_t i = 0; i < list.size(); i++) StatsTo(l[i], list[i]);
  return SendResponse(conn, mb).ok();
}

}  // namespace wattdb::node
