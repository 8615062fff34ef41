#include "rpc/scan_stream.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <kj/exception.h>

#include "common/codec.h"
#include "common/sqlstate.h"
#include "net/message_builder.h"
#include "proto/node_service.capnp.h"
#include "query/exec/batch_codec.h"
#include "rpc/proto_util.h"

namespace wattdb::rpc {

namespace {

// The common fields of a scan request of [lo, hi) of a segment at read_ts.
proto::Request::Scan::Builder InitScan(capnp::MessageBuilder& mb, SegmentId seg,
                                       const std::string& lo, const std::string& hi,
                                       Timestamp read_ts, uint32_t batch_rows, uint64_t txn) {
  auto s = mb.initRoot<proto::Request>().initScan();
  s.setSegment(seg);
  s.setLo(Bytes(lo));
  s.setHi(Bytes(hi));
  s.setReadTs(read_ts);
  s.setBatchRows(batch_rows);
  s.setTxn(txn);
  return s;
}

}  // namespace

Result<std::unique_ptr<ScanStream>> ScanStream::Open(NodeClient& c, SegmentId seg,
                                                     const std::string& lo, const std::string& hi,
                                                     Timestamp read_ts, uint32_t batch_rows,
                                                     uint64_t txn, const IndexRange* index) {
  net::MessageBuilder mb;
  auto s = InitScan(mb, seg, lo, hi, read_ts, batch_rows, txn);
  if (index) {
    s.setIndex(index->index);
    s.setIndexLo(Bytes(index->lo));
    s.setIndexHi(Bytes(index->hi));
  }
  return Start(c, mb);
}

Result<std::unique_ptr<ScanStream>> ScanStream::Start(NodeClient& c,
                                                      capnp::MessageBuilder& request) {
  ASSIGN_OR_RETURN(NodeClient::Lease lease, c.Acquire());
  Status st = lease.conn().Send(request);
  if (!st.ok()) {
    lease.Poison();
    return st.Prepend(fmt::format("node {}", c.id()));
  }
  return std::unique_ptr<ScanStream>(new ScanStream(c, std::move(lease)));
}

Result<std::unique_ptr<ScanStream>> ScanStream::OpenFragment(
    NodeClient& c, SegmentId seg, const std::string& lo, const std::string& hi, Timestamp read_ts,
    uint64_t txn, const std::string& fragment, int64_t work_mem, const std::vector<Value>* params,
    bool analyze, uint64_t follower_epoch) {
  net::MessageBuilder mb;
  auto s = InitScan(mb, seg, lo, hi, read_ts, exec::kBatchRows, txn);
  s.setFragment(Bytes(fragment));
  s.setFollowerEpoch(follower_epoch);
  s.setAnalyze(analyze);
  s.setWorkMem(static_cast<uint64_t>(std::max<int64_t>(0, work_mem)));
  if (params) {
    std::string encoded;
    EncodeRow(*params, &encoded);
    s.setParams(Bytes(encoded));
  }
  return Start(c, mb);
}

Status ScanStream::NextColumns(exec::Batch* out, std::string* resume_key, bool* last,
                               uint64_t* cpu_nanos, std::vector<exec::OperatorStats>* stats,
                               const std::atomic<bool>* cancel,
                               std::vector<std::pair<NodeId, uint64_t>>* node_cpu,
                               OwnerStats* owner_stats) {
  *cpu_nanos = 0;
  resume_key->clear();
  *last = false;
  if (pending_.msg && cancel && cancel->load()) {  // the rest of a frame is dropped
    pending_ = Pending();
    if (!finished_) lease_.Poison();
    finished_ = true;
    return Status::Sql(sqlstate::kQueryCanceled, "canceling statement due to user request");
  }
  if (!pending_.msg) RETURN_NOT_OK(ReceiveFrame(cpu_nanos, last, cancel));
  bool final = true;
  if (pending_.sizes.empty()) {
    out->rows = 0;
    out->cols.clear();
  } else {
    uint32_t n = pending_.sizes[pending_.next];
    Status d = exec::DecodeBatch(pending_.columns.substr(pending_.offset, n), out, pending_.msg);
    if (!d.ok()) {
      pending_ = Pending();
      return d.Prepend(fmt::format("node {}", client_.id()));
    }
    pending_.offset += n;
    final = ++pending_.next == pending_.sizes.size();
  }
  if (!final) return Status::OK();
  Pending done = std::move(pending_);
  pending_ = Pending();
  *resume_key = std::move(done.resume_key);
  *last = done.last;
  if (!done.last) return Status::OK();
  try {
    auto b = done.raw->Root<proto::Response>().getScanBatch();
    if (node_cpu) {
      for (auto n : b.getNodeCpu()) node_cpu->push_back({n.getNode(), n.getNanos()});
    }
    if (b.hasStats() && !exec::DecodeOperatorStats(Str(b.getStats()), stats)) {
      return Status::Corruption(
          fmt::format("node {} sent malformed operator counters", client_.id()));
    }
    if (owner_stats) {
      for (auto o : b.getOwnerStats()) {
        owner_stats->emplace_back(o.getNode(), std::vector<exec::OperatorStats>());
        if (!exec::DecodeOperatorStats(Str(o.getStats()), &owner_stats->back().second)) {
          return Status::Corruption(
              fmt::format("node {} sent malformed operator counters", client_.id()));
        }
      }
    }
  } catch (const kj::Exception& e) {
    return Status::Corruption(fmt::format("node {} sent a malformed fragment batch", client_.id()));
  }
  return Status::OK();
}

Status ScanStream::ReceiveFrame(uint64_t* cpu_nanos, bool* last, const std::atomic<bool>* cancel) {
  if (finished_) return Status::Internal("scan stream already finished");
  // A node aggregating a segment sends nothing for a while, and one that froze (or died
  // unseen) midway through a frame never sends the rest of it: either wait ends soon after
  // a cancel too.
  lease_.conn().SetInterrupt(cancel);
  auto msg = lease_.conn().Receive();
  lease_.conn().SetInterrupt(nullptr);
  if (!msg.ok()) {
    if (msg.status().sqlstate() != sqlstate::kQueryCanceled)
      return msg.status().Prepend(fmt::format("node {}", client_.id()));
    lease_.Poison();  // maybe half read
    finished_ = true;
    return msg.status();
  }
  std::shared_ptr<net::ReceivedMessage> held(std::move(*msg));
  Pending p;
  try {
    auto resp = held->Root<proto::Response>();
    *cpu_nanos = resp.getCpuNanos();
    Status ns = FromProto(resp.getStatus());
    if (resp.which() != proto::Response::SCAN_BATCH)
      return Status::Corruption("scan reply without a batch");
    auto b = resp.getScanBatch();
    p.last = b.getLast();
    if (p.last) finished_ = true;
    if (!ns.ok()) {
      *last = p.last;
      return ns;
    }
    p.columns = View(b.getColumns());
    uint64_t total = 0;
    for (uint32_t n : b.getColumnSizes()) {
      if (n == 0)
        return Status::Corruption(
            fmt::format("node {} sent an empty batch in a frame", client_.id()));
      p.sizes.push_back(n);
      total += n;
    }
    if (p.sizes.empty() && b.hasColumns()) {
      p.sizes.push_back(static_cast<uint32_t>(p.columns.size()));
    } else if (total != p.columns.size()) {
      return Status::Corruption(
          fmt::format("node {} sent batch sizes that do not add up to its frame ({} of {} bytes)",
                      client_.id(), total, p.columns.size()));
    }
    p.resume_key = Str(b.getResumeKey());
  } catch (const kj::Exception& e) {
    return Status::Corruption(fmt::format("node {} sent a malformed fragment batch", client_.id()));
  }
  // Text values stay in the message, which their vectors keep (no copy of the bytes).
  p.msg = std::make_shared<const exec::TextArena>(held);
  p.raw = std::move(held);
  pending_ = std::move(p);
  return Status::OK();
}

ScanStream::~ScanStream() {
  if (!finished_) lease_.Poison();
}

Status ScanStream::Next(std::vector<std::string>* keys, std::vector<std::string>* rows,
                        bool* last) {
  if (finished_) return Status::Internal("scan stream already finished");
  auto msg = lease_.conn().Receive();
  if (!msg.ok()) return msg.status().Prepend(fmt::format("node {}", client_.id()));
  try {
    auto resp = (*msg)->Root<proto::Response>();
    client_.BookCpu(resp.getCpuNanos());
    Status ns = FromProto(resp.getStatus());
    if (resp.which() != proto::Response::SCAN_BATCH)
      return Status::Corruption("scan reply without a batch");
    auto b = resp.getScanBatch();
    *last = b.getLast();
    if (*last) finished_ = true;
    if (!ns.ok()) return ns;
    keys->clear();
    rows->clear();
    for (auto k : b.getKeys()) keys->push_back(Str(k));
    for (auto r : b.getRows()) rows->push_back(Str(r));
    if (keys->size() != rows->size())
      return Status::Corruption("scan batch with mismatched keys and rows");
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

Status RpcScan(
    NodeClient& c, SegmentId seg, const std::string& lo, const std::string& hi, Timestamp read_ts,
    uint32_t batch_rows,
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

}  // namespace wattdb::rpc
