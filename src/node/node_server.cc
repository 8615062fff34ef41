#include "node/node_server.h"

#include "common/subprocess.h"
#include "power/host/agent_client.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <kj/exception.h>

#include "common/codec.h"
#include "common/failpoint.h"
#include "common/logging.h"
#include "node/fragment_runner.h"
#include "query/exec/batch_codec.h"
#include "proto/cluster.capnp.h"
#include "proto/node_service.capnp.h"

namespace wattdb::node {

namespace fs = std::filesystem;
using net::Connection;

namespace {

// A scan batch frame carries about this many bytes of rows at most (frames are capped at
// net::kMaxMessageBytes; batches of wide rows are cut short).
constexpr size_t kScanBatchBytes = 4u << 20;

// How long a connection may sit idle between requests (the master retires its pooled
// connections well before: net::kPoolIdleMs).
constexpr int kIdleConnectionMs = 600000;

std::string Str(capnp::Data::Reader d) { return std::string(reinterpret_cast<const char*>(d.begin()), d.size()); }
kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

void SetStatus(proto::Status::Builder b, const Status& s) {
  b.setCode(static_cast<uint8_t>(s.code()));
  if (!s.ok()) {
    b.setMessage(s.message());
    b.setSqlstate(s.sqlstate());
  }
}

Status FromProto(proto::Status::Reader r) {
  if (r.getCode() == 0) return Status::OK();
  return Status(static_cast<Status::Code>(r.getCode()), r.getMessage(), r.getSqlstate());
}

IndexKeySpec SpecFrom(proto::IndexSpec::Reader r) {
  IndexKeySpec s;
  s.id = r.getId();
  for (uint32_t c : r.getColumns()) s.columns.push_back(static_cast<int>(c));
  for (bool d : r.getDesc()) s.desc.push_back(d);
  s.desc.resize(s.columns.size(), false);
  return s;
}

void SpecTo(proto::IndexSpec::Builder b, const IndexKeySpec& s) {
  b.setId(s.id);
  auto cols = b.initColumns(s.columns.size());
  auto desc = b.initDesc(s.desc.size());
  for (size_t i = 0; i < s.columns.size(); i++) cols.set(i, s.columns[i]);
  for (size_t i = 0; i < s.desc.size(); i++) desc.set(i, s.desc[i]);
}

storage::SegmentMeta MetaFrom(proto::SegmentMeta::Reader r) {
  storage::SegmentMeta m{r.getId(), r.getTable(), Str(r.getLo()), Str(r.getHi()), {}};
  for (auto ix : r.getIndexes()) m.indexes.push_back(SpecFrom(ix));
  return m;
}

void MetaTo(proto::SegmentMeta::Builder b, const storage::SegmentMeta& m) {
  b.setId(m.id);
  b.setTable(m.table);
  b.setLo(Bytes(m.lo));
  b.setHi(Bytes(m.hi));
  auto l = b.initIndexes(m.indexes.size());
  for (size_t i = 0; i < m.indexes.size(); i++) SpecTo(l[i], m.indexes[i]);
}

// CPU this thread used, up to each reply, for the request it serves (thread CPU clock).
thread_local uint64_t tl_cpu_mark = 0;

// Sends a Response stamped with the CPU spent on the request since the previous frame.
Status SendResponse(Connection& conn, capnp::MallocMessageBuilder& mb) {
  uint64_t now = ThreadCpuNanos();
  mb.getRoot<proto::Response>().setCpuNanos(now - tl_cpu_mark);
  tl_cpu_mark = now;
  return conn.Send(mb);
}

Status Reply(Connection& conn, const Status& s) {
  capnp::MallocMessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), s);
  resp.setNone();
  return SendResponse(conn, mb);
}

// A segment with prepared, undecided writes cannot split or move until they are decided.
Status InUse(SegmentId id) {
  return Status(Status::Code::kUnavailable,
                fmt::format("segment {} has prepared writes awaiting a commit decision", id), "55006");
}

Status FsyncFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Status::IOError("open " + path);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::OK() : Status::IOError("fsync " + path);
}

}  // namespace

NodeServer::NodeServer(NodeOptions opts, const Clock& clock) : opts_(std::move(opts)), clock_(clock) {}

NodeServer::~NodeServer() { Stop(); }

Status NodeServer::Start() {
  if (opts_.key_file.empty()) return Status::InvalidArgument("no cluster key file configured");
  ASSIGN_OR_RETURN(net::ClusterKey key, net::ClusterKey::LoadOrCreate(opts_.key_file));
  key_ = std::make_unique<net::ClusterKey>(std::move(key));
  ASSIGN_OR_RETURN(store_, storage::SegmentStore::Open(opts_.data_dir + "/segments"));
  store_->set_sync_commits(opts_.sync_commit);
  participant_ = std::make_unique<Participant>(*store_, std::chrono::milliseconds(1000),
                                               std::chrono::milliseconds(opts_.heartbeat_timeout_ms));
  RETURN_NOT_OK(participant_->Recover());
  if (!participant_->InDoubt().empty()) {
    Log("node")->info("recovered in-doubt transactions count={}", participant_->InDoubt().size());
  }
  std::error_code ec;
  fs::remove_all(opts_.data_dir + "/export", ec);
  fs::remove_all(opts_.data_dir + "/import", ec);
  server_ = std::make_unique<net::TcpServer>(
      fmt::format("node{}", opts_.self.id), opts_.self.host, opts_.self.port,
      [this](net::asio::ip::tcp::socket& s) { Serve(s); });
  RETURN_NOT_OK(server_->Start());
  {
    std::ofstream pid(opts_.data_dir + "/node.pid", std::ios::trunc);
    pid << getpid() << "\n";
  }
  link_thread_ = std::thread([this] { MasterLink(); });
  Log("node")->info("node started id={} port={} data={}", opts_.self.id, server_->port(), opts_.data_dir);
  return Status::OK();
}

void NodeServer::Stop() {
  if (stopping_.exchange(true)) return;
  Log("node")->info("node stopping id={}", opts_.self.id);
  // 1. Stop intake and drain: TcpServer::Stop closes the listener and joins every
  //    connection thread after its current request.
  if (server_) server_->Stop();
  // 2. Tell the master goodbye and end the link.
  {
    std::lock_guard<std::mutex> l(link_mu_);
    if (link_conn_) {
      capnp::MallocMessageBuilder mb;
      mb.initRoot<proto::NodeMessage>().setGoodbye();
      (void)link_conn_->Send(mb);
      link_conn_->Close();
    }
  }
  link_cv_.notify_all();
  if (link_thread_.joinable()) link_thread_.join();
  // 3. Flush and close storage (RocksDB's Close flushes the WAL).
  participant_.reset();
  store_.reset();
  std::error_code ec;
  fs::remove(opts_.data_dir + "/node.pid", ec);
  Log("node")->info("node stopped id={}", opts_.self.id);
}

void NodeServer::Serve(net::asio::ip::tcp::socket& socket) {
  Connection conn(&socket);
  conn.SetTimeouts(opts_.rpc_timeout_ms, opts_.rpc_timeout_ms);
  // Only the master and other nodes, which hold the cluster key, may ask anything.
  if (Status a = conn.Authenticate(*key_, Connection::Role::kServer, opts_.connect_timeout_ms); !a.ok()) {
    Log("node")->warn("refused a connection: {}", a.message());
    return;
  }
  while (!stopping_) {
    // An idle connection may wait long for its next request (the master pools them and
    // retires them sooner); once a request starts, every frame has the RPC deadline.
    if (!conn.WaitReadable(kIdleConnectionMs).ok()) return;
    auto msg = conn.Receive();
    if (!msg.ok()) {
      if (msg.status().code() == Status::Code::kCorruption) {
        Log("node")->warn("closing connection peer={} reason={}", conn.peer(), msg.status().message());
      }
      return;
    }
    try {
      tl_cpu_mark = ThreadCpuNanos();
      if (!Dispatch(conn, **msg)) return;
    } catch (const kj::Exception& e) {
      Log("node")->warn("malformed request peer={} err={}", conn.peer(), e.getDescription().cStr());
      return;
    } catch (const std::exception& e) {
      Log("node")->warn("request failed peer={} err={}", conn.peer(), e.what());
      return;
    }
  }
}

bool NodeServer::ReplyWithSizes(Connection& conn, const Status& st, const std::set<SegmentId>& touched) {
  capnp::MallocMessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), st);
  std::vector<storage::SegmentInfo> infos;
  for (SegmentId id : touched) {
    auto seg = store_->Get(id);
    if (!seg.ok()) continue;
    infos.push_back({(*seg)->meta(), (*seg)->counters().bytes.load(), 0, 0});
  }
  auto l = resp.initSegments(infos.size());
  for (size_t i = 0; i < infos.size(); i++) {
    MetaTo(l[i].initMeta(), infos[i].meta);
    l[i].setBytes(infos[i].bytes);
  }
  return SendResponse(conn, mb).ok();
}

bool NodeServer::Dispatch(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
  switch (req.which()) {
    case proto::Request::PING: return Reply(conn, Status::OK()).ok();
    case proto::Request::HOST_POWER: return HostPower(conn, req.getHostPower());
    case proto::Request::CREATE_SEGMENT:
      return Reply(conn, store_->CreateSegment(MetaFrom(req.getCreateSegment()))).ok();
    case proto::Request::DROP_SEGMENT: {
      SegmentId id = req.getDropSegment();
      Status s = store_->DropSegment(id);
      if (s.IsNotFound()) s = Status::OK();  // idempotent
      if (s.ok()) Log("node")->info("segment dropped seg={}", id);
      return Reply(conn, s).ok();
    }
    case proto::Request::PREPARE: {
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
    case proto::Request::COMMIT: {
      auto c = req.getCommit();
      std::set<SegmentId> touched;
      Status st = participant_->Commit(c.getTxn(), c.getCommitTs(), &touched, c.getExpect());
      return ReplyWithSizes(conn, st, touched);
    }
    case proto::Request::ABORT: {
      bool aborted = participant_->Abort(req.getAbort());
      return Reply(conn, aborted ? Status::OK()
                                 : Status::InvalidArgument(fmt::format("txn {} is committing", req.getAbort())))
          .ok();
    }
    case proto::Request::ROLLBACK_TO: {
      auto r = req.getRollbackTo();
      return Reply(conn, participant_->RollbackTo(r.getTxn(), r.getKeep())).ok();
    }
    case proto::Request::OUTCOME: {
      auto done = participant_->FenceAndGetOutcome(req.getOutcome());
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), done.status());
      resp.setCommittedTs(done.ok() && *done ? **done : 0);
      return SendResponse(conn, mb).ok();
    }
    case proto::Request::SCAN: {
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
      auto rows = SegmentRows::Open(*store_, *participant_, sr);
      auto reply = [&](const Status& st, bool last, const std::vector<storage::ScanRow>* batch,
                       const std::string* columns, const std::string* resume, const std::string* stats = nullptr) {
        capnp::MallocMessageBuilder mb;
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
        if (columns) b.setColumns(Bytes(*columns));
        if (resume) b.setResumeKey(Bytes(*resume));
        if (stats) b.setStats(Bytes(*stats));
        return SendResponse(conn, mb).ok();
      };
      if (!rows.ok()) return reply(rows.status(), true, nullptr, nullptr, nullptr);
      if (s.hasFragment() && s.getFragment().size() > 0) {
        // The fragment's output travels as column batches; a send that fails ends the scan.
        bool sent = true;
        std::string enc;
        std::vector<exec::OperatorStats> stats;
        Status st = RunFragment(
            Str(s.getFragment()), **rows, {static_cast<int64_t>(s.getWorkMem()), nullptr},
            [&](const exec::Batch& b, const std::string& resume) {
              enc.clear();
              exec::EncodeBatch(b, &enc);
              sent = reply(Status::OK(), false, nullptr, &enc, &resume);
              return sent ? Status::OK() : Status::IOError("master went away");
            },
            &stats);
        if (!sent) return false;
        std::string counters = exec::EncodeOperatorStats(stats);
        return reply(st, true, nullptr, nullptr, nullptr, &counters);
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
    case proto::Request::SPLIT: {
      auto s = req.getSplit();
      // Prepared writes are addressed to this segment's range: it must not change under them,
      // and no write may land in the upper half while it moves to the new segment.
      Result<std::string> key = Result<std::string>(InUse(s.getSegment()));
      if (participant_->BeginExclusive(s.getSegment())) {
        key = store_->Split(s.getSegment(), s.getNewId());
        participant_->EndExclusive(s.getSegment());
      }
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), key.status());
      if (key.ok()) resp.setSplitKey(Bytes(*key));
      return SendResponse(conn, mb).ok();
    }
    case proto::Request::SETTLE_SPLIT: {
      auto s = req.getSettleSplit();
      Result<std::string> key = store_->SettleSplit(s.getSegment(), s.getNewId());
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), key.status());
      if (key.ok()) resp.setSplitKey(Bytes(*key));
      return SendResponse(conn, mb).ok();
    }
    case proto::Request::ADD_INDEX: {
      auto a = req.getAddIndex();
      Status st = participant_->AwaitReadable(a.getSegment(), "", "", a.getBuildTs(), 0);
      if (st.ok()) st = store_->AddIndex(a.getSegment(), SpecFrom(a.getSpec()), a.getBuildTs());
      if (st.code() == Status::Code::kAlreadyExists) st = Status::OK();  // a retried request
      return Reply(conn, st).ok();
    }
    case proto::Request::DROP_INDEX: {
      auto d = req.getDropIndex();
      return Reply(conn, store_->DropIndex(d.getSegment(), d.getIndex())).ok();
    }
    case proto::Request::GC_HORIZON:
      store_->SetGcHorizon(req.getGcHorizon());
      return Reply(conn, Status::OK()).ok();
    case proto::Request::COMPACT: {
      Status st = store_->CompactSegment(req.getCompact());
      if (st.IsNotFound()) st = Status::Stale(st.message());
      return Reply(conn, st).ok();
    }
    case proto::Request::LIST_SEGMENTS: {
      auto list = store_->List();
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), Status::OK());
      auto l = resp.initSegments(list.size());
      for (size_t i = 0; i < list.size(); i++) {
        MetaTo(l[i].initMeta(), list[i].meta);
        l[i].setBytes(list[i].bytes);
        l[i].setRowsRead(list[i].rows_read);
        l[i].setRowsWritten(list[i].rows_written);
      }
      return SendResponse(conn, mb).ok();
    }
    case proto::Request::EXPORT_SEGMENT: {
      SegmentId id = req.getExportSegment();
      std::string dir = fmt::format("{}/export/{}-{}", opts_.data_dir, id, nonce_++);
      std::error_code ec;
      fs::create_directories(fs::path(dir).parent_path(), ec);
      // No write may commit here after the checkpoint: the copy would miss it.
      auto exp = Result<storage::SegmentExport>(InUse(id));
      if (participant_->BeginExclusive(id)) {
        exp = store_->Export(id, dir);
        participant_->EndExclusive(id);
      }
      MaybeFail("node.export.after_checkpoint");
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), exp.status());
      if (!exp.ok()) return SendResponse(conn, mb).ok();
      auto e = resp.initSegmentExport();
      MetaTo(e.initMeta(), exp->meta);
      e.setComparator(exp->comparator);
      auto files = e.initFiles(exp->files.size());
      for (size_t i = 0; i < exp->files.size(); i++) {
        const auto& f = exp->files[i];
        files[i].setName(f.name);
        files[i].setLevel(f.level);
        files[i].setSize(f.size);
        files[i].setSmallestSeqno(f.smallest_seqno);
        files[i].setLargestSeqno(f.largest_seqno);
        files[i].setSmallestKey(Bytes(f.smallest_key));
        files[i].setLargestKey(Bytes(f.largest_key));
        files[i].setNumEntries(f.num_entries);
        files[i].setNumDeletions(f.num_deletions);
      }
      bool ok = SendResponse(conn, mb).ok();
      std::vector<char> buf(net::kMaxRawChunk);
      for (size_t i = 0; ok && i < exp->files.size(); i++) {
        std::ifstream in(dir + "/" + exp->files[i].name, std::ios::binary);
        uint64_t left = exp->files[i].size;
        while (ok && left > 0) {
          size_t n = std::min<uint64_t>(left, buf.size());
          if (!in.read(buf.data(), n)) {
            ok = false;
            break;
          }
          ok = conn.SendRaw(buf.data(), n).ok();
          left -= n;
        }
      }
      fs::remove_all(dir, ec);
      return ok;
    }
    case proto::Request::PULL_SEGMENT: {
      auto p = req.getPullSegment();
      int64_t t0 = clock_.NowMicros();
      uint64_t bytes = 0;
      size_t nfiles = 0;
      std::string dir = fmt::format("{}/import/{}-{}", opts_.data_dir, p.getSegment(), nonce_++);
      Status s = [&]() -> Status {
        net::asio::io_context io;
        ASSIGN_OR_RETURN(auto src, Connection::Connect(io, p.getSourceHost(), p.getSourcePort(),
                                                       opts_.connect_timeout_ms));
        RETURN_NOT_OK(src->Authenticate(*key_, Connection::Role::kClient, opts_.connect_timeout_ms));
        src->SetTimeouts(opts_.rpc_timeout_ms, opts_.rpc_timeout_ms);
        capnp::MallocMessageBuilder mb;
        mb.initRoot<proto::Request>().setExportSegment(p.getSegment());
        RETURN_NOT_OK(src->Send(mb));
        ASSIGN_OR_RETURN(auto rmsg, src->Receive());
        auto resp = rmsg->Root<proto::Response>();
        RETURN_NOT_OK(FromProto(resp.getStatus()));
        if (resp.which() != proto::Response::SEGMENT_EXPORT) {
          return Status::Corruption("export reply without segment metadata");
        }
        auto e = resp.getSegmentExport();
        storage::SegmentExport exp;
        exp.meta = MetaFrom(e.getMeta());
        exp.comparator = e.getComparator();
        exp.dir = dir;
        std::error_code ec;
        fs::create_directories(dir, ec);
        if (ec) return Status::IOError("create " + dir + ": " + ec.message());
        std::string chunk;
        for (auto f : e.getFiles()) {
          storage::ExportedFile ef;
          ef.name = f.getName();
          if (ef.name.empty() || ef.name.find('/') != std::string::npos || ef.name[0] == '.') {
            return Status::Corruption("bad file name in segment export");
          }
          ef.level = f.getLevel();
          ef.size = f.getSize();
          ef.smallest_seqno = f.getSmallestSeqno();
          ef.largest_seqno = f.getLargestSeqno();
          ef.smallest_key = Str(f.getSmallestKey());
          ef.largest_key = Str(f.getLargestKey());
          ef.num_entries = f.getNumEntries();
          ef.num_deletions = f.getNumDeletions();
          std::string path = dir + "/" + ef.name;
          {
            std::ofstream out(path, std::ios::binary);
            uint64_t left = ef.size;
            while (left > 0) {
              RETURN_NOT_OK(src->ReceiveRaw(&chunk));
              if (chunk.empty() || chunk.size() > left) return Status::Corruption("file stream overrun");
              out.write(chunk.data(), chunk.size());
              left -= chunk.size();
            }
            if (!out.flush()) return Status::IOError("write " + path);
          }
          RETURN_NOT_OK(FsyncFile(path));
          bytes += ef.size;
          nfiles++;
          exp.files.push_back(std::move(ef));
        }
        MaybeFail("node.pull.after_files");
        return store_->Import(exp);
      }();
      if (s.ok()) MaybeFail("node.pull.after_import");
      std::error_code ec;
      fs::remove_all(dir, ec);
      uint64_t micros = clock_.NowMicros() - t0;
      if (s.ok()) {
        Log("node")->info("segment imported seg={} from={}:{} bytes={} files={} ms={:.1f}", p.getSegment(),
                          p.getSourceHost().cStr(), p.getSourcePort(), bytes, nfiles, micros / 1000.0);
      }
      capnp::MallocMessageBuilder mb;
      auto resp = mb.initRoot<proto::Response>();
      SetStatus(resp.initStatus(), s);
      auto pulled = resp.initPulled();
      pulled.setBytes(bytes);
      pulled.setFiles(static_cast<uint32_t>(nfiles));
      pulled.setMicros(micros);
      return SendResponse(conn, mb).ok();
    }
  }
  (void)Reply(conn, Status::NotSupported("unknown request"));
  return false;
}

bool NodeServer::HostPower(Connection& conn, uint8_t action) {
  const char* agent = std::getenv("WATTDB_HOST_AGENT");
  const std::string& command = action == 2 ? opts_.self.os_suspend_command : opts_.self.os_poweroff_command;
  if (action != 1 && action != 2) return Reply(conn, Status::InvalidArgument("unknown host power action")).ok();
  if (!agent && command.empty()) {
    return Reply(conn, Status::NotSupported(fmt::format(
                           "node {} has no OS power path: no host agent, and no os_{} command in its config",
                           opts_.self.id, action == 2 ? "suspend" : "poweroff")))
        .ok();
  }
  // Answer first: once the host goes down it cannot.
  bool sent = Reply(conn, Status::OK()).ok();
  std::string what = action == 2 ? "suspend" : "soft";
  Log("node")->info("asked to {}: handing over to the host", action == 2 ? "suspend" : "power off");
  bool done = true;
  if (agent) {
    auto r = power::HostAgentRequest(agent, what);
    if (!r.ok() || *r != "ok") {
      Log("node")->warn("host agent refused {}: {}", what, r.ok() ? *r : r.status().message());
      done = false;
    }
  } else {
    auto r = RunProcess({"/bin/sh", "-c", command}, 60000);
    if (!r.ok() || r->exit_code != 0) {
      Log("node")->warn("'{}' failed: {}", command, r.ok() ? r->output : r.status().message());
      done = false;
    }
  }
  // Still running: register again so that the master, which took the node for gone, sees it.
  if (!done) Resumed();
  return sent;
}

void NodeServer::Resumed() {
  resumed_ = true;
  std::lock_guard<std::mutex> l(link_mu_);
  link_cv_.notify_all();
}

void NodeServer::MasterLink() {
  int backoff_ms = 100;
  TelemetrySampler sampler(opts_.data_dir, clock_);
  while (!stopping_) {
    net::asio::io_context io;
    auto conn = Connection::Connect(io, opts_.master_host, opts_.master_port, opts_.connect_timeout_ms);
    Status s = conn.status();
    if (s.ok()) s = (*conn)->Authenticate(*key_, Connection::Role::kClient, opts_.connect_timeout_ms);
    if (s.ok()) {
      // A master that takes in no heartbeat for heartbeat_timeout_ms is gone: reconnect.
      (*conn)->SetTimeouts(opts_.rpc_timeout_ms, opts_.heartbeat_timeout_ms);
      capnp::MallocMessageBuilder mb;
      auto reg = mb.initRoot<proto::NodeMessage>().initRegister();
      reg.setNodeId(opts_.self.id);
      reg.setHost(opts_.self.host);
      reg.setPort(server_->port());
      reg.setPid(getpid());
      s = (*conn)->Send(mb);
      if (s.ok()) {
        auto reply = (*conn)->Receive();
        s = reply.status();
        if (s.ok()) {
          try {
            auto m = (*reply)->Root<proto::MasterMessage>();
            if (m.which() == proto::MasterMessage::REJECTED) {
              s = Status::InvalidArgument(std::string("master rejected registration: ") +
                                          m.getRejected().cStr());
            }
          } catch (const kj::Exception& e) {
            s = Status::Corruption("bad registration reply");
          }
        }
      }
    }
    if (!s.ok()) {
      Log("node")->warn("cannot reach master at {}:{}, retrying in {} ms: {}", opts_.master_host,
                        opts_.master_port, backoff_ms, s.message());
      std::unique_lock<std::mutex> l(link_mu_);
      link_cv_.wait_for(l, std::chrono::milliseconds(backoff_ms),
                        [this] { return stopping_.load() || resumed_.exchange(false); });
      backoff_ms = std::min(backoff_ms * 2, 1000);
      continue;
    }
    backoff_ms = 100;
    Log("node")->info("registered with master id={} master={}:{}", opts_.self.id, opts_.master_host,
                      opts_.master_port);
    {
      std::lock_guard<std::mutex> l(link_mu_);
      link_conn_ = conn->get();
    }
    uint64_t beats = 0;
    while (!stopping_) {
      // Outcome records answer repeated commits; an hour covers every retry and resolution
      // (transaction ids start with the master's wall clock in microseconds).
      if (beats++ % 600 == 0) {
        int64_t hour_ago = clock_.WallMicros() - 3600LL * 1000000;
        if (hour_ago > 0) (void)store_->ForgetOutcomesBefore(static_cast<uint64_t>(hour_ago) << 8);
      }
      TelemetrySample t = sampler.Sample();
      capnp::MallocMessageBuilder mb;
      auto hb = mb.initRoot<proto::NodeMessage>().initHeartbeat();
      hb.setCpuPercent(t.cpu_percent);
      hb.setHostCpuPercent(t.host_cpu_percent);
      hb.setRssBytes(t.rss_bytes);
      hb.setMemTotalBytes(t.mem_total_bytes);
      hb.setMemAvailableBytes(t.mem_available_bytes);
      hb.setDiskBytes(t.disk_bytes);
      hb.setDiskReadBytesPerSec(t.disk_read_bps);
      hb.setDiskWriteBytesPerSec(t.disk_write_bps);
      hb.setNetRxBytesPerSec(t.net_rx_bps);
      hb.setNetTxBytesPerSec(t.net_tx_bps);
      hb.setWallMicros(clock_.WallMicros());
      auto doubt = participant_->InDoubt();
      auto d = hb.initInDoubt(doubt.size());
      for (size_t i = 0; i < doubt.size(); i++) d.set(i, doubt[i]);
      auto list = store_->List();
      auto segs = hb.initSegments(list.size());
      for (size_t i = 0; i < list.size(); i++) {
        MetaTo(segs[i].initMeta(), list[i].meta);
        segs[i].setBytes(list[i].bytes);
        segs[i].setRowsRead(list[i].rows_read);
        segs[i].setRowsWritten(list[i].rows_written);
      }
      Status hs;
      {
        std::lock_guard<std::mutex> l(link_mu_);
        if (stopping_) break;
        hs = (*conn)->Send(mb);
      }
      if (!hs.ok()) {
        Log("node")->warn("lost master link: {}", hs.message());
        break;
      }
      std::unique_lock<std::mutex> l(link_mu_);
      link_cv_.wait_for(l, std::chrono::milliseconds(opts_.telemetry_interval_ms),
                        [this] { return stopping_.load() || resumed_.load(); });
      if (resumed_.exchange(false)) {
        Log("node")->info("host resumed; registering with the master again");
        break;
      }
    }
    std::lock_guard<std::mutex> l(link_mu_);
    link_conn_ = nullptr;
  }
}

}  // namespace wattdb::node
