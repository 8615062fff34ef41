#include "master/nodes/node_rpc.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include <kj/exception.h>

#include "net/message_builder.h"
#include "proto/node_service.capnp.h"
#include "rpc/proto_util.h"

namespace wattdb::master {

using rpc::Bytes;
using rpc::FromProto;
using rpc::Str;

namespace {

// Runs `fill` to build a request, sends it, and hands the response to `read`.
Status Call(NodeClient& c, const std::function<void(proto::Request::Builder)>& fill,
            const std::function<Status(proto::Response::Reader)>& read, bool* delivered = nullptr) {
  net::MessageBuilder mb;
  fill(mb.initRoot<proto::Request>());
  ASSIGN_OR_RETURN(auto msg, c.Call(mb, 0, delivered));
  try {
    auto resp = msg->Root<proto::Response>();
    RETURN_NOT_OK(FromProto(resp.getStatus()));
    return read ? read(resp) : Status::OK();
  } catch (const kj::Exception& e) {
    return Status::Corruption(fmt::format("node {} sent a malformed response", c.id()));
  }
}

// Call to several nodes at once: every request is sent before any reply is read, so the
// nodes work (and sync) side by side. One status per client, in order.
std::vector<Status> CallEach(std::span<NodeClient* const> clients,
                             const std::function<void(size_t, proto::Request::Builder)>& fill,
                             const std::function<Status(size_t, proto::Response::Reader)>& read) {
  std::vector<Status> out(clients.size());
  std::vector<std::optional<NodeClient::Pending>> pending(clients.size());
  // A node in this process does its work within Start: the others' requests go out first.
  std::vector<size_t> order(clients.size());
  for (size_t i = 0; i < order.size(); i++) order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [&](size_t i) { return !clients[i]->InProcess(); });
  for (size_t i : order) {
    net::MessageBuilder mb;
    fill(i, mb.initRoot<proto::Request>());
    auto p = clients[i]->Start(mb);
    if (p.ok()) {
      pending[i].emplace(std::move(p).value());
    } else {
      out[i] = p.status();
    }
  }
  for (size_t i = 0; i < clients.size(); i++) {
    if (!pending[i]) continue;
    auto msg = pending[i]->Finish();
    if (!msg.ok()) {
      out[i] = msg.status();
      continue;
    }
    try {
      auto resp = (*msg)->Root<proto::Response>();
      out[i] = FromProto(resp.getStatus());
      if (out[i].ok() && read) out[i] = read(i, resp);
    } catch (const kj::Exception& e) {
      out[i] =
          Status::Corruption(fmt::format("node {} sent a malformed response", clients[i]->id()));
    }
  }
  return out;
}

// A commit's (or durable prepare's) reply: (segment, bytes) of the segments it wrote, into
// `sizes` (optional); the followers that missed its records go to the client's replica
// failure handler first.
Status ReadCommitReply(NodeClient& c, proto::Response::Reader resp,
                       std::vector<std::pair<SegmentId, uint64_t>>* sizes) {
  for (auto f : resp.getReplicaFailures()) {
    Status s = c.ReplicaFailed(f.getSegment(), f.getNode(), f.getMessage());
    if (!s.ok()) {
      return Status(Status::Code::kUnavailable,
                    fmt::format("commit on node {} not confirmed: follower {} of segment {} "
                                "missed it and could not be dropped: {}",
                                c.id(), f.getNode(), f.getSegment(), s.message()),
                    sqlstate::kConnectionFailure);
    }
  }
  if (!sizes || resp.which() != proto::Response::SEGMENTS) return Status::OK();
  for (auto s : resp.getSegments()) sizes->emplace_back(s.getMeta().getId(), s.getBytes());
  return Status::OK();
}

}  // namespace

Status RpcCreateSegment(NodeClient& c, SegmentId id, TableId table, const std::string& lo,
                        const std::string& hi) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto m = r.initCreateSegment();
        m.setId(id);
        m.setTable(table);
        m.setLo(Bytes(lo));
        m.setHi(Bytes(hi));
      },
      nullptr);
}

Status RpcDropSegment(NodeClient& c, SegmentId id) {
  return Call(
      c, [&](proto::Request::Builder r) { r.setDropSegment(id); }, nullptr);
}

Status RpcHostPower(NodeClient& c, bool suspend) {
  return Call(
      c, [&](proto::Request::Builder r) { r.setHostPower(suspend ? 2 : 1); }, nullptr);
}

namespace {

void FillWrites(capnp::List<proto::Write>::Builder l, std::span<const RemoteWrite> ws) {
  for (size_t i = 0; i < ws.size(); i++) {
    l[i].setSegment(ws[i].segment);
    l[i].setKey(Bytes(ws[i].key));
    l[i].setKind(ws[i].is_delete ? 2 : 1);
    l[i].setRow(Bytes(ws[i].row));
    l[i].setCheck(ws[i].check == RemoteWrite::Check::kInsert   ? proto::Write::Check::INSERT
                  : ws[i].check == RemoteWrite::Check::kUpdate ? proto::Write::Check::UPDATE
                  : ws[i].check == RemoteWrite::Check::kLock   ? proto::Write::Check::LOCK
                                                               : proto::Write::Check::NONE);
  }
}

}  // namespace

Status RpcPrepare(NodeClient& c, uint64_t txn, Timestamp snapshot, std::span<const RemoteWrite> ws,
                  bool durable, uint64_t expect, Timestamp min_commit_ts) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto p = r.initPrepare();
        p.setTxn(txn);
        p.setSnapshotTs(snapshot);
        p.setDurable(durable);
        p.setExpect(expect);
        p.setMinCommitTs(min_commit_ts);
        FillWrites(p.initWrites(ws.size()), ws);
      },
      [&](proto::Response::Reader resp) { return ReadCommitReply(c, resp, nullptr); });
}

std::vector<Status> RpcPrepareDurableEach(std::span<const DurablePrepare> calls, uint64_t txn,
                                          Timestamp snapshot, Timestamp min_commit_ts) {
  std::vector<NodeClient*> clients;
  for (const auto& c : calls) clients.push_back(c.client);
  return CallEach(
      clients,
      [&](size_t i, proto::Request::Builder r) {
        auto p = r.initPrepare();
        p.setTxn(txn);
        p.setSnapshotTs(snapshot);
        p.setDurable(true);
        p.setExpect(calls[i].expect);
        p.setMinCommitTs(min_commit_ts);
        FillWrites(p.initWrites(calls[i].writes.size()), calls[i].writes);
      },
      [&](size_t i, proto::Response::Reader resp) {
        return ReadCommitReply(*calls[i].client, resp, nullptr);
      });
}

Status RpcUpdateKey(NodeClient& c, uint64_t txn, Timestamp snapshot, SegmentId segment,
                    const KeyWriteSpec& w, uint64_t* updated) {
  *updated = 0;
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto u = r.initUpdateKey();
        u.setTxn(txn);
        u.setSnapshotTs(snapshot);
        u.setSegment(segment);
        u.setLo(Bytes(w.lo));
        u.setHi(Bytes(w.hi));
        u.setPlan(Bytes(w.plan));
        u.setDelete(w.is_delete);
        u.setReadCommitted(w.read_committed);
        if (w.params) u.setParams(Bytes(*w.params));
        auto nn = u.initNotNull(w.not_null.size());
        for (size_t i = 0; i < w.not_null.size(); i++) nn.set(i, w.not_null[i]);
        auto names = u.initNotNullErrors(w.not_null_errors.size());
        for (size_t i = 0; i < w.not_null_errors.size(); i++) names.set(i, w.not_null_errors[i]);
      },
      [&](proto::Response::Reader resp) {
        *updated = resp.getUpdated();
        return *updated <= 1 ? Status::OK()
                             : Status::Corruption(fmt::format("node {} updated {} rows of one key",
                                                              c.id(), *updated));
      });
}

Status RpcPrepareCommit(NodeClient& c, uint64_t txn, Timestamp snapshot,
                        const std::vector<RemoteWrite>& ws, Timestamp commit_ts,
                        std::vector<std::pair<SegmentId, uint64_t>>* sizes, bool* delivered,
                        uint64_t expect) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto p = r.initPrepare();
        p.setTxn(txn);
        p.setSnapshotTs(snapshot);
        p.setCommitTs(commit_ts);
        p.setExpect(expect);
        FillWrites(p.initWrites(ws.size()), ws);
      },
      [&](proto::Response::Reader resp) { return ReadCommitReply(c, resp, sizes); }, delivered);
}

Status RpcCommit(NodeClient& c, uint64_t txn, Timestamp ts,
                 std::vector<std::pair<SegmentId, uint64_t>>* sizes, uint64_t expect,
                 bool* delivered) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto m = r.initCommit();
        m.setTxn(txn);
        m.setCommitTs(ts);
        m.setExpect(expect);
      },
      [&](proto::Response::Reader resp) { return ReadCommitReply(c, resp, sizes); }, delivered);
}

std::vector<Status> RpcCommitEach(std::span<NodeClient* const> clients, uint64_t txn, Timestamp ts,
                                  std::vector<std::pair<SegmentId, uint64_t>>* sizes,
                                  std::vector<uint64_t>* incarnations) {
  incarnations->assign(clients.size(), 0);
  return CallEach(
      clients,
      [&](size_t, proto::Request::Builder r) {
        auto m = r.initCommit();
        m.setTxn(txn);
        m.setCommitTs(ts);
        m.setUnsynced(true);
      },
      [&](size_t i, proto::Response::Reader resp) {
        (*incarnations)[i] = resp.getIncarnation();
        return ReadCommitReply(*clients[i], resp, sizes);
      });
}

Result<uint64_t> RpcSyncWal(NodeClient& c) {
  uint64_t incarnation = 0;
  RETURN_NOT_OK(Call(
      c, [&](proto::Request::Builder r) { r.setSyncWal(); },
      [&](proto::Response::Reader resp) {
        incarnation = resp.getIncarnation();
        return Status::OK();
      }));
  return incarnation;
}

Result<Timestamp> RpcOutcome(NodeClient& c, uint64_t txn) {
  Timestamp ts = 0;
  RETURN_NOT_OK(Call(
      c, [&](proto::Request::Builder r) { r.setOutcome(txn); },
      [&](proto::Response::Reader resp) {
        if (resp.which() != proto::Response::COMMITTED_TS)
          return Status::Corruption("bad outcome reply");
        ts = resp.getCommittedTs();
        return Status::OK();
      }));
  return ts;
}

Status RpcAbort(NodeClient& c, uint64_t txn) {
  return Call(
      c, [&](proto::Request::Builder r) { r.setAbort(txn); }, nullptr);
}

Status RpcRollbackTo(NodeClient& c, uint64_t txn, uint64_t keep) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto b = r.initRollbackTo();
        b.setTxn(txn);
        b.setKeep(keep);
      },
      nullptr);
}

Status RpcBreakWait(NodeClient& c, uint64_t txn, uint64_t holder) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto b = r.initBreakWait();
        b.setTxn(txn);
        b.setHolder(holder);
      },
      nullptr);
}

Status RpcGcHorizon(NodeClient& c, Timestamp horizon) {
  return Call(
      c, [&](proto::Request::Builder r) { r.setGcHorizon(horizon); }, nullptr);
}

Status RpcCompact(NodeClient& c, SegmentId seg) {
  return Call(
      c, [&](proto::Request::Builder r) { r.setCompact(seg); }, nullptr);
}

Status RpcAddIndex(NodeClient& c, SegmentId seg, const IndexKeySpec& spec, Timestamp build_ts) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto a = r.initAddIndex();
        a.setSegment(seg);
        a.setBuildTs(build_ts);
        auto sp = a.initSpec();
        sp.setId(spec.id);
        auto cols = sp.initColumns(spec.columns.size());
        auto desc = sp.initDesc(spec.desc.size());
        for (size_t i = 0; i < spec.columns.size(); i++) cols.set(i, spec.columns[i]);
        for (size_t i = 0; i < spec.desc.size(); i++) desc.set(i, spec.desc[i]);
      },
      nullptr);
}

Status RpcDropIndex(NodeClient& c, SegmentId seg, uint32_t index) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto d = r.initDropIndex();
        d.setSegment(seg);
        d.setIndex(index);
      },
      nullptr);
}

Result<std::vector<std::string>> RpcSplitPieces(NodeClient& c, SegmentId seg,
                                                SegmentId first_new_id, uint64_t piece_bytes,
                                                uint32_t pieces) {
  std::vector<std::string> keys;
  RETURN_NOT_OK(Call(
      c,
      [&](proto::Request::Builder r) {
        auto s = r.initSplit();
        s.setSegment(seg);
        s.setNewId(first_new_id);
        s.setTopBytes(piece_bytes);
        s.setPieces(pieces);
      },
      [&](proto::Response::Reader resp) {
        if (resp.which() != proto::Response::SPLIT_KEYS)
          return Status::Corruption("split reply without keys");
        auto list = resp.getSplitKeys();
        if (list.size() == 0 || list.size() > std::max<uint32_t>(pieces, 1))
          return Status::Corruption("split reply with a wrong number of keys");
        for (auto k : list) keys.push_back(Str(k));
        return Status::OK();
      }));
  return keys;
}

Result<std::string> RpcSettleSplit(NodeClient& c, SegmentId seg, SegmentId new_id) {
  std::string key;
  RETURN_NOT_OK(Call(
      c,
      [&](proto::Request::Builder r) {
        auto s = r.initSettleSplit();
        s.setSegment(seg);
        s.setNewId(new_id);
      },
      [&](proto::Response::Reader resp) {
        if (resp.which() != proto::Response::SPLIT_KEY)
          return Status::Corruption("split reply without key");
        key = Str(resp.getSplitKey());
        return Status::OK();
      }));
  return key;
}

Result<PullStats> RpcPull(NodeClient& target, SegmentId seg, const std::string& host,
                          uint16_t port) {
  PullStats st;
  RETURN_NOT_OK(Call(
      target,
      [&](proto::Request::Builder r) {
        auto p = r.initPullSegment();
        p.setSegment(seg);
        p.setSourceHost(host);
        p.setSourcePort(port);
      },
      [&](proto::Response::Reader resp) {
        if (resp.which() != proto::Response::PULLED)
          return Status::Corruption("pull reply without stats");
        st.bytes = resp.getPulled().getBytes();
        st.files = resp.getPulled().getFiles();
        st.micros = resp.getPulled().getMicros();
        return Status::OK();
      }));
  return st;
}

Status RpcLead(NodeClient& c, SegmentId seg, uint64_t epoch,
               const std::vector<ReplicaAddress>& followers, uint64_t next_seq,
               uint64_t keep_bytes) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto l = r.initLead();
        l.setSegment(seg);
        l.setEpoch(epoch);
        l.setNextSeq(next_seq);
        l.setKeepBytes(keep_bytes);
        auto fs = l.initFollowers(followers.size());
        for (size_t i = 0; i < followers.size(); i++) {
          fs[i].setNode(followers[i].node);
          fs[i].setHost(followers[i].host);
          fs[i].setPort(followers[i].port);
        }
      },
      nullptr);
}

Status RpcCatchUp(NodeClient& c, SegmentId seg, const ReplicaAddress& follower, uint64_t from_seq) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto u = r.initCatchUp();
        u.setSegment(seg);
        u.setFromSeq(from_seq);
        auto f = u.initFollower();
        f.setNode(follower.node);
        f.setHost(follower.host);
        f.setPort(follower.port);
      },
      nullptr);
}

Status RpcFollow(NodeClient& c, SegmentId seg, uint64_t epoch, uint64_t next_seq) {
  return Call(
      c,
      [&](proto::Request::Builder r) {
        auto f = r.initFollow();
        f.setSegment(seg);
        f.setEpoch(epoch);
        f.setNextSeq(next_seq);
      },
      nullptr);
}

Result<std::vector<RemoteSegment>> RpcListSegments(NodeClient& c) {
  std::vector<RemoteSegment> out;
  RETURN_NOT_OK(Call(
      c, [&](proto::Request::Builder r) { r.setListSegments(); },
      [&](proto::Response::Reader resp) {
        if (resp.which() != proto::Response::SEGMENTS) return Status::Corruption("bad list reply");
        for (auto s : resp.getSegments()) {
          out.push_back({s.getMeta().getId(), s.getMeta().getTable(), Str(s.getMeta().getLo()),
                         Str(s.getMeta().getHi()), s.getBytes(), s.getRowsRead(),
                         s.getRowsWritten(), s.getCollections(), s.getCachedReads()});
        }
        return Status::OK();
      }));
  return out;
}

}  // namespace wattdb::master
