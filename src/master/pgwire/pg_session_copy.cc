// PgSession: COPY ... FROM STDIN and COPY ... TO STDOUT, the sub-protocol's framing around
// the executor's COPY (pg_session.h).
#include <string>
#include <vector>

#include "common/sqlstate.h"
#include "master/pgwire/pg_copy.h"
#include "master/pgwire/pg_session.h"
#include "master/pgwire/pg_session_inl.h"

namespace wattdb::master {

bool PgSession::HandleCopy(const sql::CopyStmt& s) {
  return s.from ? CopyFromClient(s) : CopyToClient(s);
}

bool PgSession::CopyToClient(const sql::CopyStmt& s) {
  // Rows stream to the client as the scan produces them (the buffer is flushed every
  // 256 KiB, and a client that stops reading stalls the scan, not the master's memory).
  TableSchema t;
  auto cols = executor_.CopyColumns(s, &t);
  if (!cols.ok()) {
    SendError(cols.status());
    return true;
  }
  out_.CopyResponse('H', static_cast<int>(cols->size()));
  uint64_t n = 0;
  bool sent = true;
  Status st = WithStatementTimeout([&] {
    return executor_.CopyOut(s, cancel_.get(), [&](const std::vector<Value>& row) -> Status {
      out_.CopyData(pg::FormatCopyRow(row, s));
      n++;
      if (out_.buffer().size() > (256u << 10)) {
        Status f = Flush();
        if (!f.ok()) sent = false;
        return f;
      }
      return Status::OK();
    });
  });
  if (!sent) return false;
  if (!st.ok()) {
    SendError(st);
    return true;
  }
  out_.Simple('c');
  out_.CommandComplete(fmt::format("COPY {}", n));
  return true;
}

bool PgSession::CopyFromClient(const sql::CopyStmt& s) {
  Status failed = executor_.BeginCopyIn(s);
  if (!failed.ok()) {
    SendError(failed);
    return true;
  }
  TableSchema t;
  auto cols = executor_.CopyColumns(s, &t);
  out_.CopyResponse('G', static_cast<int>(cols.ok() ? cols->size() : 0));
  if (!Flush().ok()) {
    (void)executor_.EndCopyIn(false);
    return false;
  }
  // Stream: whole rows go to the nodes piece by piece (kCopyPiece bytes at a time), so the
  // master holds a few pieces (parsed, encoded, being sent), whatever the size of the load.
  // After an error the rest of the stream is read and dropped, then the error is reported.
  constexpr size_t kCopyPiece = 4u << 20;
  std::string data;
  bool first = true, ended = false;  // ended: the text format's end marker "\." was seen
  auto consume = [&](bool all) {
    if (data.empty() || ended) return;
    sql::CopyStmt part = s;
    part.header = s.header && first;
    std::string_view piece(data);
    if (!s.csv) {
      piece = piece.substr(0, all ? data.size() : pg::WholeRowsPrefix(data, s));
      if (piece.substr(0, 3) == "\\.\n" || piece == "\\." ||
          piece.find("\n\\.\n") != std::string_view::npos ||
          piece.substr(piece.size() >= 3 ? piece.size() - 3 : 0) == "\n\\.") {
        ended = true;
      }
    }
    CopyRows rows;
    size_t used = piece.size();
    failed = pg::ParseCopyData(piece, part, &rows, all ? nullptr : &used);
    if (used == 0) return;  // no whole row yet
    first = false;
    if (failed.ok())
      failed = WithStatementTimeout([&] { return executor_.CopyInRows(std::move(rows)); });
    data.erase(0, used);
  };
  while (true) {
    char type;
    char lenb[4];
    if (!ReadExact(&type, 1).ok() || !ReadExact(lenb, 4).ok()) {
      (void)executor_.EndCopyIn(false);
      return false;
    }
    uint32_t len = (uint32_t(uint8_t(lenb[0])) << 24) | (uint32_t(uint8_t(lenb[1])) << 16) |
                   (uint32_t(uint8_t(lenb[2])) << 8) | uint8_t(lenb[3]);
    if (len < 4 || len > pg::kMaxMessage) {
      (void)executor_.EndCopyIn(false);
      return false;
    }
    // CopyData is read straight onto the end of the pending data; other messages apart.
    bool onto_data = type == 'd' && failed.ok();
    std::string body;
    std::string& into = onto_data ? data : body;
    size_t at = into.size();
    into.resize(at + len - 4);
    if (!ReadExact(into.data() + at, len - 4).ok()) {
      (void)executor_.EndCopyIn(false);
      return false;
    }
    if (type == 'd') {
      if (!failed.ok()) continue;
      if (data.size() >= kCopyPiece) consume(false);
    } else if (type == 'c') {
      if (failed.ok()) consume(true);
      break;
    } else if (type == 'f') {
      if (!body.empty() && body.back() == '\0') body.pop_back();
      failed = Status::Sql(sqlstate::kQueryCanceled, "COPY from stdin failed: " + body);
      break;
    } else if (type == 'H' || type == 'S') {
      continue;
    } else {
      (void)executor_.EndCopyIn(false);
      SendError(
          Status::Sql(sqlstate::kProtocolViolation,
                      fmt::format("unexpected message type {} during COPY", int(uint8_t(type)))),
          "FATAL");
      (void)Flush();
      return false;
    }
  }
  auto tag = executor_.EndCopyIn(failed.ok());
  if (!failed.ok() || !tag.ok()) {
    SendError(failed.ok() ? tag.status() : failed);
    return true;
  }
  out_.CommandComplete(*tag);
  return true;
}

}  // namespace wattdb::master
