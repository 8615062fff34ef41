#include "node/wire.h"

#include <fcntl.h>
#include <unistd.h>

#include <random>

#include "common/clock.h"
#include "common/sqlstate.h"
#include "net/message_builder.h"

namespace wattdb::node {

using net::Connection;

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

void StatsTo(proto::SegmentStats::Builder b, const storage::SegmentInfo& s) {
  MetaTo(b.initMeta(), s.meta);
  b.setBytes(s.bytes);
  b.setRowsRead(s.rows_read);
  b.setRowsWritten(s.rows_written);
  b.setCollections(s.collections);
  b.setCachedReads(s.cached_reads);
}

// CPU this thread used, up to each reply, for the request it serves (thread CPU clock).
thread_local uint64_t tl_cpu_mark = 0;

uint64_t Incarnation() {
  static const uint64_t id = [] {
    std::random_device rd;
    return (uint64_t{rd()} << 32 | rd()) | 1;  // never 0
  }();
  return id;
}

// Sends a Response stamped with the CPU spent on the request since the previous frame.
Status SendResponse(Connection& conn, capnp::MessageBuilder& mb) {
  auto resp = mb.getRoot<proto::Response>();
  resp.setIncarnation(Incarnation());
  // A caller in this process measures its own thread, which did this work.
  if (conn.InMemory()) return conn.Send(mb);
  uint64_t now = ThreadCpuNanos();
  resp.setCpuNanos(now - tl_cpu_mark);
  tl_cpu_mark = now;
  return conn.Send(mb);
}

Status Reply(Connection& conn, const Status& s) {
  net::MessageBuilder mb;
  auto resp = mb.initRoot<proto::Response>();
  SetStatus(resp.initStatus(), s);
  resp.setNone();
  return SendResponse(conn, mb);
}

// A segment with prepared, undecided writes cannot split or move until they are decided.
Status InUse(SegmentId id) {
  return Status(Status::Code::kUnavailable,
                fmt::format("segment {} has prepared writes awaiting a commit decision", id),
                sqlstate::kObjectInUse);
}

Status FsyncFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Status::IOError("open " + path);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::OK() : Status::IOError("fsync " + path);
}

}  // namespace wattdb::node
