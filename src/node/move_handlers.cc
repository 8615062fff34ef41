// Moving segments between nodes: the owner exports a segment's files, the target pulls and
// imports them.
#include <filesystem>
#include <fstream>

#include "net/message_builder.h"
#include "node/node_server.h"
#include "node/wire.h"

namespace wattdb::node {

namespace fs = std::filesystem;
using net::Connection;

bool NodeServer::OnExportSegment(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
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
  net::MessageBuilder mb;
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

bool NodeServer::OnPullSegment(Connection& conn, net::ReceivedMessage& msg) {
  auto req = msg.Root<proto::Request>();
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
    net::MessageBuilder mb;
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
          if (chunk.empty() || chunk.size() > left)
            return Status::Corruption("file stream overrun");
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
    Log("node")->info("segment imported seg={} from={}:{} bytes={} files={} ms={:.1f}",
                      p.getSegment(), p.getSourceHost().cStr(), p.getSourcePort(), bytes, nfiles,
                      micros / 1000.0);
  }
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), s);
  auto pulled = resp.initPulled();
  pulled.setBytes(bytes);
  pulled.setFiles(static_cast<uint32_t>(nfiles));
  pulled.setMicros(micros);
  return SendResponse(conn, mb).ok();
}

}  // namespace wattdb::node
