#include "node/replica_peer.h"

#include "net/message_builder.h"
#include "node/wire.h"
#include "proto/node_service.capnp.h"

namespace wattdb::node {

Status RpcReplicaPeer::Send(const ReplicaRecord& r) {
  net::MessageBuilder mb;
  auto a = mb.initRoot<proto::Request>().initReplicaApply();
  a.setSegment(r.segment);
  a.setEpoch(r.epoch);
  a.setSeq(r.seq);
  a.setTs(r.ts);
  a.setKind(static_cast<uint8_t>(r.kind));
  a.setTxn(r.txn);
  auto writes = a.initWrites(r.ops.size());
  for (size_t i = 0; i < r.ops.size(); i++) {
    writes[i].setSegment(r.ops[i].segment);
    writes[i].setKey(Bytes(r.ops[i].key));
    writes[i].setKind(static_cast<uint8_t>(r.ops[i].kind));
    writes[i].setRow(Bytes(r.ops[i].row));
  }
  ASSIGN_OR_RETURN(auto client, peers_.Get(node_));
  ASSIGN_OR_RETURN(auto reply, client->Call(mb));
  return FromProto(reply->Root<proto::Response>().getStatus());
}

}  // namespace wattdb::node
