// The node service's scan request: rows of a segment at a snapshot, or the column batches of
// a plan fragment run over them.
#include <algorithm>

#include "common/failpoint.h"
#include "net/message_builder.h"
#include "node/batch_frame.h"
#include "node/fragment_runner.h"
#include "node/node_server.h"
#include "node/segment_rows.h"
#include "node/wire.h"
#include "query/exec/batch_codec.h"

namespace wattdb::node {

using net::Connection;

bool NodeServer::OnScan(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  auto s = req.getScan();
  ScanRequest sr;
  sr.segment = s.getSegment();
  sr.lo = Str(s.getLo());
  sr.hi = Str(s.getHi());
  sr.read_ts = s.getReadTs();
  sr.txn = s.getTxn();
  sr.index = s.getIndex();
  sr.index_lo = Str(s.getIndexLo());
  sr.index_hi = Str(s.getIndexHi());
  bool fragment = s.hasFragment() && s.getFragment().size() > 0;
  // A follower read: this copy answers only if it holds every commit at the read timestamp.
  Status readable = FollowerReadable(sr, s.getFollowerEpoch());
  // Fragments read column images of quiet segments; row scans ship the stored rows.
  auto rows = readable.ok() ? SegmentRows::Open(*store_, *participant_, sr,
                                                fragment ? columns_.get() : nullptr)
                            : Result<std::unique_ptr<SegmentRows>>(readable);
  auto reply = [&](const Status& st, bool last, const std::vector<storage::ScanRow>* batch,
                   BatchFrame* frame, const std::string* resume,
                   const std::string* stats = nullptr) {
    net::MessageBuilder mb;
    auto resp = mb.initRoot<proto::Response>();
    SetStatus(resp.initStatus(), st);
    auto b = resp.initScanBatch();
    b.setLast(last);
    if (batch) {
      auto lr = b.initRows(batch->size());
      auto lk = b.initKeys(batch->size());
      for (size_t i = 0; i < batch->size(); i++) {
        lr.set(i, Bytes((*batch)[i].row));
        lk.set(i, Bytes((*batch)[i].key));
      }
    }
    if (frame) frame->Attach(mb, b);
    if (resume) b.setResumeKey(Bytes(*resume));
    if (stats) b.setStats(Bytes(*stats));
    return SendResponse(conn, mb).ok();
  };
  if (!rows.ok()) return reply(rows.status(), true, nullptr, nullptr, nullptr);
  if (fragment) {
    // A fragment that keeps its parameters ($n, their values sent along) is a prepared
    // statement's, sent again and again: decoded once (plans_); others at each request.
    std::vector<Value> params;
    std::string_view values = View(s.getParams());
    auto plan =
        RequestPlan(plans_, View(s.getFragment()), s.hasParams() ? &values : nullptr, &params);
    if (!plan.ok())
      return reply(plan.status().Prepend("scan fragment"), true, nullptr, nullptr, nullptr);
    // The fragment's output travels as column batches, several to a frame (BatchFrame); a
    // send that fails ends the scan. A full frame is held until the next batch exists, so the
    // last travels with the end of the scan (a short read is one reply).
    bool sent = true;
    BatchFrame frame(opts_.scan_frame_bytes);
    std::string resume;  // the last key read by the frame's last batch
    std::vector<exec::OperatorStats> stats;
    Status st = RunFragment(
        **plan, **rows,
        // The master sends nothing more while it reads: anything readable means it hung up.
        {static_cast<int64_t>(s.getWorkMem()), nullptr, [&conn] { return !conn.LooksIdle(); },
         s.hasParams() ? &params : nullptr},
        [&](const exec::Batch& b, const std::string& last_key) {
          auto now = BatchFrame::Clock::now();
          if (frame.Full(now)) {
            sent = reply(Status::OK(), false, nullptr, &frame, &resume);
            if (!sent) return Status::IOError("master went away");
            MaybeFail("node.scan.after_batch");  // a node dying (or freezing) mid-stream
            frame.Clear();
          }
          frame.Add(b, now);
          resume = last_key;
          return Status::OK();
        },
        s.getAnalyze() ? &stats : nullptr);
    if (!sent) return false;
    std::string counters = exec::EncodeOperatorStats(stats);
    bool with_batch = !frame.empty() && st.ok();
    return reply(st, true, nullptr, with_batch ? &frame : nullptr, with_batch ? &resume : nullptr,
                 &counters);
  }
  uint32_t batch = std::clamp<uint32_t>(s.getBatchRows(), 1, 65536);
  std::vector<storage::ScanRow> merged;
  while (true) {
    auto more = (*rows)->Next(batch, kScanBatchBytes, &merged);
    if (!more.ok()) return reply(more.status(), true, nullptr, nullptr, nullptr);
    if (!reply(Status::OK(), !*more, &merged, nullptr, nullptr)) return false;
    if (!*more) return true;
  }
}

Status NodeServer::FollowerReadable(const ScanRequest& sr, uint64_t follower_epoch) const {
  if (follower_epoch == 0) return Status::OK();
  if (sr.txn != 0) {
    return Status::InvalidArgument("a follower read sees no transaction's pending writes");
  }
  return follower_log_->Readable(sr.segment, follower_epoch, sr.read_ts);
}

}  // namespace wattdb::node
