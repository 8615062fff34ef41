#include "node/replica_peer.h"

#include "net/message_builder.h"
#include "node/wire.h"
#include "proto/node_service.capnp.h"

namespace wattdb::node {

namespace {

class RpcPending : public ReplicaPeer::Pending {
 public:
  RpcPending(std::shared_ptr<rpc::NodeClient> client, Result<rpc::NodeClient::Pending> sent)
      : client_(std::move(client)), sent_(std::move(sent)) {}
  Status Finish() override {
    if (!sent_.ok()) return sent_.status();
    ASSIGN_OR_RETURN(auto reply, sent_->Finish());
    return FromProto(reply->Root<proto::Response>().getStatus());
  }

 private:
  std::shared_ptr<rpc::NodeClient> client_;  // kept: it outlives its pending request
  Result<rpc::NodeClient::Pending> sent_;
};

void Build(const ReplicaRecord& r, net::MessageBuilder& mb) {
  auto a = mb.initRoot<proto::Request>().initReplicaApply();
  a.setSegment(r.segment);
  a.setEpoch(r.epoch);
  a.setSeq(r.seq);
  a.setTs(r.ts);
  a.setKind(static_cast<uint8_t>(r.kind));
  a.setTxn(r.txn);
  a.setOffset(r.offset);
  auto writes = a.initWrites(r.ops.size());
  for (size_t i = 0; i < r.ops.size(); i++) {
    writes[i].setSegment(r.ops[i].segment);
    writes[i].setKey(Bytes(r.ops[i].key));
    writes[i].setKind(static_cast<uint8_t>(r.ops[i].kind));
    writes[i].setRow(Bytes(r.ops[i].row));
  }
}

}  // namespace

Status RpcReplicaPeer::Send(const ReplicaRecord& r) { return Start(r)->Finish(); }

std::unique_ptr<ReplicaPeer::Pending> RpcReplicaPeer::Start(const ReplicaRecord& r) {
  net::MessageBuilder mb;
  Build(r, mb);
  auto client = peers_.Get(node_);
  if (!client.ok()) return Answered(client.status());
  auto sent = (*client)->Start(mb);
  return std::make_unique<RpcPending>(std::move(*client), std::move(sent));
}

}  // namespace wattdb::node
