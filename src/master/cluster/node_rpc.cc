#include "master/cluster/node_rpc.h"

#include "master/energy/statement_energy.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <kj/exception.h>

#include "proto/node_service.capnp.h"
#include "query/exec/batch_codec.h"

namespace wattdb::master {

namespace {

kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
std::string Str(capnp::Data::Reader d) { return std::string(reinterpret_cast<const char*>(d.begin()), d.size()); }

Status FromProto(proto::Status::Reader r) {
  if (r.getCode() == 0) return Status::OK();
  uint8_t code = r.getCode();
  if (code > static_cast<uint8_t>(Status::Code::kConflict)) code = static_cast<uint8_t>(Status::Code::kInternal);
  return Status(static_cast<Status::Code>(code), r.getMessage(), r.getSqlstate());
}

// Runs `fill` to build a request, sends it, and hands the response to `read`.
Status Call(NodeClient& c, const std::function<void(proto::Request::Builder)>& fill,
            const std::function<Status(proto::Response::Reader)>& read, bool* delivered = nullptr) {
  capnp::MallocMessageBuilder mb;
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

}  // namespace

Status RpcCreateSegment(NodeClient& c, SegmentId id, TableId table, const std::string& lo,
                        const std::string& hi) {
  return Call(c, [&](proto::Request::Builder r) {
    auto m = r.initCreateSegment();
    m.setId(id);
    m.setTable(table);
    m.setLo(Bytes(lo));
    m.setHi(Bytes(hi));
  }, nullptr);
}

Status RpcDropSegment(NodeClient& c, SegmentId id) {
  return Call(c, [&](proto::Request::Builder r) { r.setDropSegment(id); }, nullptr);
}

Status RpcHostPower(NodeClient& c, bool suspend) {
  return Call(c, [&](proto::Request::Builder r) { r.setHostPower(suspend ? 2 : 1); }, nullptr);
}

namespace {

void FillWrites(capnp::List<proto::Write>::Builder l, const std::vector<RemoteWrite>& ws) {
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

Status RpcPrepare(NodeClient& c, uint64_t txn, Timestamp snapshot, const std::vector<RemoteWrite>& ws,
                  bool durable, uint64_t expect, Timestamp min_commit_ts) {
  return Call(c, [&](proto::Request::Builder r) {
    auto p = r.initPrepare();
    p.setTxn(txn);
    p.setSnapshotTs(snapshot);
    p.setDurable(durable);
    p.setExpect(expect);
    p.setMinCommitTs(min_commit_ts);
    FillWrites(p.initWrites(ws.size()), ws);
  }, nullptr);
}

Status RpcPrepareCommit(NodeClient& c, uint64_t txn, Timestamp snapshot, const std::vector<RemoteWrite>& ws,
                        Timestamp commit_ts, std::vector<std::pair<SegmentId, uint64_t>>* sizes, bool* delivered) {
  return Call(c, [&](proto::Request::Builder r) {
    auto p = r.initPrepare();
    p.setTxn(txn);
    p.setSnapshotTs(snapshot);
    p.setCommitTs(commit_ts);
    FillWrites(p.initWrites(ws.size()), ws);
  }, [&](proto::Response::Reader resp) {
    if (sizes && resp.which() == proto::Response::SEGMENTS) {
      for (auto s : resp.getSegments()) sizes->emplace_back(s.getMeta().getId(), s.getBytes());
    }
    return Status::OK();
  }, delivered);
}

Status RpcCommit(NodeClient& c, uint64_t txn, Timestamp ts, std::vector<std::pair<SegmentId, uint64_t>>* sizes,
                 uint64_t expect, bool* delivered) {
  return Call(c, [&](proto::Request::Builder r) {
    auto m = r.initCommit();
    m.setTxn(txn);
    m.setCommitTs(ts);
    m.setExpect(expect);
  }, [&](proto::Response::Reader resp) {
    if (sizes && resp.which() == proto::Response::SEGMENTS) {
      for (auto s : resp.getSegments()) sizes->emplace_back(s.getMeta().getId(), s.getBytes());
    }
    return Status::OK();
  }, delivered);
}

Result<Timestamp> RpcOutcome(NodeClient& c, uint64_t txn) {
  Timestamp ts = 0;
  RETURN_NOT_OK(Call(c, [&](proto::Request::Builder r) { r.setOutcome(txn); },
                     [&](proto::Response::Reader resp) {
                       if (resp.which() != proto::Response::COMMITTED_TS) return Status::Corruption("bad outcome reply");
                       ts = resp.getCommittedTs();
                       return Status::OK();
                     }));
  return ts;
}

Status RpcAbort(NodeClient& c, uint64_t txn) {
  return Call(c, [&](proto::Request::Builder r) { r.setAbort(txn); }, nullptr);
}

Status RpcRollbackTo(NodeClient& c, uint64_t txn, uint64_t keep) {
  return Call(c, [&](proto::Request::Builder r) {
    auto b = r.initRollbackTo();
    b.setTxn(txn);
    b.setKeep(keep);
  }, nullptr);
}

Status RpcBreakWait(NodeClient& c, uint64_t txn, uint64_t holder) {
  return Call(c, [&](proto::Request::Builder r) {
    auto b = r.initBreakWait();
    b.setTxn(txn);
    b.setHolder(holder);
  }, nullptr);
}

Status RpcGcHorizon(NodeClient& c, Timestamp horizon) {
  return Call(c, [&](proto::Request::Builder r) { r.setGcHorizon(horizon); }, nullptr);
}

Status RpcCompact(NodeClient& c, SegmentId seg) {
  return Call(c, [&](proto::Request::Builder r) { r.setCompact(seg); }, nullptr);
}

Status RpcAddIndex(NodeClient& c, SegmentId seg, const IndexKeySpec& spec, Timestamp build_ts) {
  return Call(c, [&](proto::Request::Builder r) {
    auto a = r.initAddIndex();
    a.setSegment(seg);
    a.setBuildTs(build_ts);
    auto sp = a.initSpec();
    sp.setId(spec.id);
    auto cols = sp.initColumns(spec.columns.size());
    auto desc = sp.initDesc(spec.desc.size());
    for (size_t i = 0; i < spec.columns.size(); i++) cols.set(i, spec.columns[i]);
    for (size_t i = 0; i < spec.desc.size(); i++) desc.set(i, spec.desc[i]);
  }, nullptr);
}

Status RpcDropIndex(NodeClient& c, SegmentId seg, uint32_t index) {
  return Call(c, [&](proto::Request::Builder r) {
    auto d = r.initDropIndex();
    d.setSegment(seg);
    d.setIndex(index);
  }, nullptr);
}

namespace {

// A request answered with a split key (split, settle split).
Result<std::string> SplitKeyCall(NodeClient& c, const std::function<void(proto::Request::Builder)>& build) {
  std::string key;
  RETURN_NOT_OK(Call(c, build, [&](proto::Response::Reader resp) {
    if (resp.which() != proto::Response::SPLIT_KEY) return Status::Corruption("split reply without key");
    key = Str(resp.getSplitKey());
    return Status::OK();
  }));
  return key;
}

}  // namespace

Result<std::string> RpcSplit(NodeClient& c, SegmentId seg, SegmentId new_id) {
  return SplitKeyCall(c, [&](proto::Request::Builder r) {
    auto s = r.initSplit();
    s.setSegment(seg);
    s.setNewId(new_id);
  });
}

Result<std::string> RpcSettleSplit(NodeClient& c, SegmentId seg, SegmentId new_id) {
  return SplitKeyCall(c, [&](proto::Request::Builder r) {
    auto s = r.initSettleSplit();
    s.setSegment(seg);
    s.setNewId(new_id);
  });
}

Result<PullStats> RpcPull(NodeClient& target, SegmentId seg, const std::string& host, uint16_t port) {
  PullStats st;
  RETURN_NOT_OK(Call(target, [&](proto::Request::Builder r) {
    auto p = r.initPullSegment();
    p.setSegment(seg);
    p.setSourceHost(host);
    p.setSourcePort(port);
  }, [&](proto::Response::Reader resp) {
    if (resp.which() != proto::Response::PULLED) return Status::Corruption("pull reply without stats");
    st.bytes = resp.getPulled().getBytes();
    st.files = resp.getPulled().getFiles();
    st.micros = resp.getPulled().getMicros();
    return Status::OK();
  }));
  return st;
}

Result<std::vector<RemoteSegment>> RpcListSegments(NodeClient& c) {
  std::vector<RemoteSegment> out;
  RETURN_NOT_OK(Call(c, [&](proto::Request::Builder r) { r.setListSegments(); },
                     [&](proto::Response::Reader resp) {
                       if (resp.which() != proto::Response::SEGMENTS) return Status::Corruption("bad list reply");
                       for (auto s : resp.getSegments()) {
                         out.push_back({s.getMeta().getId(), s.getMeta().getTable(), Str(s.getMeta().getLo()),
                                        Str(s.getMeta().getHi()), s.getBytes(), s.getRowsRead(),
                                        s.getRowsWritten()});
                       }
                       return Status::OK();
                     }));
  return out;
}

Result<std::unique_ptr<ScanStream>> ScanStream::Open(NodeClient& c, SegmentId seg, const std::string& lo,
                                                     const std::string& hi, Timestamp read_ts,
                                                     uint32_t batch_rows, uint64_t txn, const IndexRange* index) {
  capnp::MallocMessageBuilder mb;
  auto s = mb.initRoot<proto::Request>().initScan();
  s.setSegment(seg);
  s.setLo(Bytes(lo));
  s.setHi(Bytes(hi));
  s.setReadTs(read_ts);
  s.setBatchRows(batch_rows);
  s.setTxn(txn);
  if (index) {
    s.setIndex(index->index);
    s.setIndexLo(Bytes(index->lo));
    s.setIndexHi(Bytes(index->hi));
  }
  return Start(c, mb);
}

Result<std::unique_ptr<ScanStream>> ScanStream::Start(NodeClient& c, capnp::MessageBuilder& request) {
  ASSIGN_OR_RETURN(NodeClient::Lease lease, c.Acquire());
  Status st = lease.conn().Send(request);
  if (!st.ok()) {
    lease.Poison();
    return st.Prepend(fmt::format("node {}", c.id()));
  }
  return std::unique_ptr<ScanStream>(new ScanStream(c, std::move(lease)));
}

Result<std::unique_ptr<ScanStream>> ScanStream::OpenFragment(NodeClient& c, SegmentId seg, const std::string& lo,
                                                             const std::string& hi, Timestamp read_ts, uint64_t txn,
                                                             const std::string& fragment, int64_t work_mem) {
  capnp::MallocMessageBuilder mb;
  auto s = mb.initRoot<proto::Request>().initScan();
  s.setSegment(seg);
  s.setLo(Bytes(lo));
  s.setHi(Bytes(hi));
  s.setReadTs(read_ts);
  s.setBatchRows(exec::kBatchRows);
  s.setTxn(txn);
  s.setFragment(Bytes(fragment));
  s.setWorkMem(static_cast<uint64_t>(std::max<int64_t>(0, work_mem)));
  return Start(c, mb);
}

Status ScanStream::NextColumns(exec::Batch* out, std::string* resume_key, bool* last, uint64_t* cpu_nanos,
                               std::vector<exec::OperatorStats>* stats, const std::atomic<bool>* cancel) {
  if (finished_) return Status::Internal("scan stream already finished");
  if (cancel) {
    // A node aggregating a segment sends nothing for a while: wait in slices.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(client_.io_ms());
    while (!cancel->load()) {
      Status ready = lease_.conn().WaitReadable(100);
      if (!ready.IsTimedOut() || std::chrono::steady_clock::now() >= deadline) break;  // Receive tells
    }
    if (cancel->load()) {
      lease_.Poison();
      finished_ = true;
      return Status::Sql("57014", "canceling statement due to user request");
    }
  }
  auto msg = lease_.conn().Receive();
  if (!msg.ok()) return msg.status().Prepend(fmt::format("node {}", client_.id()));
  try {
    auto resp = (*msg)->Root<proto::Response>();
    *cpu_nanos = resp.getCpuNanos();
    Status ns = FromProto(resp.getStatus());
    if (resp.which() != proto::Response::SCAN_BATCH) return Status::Corruption("scan reply without a batch");
    auto b = resp.getScanBatch();
    *last = b.getLast();
    if (*last) finished_ = true;
    if (!ns.ok()) return ns;
    *resume_key = Str(b.getResumeKey());
    out->rows = 0;
    out->cols.clear();
    if (b.hasColumns()) {
      Status d = exec::DecodeBatch(Str(b.getColumns()), out);
      if (!d.ok()) return d.Prepend(fmt::format("node {}", client_.id()));
    }
    if (*last && b.hasStats() && !exec::DecodeOperatorStats(Str(b.getStats()), stats)) {
      return Status::Corruption(fmt::format("node {} sent malformed operator counters", client_.id()));
    }
  } catch (const kj::Exception& e) {
    return Status::Corruption(fmt::format("node {} sent a malformed fragment batch", client_.id()));
  }
  return Status::OK();
}

ScanStream::~ScanStream() {
  if (!finished_) lease_.Poison();
}

Status ScanStream::Next(std::vector<std::string>* keys, std::vector<std::string>* rows, bool* last) {
  if (finished_) return Status::Internal("scan stream already finished");
  auto msg = lease_.conn().Receive();
  if (!msg.ok()) return msg.status().Prepend(fmt::format("node {}", client_.id()));
  try {
    auto resp = (*msg)->Root<proto::Response>();
    StatementCpuScope::AddNode(client_.id(), resp.getCpuNanos());
    Status ns = FromProto(resp.getStatus());
    if (resp.which() != proto::Response::SCAN_BATCH) return Status::Corruption("scan reply without a batch");
    auto b = resp.getScanBatch();
    *last = b.getLast();
    if (*last) finished_ = true;
    if (!ns.ok()) return ns;
    keys->clear();
    rows->clear();
    for (auto k : b.getKeys()) keys->push_back(Str(k));
    for (auto r : b.getRows()) rows->push_back(Str(r));
    if (keys->size() != rows->size()) return Status::Corruption("scan batch with mismatched keys and rows");
  } catch (const kj::Exception& e) {
    return Status::Corruption(fmt::format("node {} sent a malformed scan batch", client_.id()));
  }
  return Status::OK();
}

Status ScanRetryBackoff(const Status& st, int* retries) {
  bool placement = st.IsStale() || st.IsNotFound();
  bool link = st.IsUnavailable() || st.IsTimedOut() || st.code() == Status::Code::kIOError;
  // A segment that moved or split is found again at once; a node that is down stays down
  // for a while, and a statement that needs it fails fast (about 1 s of retries).
  if (!placement && !link) return st;
  if (++*retries > (placement ? 200 : 12)) return st;
  int ms = placement ? std::min(100, 2 * *retries) : std::min(200, 20 * *retries);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  return Status::OK();
}

Status RpcScan(NodeClient& c, SegmentId seg, const std::string& lo, const std::string& hi,
               Timestamp read_ts, uint32_t batch_rows,
               const std::function<Status(std::vector<std::string>&, std::vector<std::string>&)>& on_batch) {
  ASSIGN_OR_RETURN(auto stream, ScanStream::Open(c, seg, lo, hi, read_ts, batch_rows));
  std::vector<std::string> keys, rows;
  bool last = false;
  while (!last) {
    RETURN_NOT_OK(stream->Next(&keys, &rows, &last));
    RETURN_NOT_OK(on_batch(keys, rows));
  }
  return Status::OK();
}

}  // namespace wattdb::master
