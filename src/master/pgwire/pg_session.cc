#include "master/pgwire/pg_session.h"

#include <array>

#include "common/clock.h"
#include "common/logging.h"
#include "common/small_containers.h"
#include "common/sqlstate.h"
#include "master/pgwire/pg_copy.h"
#include "master/pgwire/pg_session_inl.h"
#include "master/pgwire/pg_values.h"
#include "query/plan/binder.h"
#include "query/plan/view_rewrite.h"
#include "query/sql/parser.h"

namespace wattdb::master {

namespace asio = net::asio;

Status WriteAll(net::Stream& s, std::string& buf, net::Stream::Deadline deadline) {
  Status st = s.WriteAll(buf.data(), buf.size(), deadline);
  buf.clear();
  return st;
}

namespace {

// Bounds-checked reader of one frontend message body.
class Body {
 public:
  explicit Body(std::string_view b) : b_(b) {}
  Status Cstr(std::string* out) {
    std::string_view v;
    RETURN_NOT_OK(Cstr(&v));
    out->assign(v);
    return Status::OK();
  }
  // A view into the body (valid while the body is).
  Status Cstr(std::string_view* out) {
    auto z = b_.find('\0');
    if (z == std::string_view::npos) return Trunc();
    *out = b_.substr(0, z);
    b_.remove_prefix(z + 1);
    return Status::OK();
  }
  Status I16(int16_t* v) {
    if (b_.size() < 2) return Trunc();
    *v = static_cast<int16_t>((uint8_t(b_[0]) << 8) | uint8_t(b_[1]));
    b_.remove_prefix(2);
    return Status::OK();
  }
  Status I32(int32_t* v) {
    if (b_.size() < 4) return Trunc();
    *v = static_cast<int32_t>((uint32_t(uint8_t(b_[0])) << 24) | (uint32_t(uint8_t(b_[1])) << 16) |
                              (uint32_t(uint8_t(b_[2])) << 8) | uint8_t(b_[3]));
    b_.remove_prefix(4);
    return Status::OK();
  }
  Status Bytes(size_t n, std::string_view* out) {
    if (b_.size() < n) return Trunc();
    *out = b_.substr(0, n);
    b_.remove_prefix(n);
    return Status::OK();
  }
  char Byte() {
    if (b_.empty()) return 0;
    char c = b_[0];
    b_.remove_prefix(1);
    return c;
  }

 private:
  static Status Trunc() {
    return Status::Sql(sqlstate::kProtocolViolation,
                       "invalid message format: insufficient data left in message");
  }
  std::string_view b_;
};

// Streams a statement's results straight to the client (simple protocol).
// Base of the session's sinks: notices go out as NoticeResponse messages.
class NoticeSink : public ResultSink {
 public:
  explicit NoticeSink(pg::MessageWriter& w) : w_(w) {}
  Status Notice(const std::string& sqlstate, const std::string& message) override {
    w_.ErrorOrNotice('N', "NOTICE", sqlstate, message, 0);
    return Status::OK();
  }

 protected:
  pg::MessageWriter& w_;
};

class WireSink : public NoticeSink {
 public:
  WireSink(pg::MessageWriter& w, net::Stream& s, int io_ms) : NoticeSink(w), s_(s), io_ms_(io_ms) {}
  Status Describe(const std::vector<std::string>& names,
                  const std::vector<SqlType>& types) override {
    types_ = types;
    w_.RowDescription(names, types);
    return Status::OK();
  }
  Status Rows(const exec::Batch& b) override {
    std::vector<std::string> texts(b.cols.size());
    std::vector<const std::string*> cells(b.cols.size());
    for (size_t r = 0; r < b.rows; r++) {
      for (size_t c = 0; c < b.cols.size(); c++) {
        Value v = b.Get(c, r);
        cells[c] = nullptr;
        if (!v.is_null()) {
          texts[c].clear();
          pg::EncodeValue(v, types_[c], false, &texts[c]);
          cells[c] = &texts[c];
        }
      }
      w_.DataRow(cells);
    }
    if (w_.buffer().size() > (256u << 10))
      return WriteAll(s_, w_.buffer(), net::Stream::In(io_ms_));
    return Status::OK();
  }

 private:
  net::Stream& s_;
  int io_ms_;
  std::vector<SqlType> types_;
};

// Streams a portal's rows to the client as DataRows in the formats Bind asked for (an
// Execute without a row limit: nothing is kept on the master).
class PortalStreamSink : public NoticeSink {
 public:
  PortalStreamSink(pg::MessageWriter& w, net::Stream& s, int io_ms,
                   const std::vector<SqlType>& types, const std::vector<int16_t>& formats)
      : NoticeSink(w), s_(s), io_ms_(io_ms), types_(types), formats_(formats) {}
  Status Describe(const std::vector<std::string>&, const std::vector<SqlType>&) override {
    return Status::OK();
  }
  Status Rows(const exec::Batch& b) override {
    std::vector<std::string> cells(types_.size());
    std::vector<const std::string*> ptrs(types_.size());
    for (size_t r = 0; r < b.rows; r++) {
      for (size_t c = 0; c < b.cols.size() && c < cells.size(); c++) {
        Value v = b.Get(c, r);
        ptrs[c] = nullptr;
        if (v.is_null()) continue;
        cells[c].clear();
        pg::EncodeValue(v, types_[c], c < formats_.size() && formats_[c] == 1, &cells[c]);
        ptrs[c] = &cells[c];
      }
      w_.DataRow(ptrs);
      rows_++;
    }
    if (w_.buffer().size() > (256u << 10))
      return WriteAll(s_, w_.buffer(), net::Stream::In(io_ms_));
    return Status::OK();
  }
  uint64_t rows() const { return rows_; }

 private:
  net::Stream& s_;
  int io_ms_;
  const std::vector<SqlType>& types_;
  const std::vector<int16_t>& formats_;
  uint64_t rows_ = 0;
};

// Collects a portal's rows so that Execute can hand them out in row-limited pieces.
class BufferSink : public NoticeSink {
 public:
  BufferSink(pg::MessageWriter& w, std::vector<std::vector<Value>>* rows)
      : NoticeSink(w), rows_(rows) {}
  Status Describe(const std::vector<std::string>&, const std::vector<SqlType>&) override {
    return Status::OK();
  }
  Status Rows(const exec::Batch& b) override {
    for (size_t r = 0; r < b.rows; r++) rows_->push_back(b.Row(r));
    return Status::OK();
  }

 private:
  std::vector<std::vector<Value>>* rows_;
};

// Replaces every $n in `e` by a literal holding params[n-1].
Status Substitute(sql::ExprPtr& e, const std::vector<Value>& params) {
  if (!e) return Status::OK();
  if (e->kind == sql::Expr::Kind::kParam) {
    if (e->param < 1 || e->param > static_cast<int>(params.size())) {
      return Status::Sql(sqlstate::kProtocolViolation,
                         fmt::format("no value bound for parameter ${}", e->param), e->pos);
    }
    auto lit = std::make_unique<sql::Expr>(sql::Expr::Kind::kLiteral, e->pos);
    lit->value = params[e->param - 1];
    e = std::move(lit);
    return Status::OK();
  }
  for (auto& a : e->args) RETURN_NOT_OK(Substitute(a, params));
  RETURN_NOT_OK(Substitute(e->operand, params));
  return Substitute(e->else_expr, params);
}

Status Substitute(sql::Statement& st, const std::vector<Value>& params) {
  return std::visit(
      [&](auto& s) -> Status {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, sql::SelectStmt>) {
          for (auto& it : s.items) RETURN_NOT_OK(Substitute(it.expr, params));
          RETURN_NOT_OK(Substitute(s.where, params));
          for (auto& g : s.group_by) RETURN_NOT_OK(Substitute(g, params));
          RETURN_NOT_OK(Substitute(s.having, params));
          for (auto& o : s.order_by) RETURN_NOT_OK(Substitute(o.expr, params));
          RETURN_NOT_OK(Substitute(s.limit, params));
          return Substitute(s.offset, params);
        } else if constexpr (std::is_same_v<T, sql::InsertStmt>) {
          for (auto& row : s.rows) {
            for (auto& e : row) RETURN_NOT_OK(Substitute(e, params));
          }
          return Status::OK();
        } else if constexpr (std::is_same_v<T, sql::UpdateStmt>) {
          for (auto& [c, e] : s.sets) RETURN_NOT_OK(Substitute(e, params));
          return Substitute(s.where, params);
        } else if constexpr (std::is_same_v<T, sql::DeleteStmt>) {
          return Substitute(s.where, params);
        } else {
          return Status::OK();
        }
      },
      st);
}

}  // namespace

PgSession::PgSession(Cluster& cluster, EnergyService& energy, net::Stream& socket, int32_t pid,
                     std::shared_ptr<std::atomic<bool>> cancel, std::string database,
                     TimerService& timers)
    : cluster_(cluster),
      socket_(socket),
      timers_(timers),
      pid_(pid),
      cancel_(std::move(cancel)),
      executor_(cluster, energy, std::move(database)) {}

// Reads and writes that need not wait read no clock (ReadExactWithin, WriteGatherWithin).
Status PgSession::Flush() {
  std::string& buf = out_.buffer();
  std::array<asio::const_buffer, 1> bufs = {asio::buffer(buf)};
  Status st = socket_.WriteGatherWithin(bufs, cluster_.config().client_io_timeout_ms);
  buf.clear();
  return st;
}

Status PgSession::ReadExact(char* p, size_t n) {
  return socket_.ReadExactWithin(p, n, cluster_.config().client_io_timeout_ms);
}

bool PgSession::AwaitMessage() {
  if (socket_.buffered() > 0) return true;
  int64_t idle_ms = executor_.TxnStatus() == 'I'
                        ? 0
                        : executor_.TimeoutSetting("idle_in_transaction_session_timeout");
  if (idle_ms > 0) {
    Status st = socket_.WaitReadableWithin(static_cast<int>(std::min<int64_t>(idle_ms, INT32_MAX)));
    if (st.IsTimedOut()) {
      Log("master")->info("session ended pid={} reason=idle-in-transaction timeout", pid_);
      SendError(Status::Sql(sqlstate::kIdleInTransactionSessionTimeout,
                            "terminating connection due to idle-in-transaction timeout"),
                "FATAL");
      (void)Flush();
      return false;
    }
    return st.ok();
  }
  // Idle outside a transaction: as long as the client likes (a server shutdown wakes it).
  while (true) {
    Status st = socket_.WaitReadableWithin(60000);
    if (!st.IsTimedOut()) return st.ok();
  }
}

// Shows the statement in pg_stat_activity while it runs, and the session's state after it.
class PgSession::Published {
 public:
  Published(PgSession& s, std::string_view query) : s_(s) {
    s_.cluster_.activity().StatementStarted(s_.pid_, query, Clock::Real().NowMicros());
  }
  ~Published() {
    s_.cluster_.activity().StatementEnded(s_.pid_, s_.executor_.TxnStatus(),
                                          Clock::Real().NowMicros());
  }

 private:
  PgSession& s_;
};

void PgSession::SendError(const Status& e, const char* severity) {
  executor_.MarkFailed();
  cluster_.activity().StatementEnded(pid_, executor_.TxnStatus(), Clock::Real().NowMicros());
  if (e.code() == Status::Code::kInternal || e.code() == Status::Code::kCorruption) {
    Log("master")->error("statement failed pid={} err={}", pid_, e.ToString());
  }
  out_.ErrorOrNotice('E', severity, e.sqlstate(), e.message(), e.position());
}

void PgSession::Run() {
  bool skip_to_sync = false;  // after an error in an extended-protocol message
  // Each message's body, read into the memory of the one before (up to kKeptBody bytes).
  constexpr size_t kKeptBody = 1 << 20;
  std::string body;
  while (true) {
    if (body.capacity() > kKeptBody) body = std::string();
    if (!AwaitMessage()) return;
    char type;
    if (!ReadExact(&type, 1).ok()) return;
    char lenb[4];
    if (!ReadExact(lenb, 4).ok()) return;
    int32_t len = static_cast<int32_t>((uint32_t(uint8_t(lenb[0])) << 24) |
                                       (uint32_t(uint8_t(lenb[1])) << 16) |
                                       (uint32_t(uint8_t(lenb[2])) << 8) | uint8_t(lenb[3]));
    if (len < 4 || static_cast<uint32_t>(len) > pg::kMaxMessage) {
      SendError(
          Status::Sql(sqlstate::kProtocolViolation, fmt::format("invalid message length {}", len)),
          "FATAL");
      (void)Flush();
      return;
    }
    body.assign(len - 4, '\0');
    if (!ReadExact(body.data(), body.size()).ok()) return;
    Status st;
    switch (type) {
      case 'Q':
        if (body.empty() || body.back() != '\0') {
          SendError(Status::Sql(sqlstate::kProtocolViolation,
                                "invalid query message: missing terminator"),
                    "FATAL");
          (void)Flush();
          return;
        }
        body.pop_back();
        HandleQuery(body);
        if (copy_failed_connection_) return;
        out_.ReadyForQuery(executor_.TxnStatus());
        if (!Flush().ok()) return;
        break;
      case 'X':
        return;
      case 'S':
        skip_to_sync = false;
        out_.ReadyForQuery(executor_.TxnStatus());
        if (!Flush().ok()) return;
        break;
      case 'H':
        if (!Flush().ok()) return;
        break;
      case 'P':
      case 'B':
      case 'D':
      case 'E':
      case 'C':
        if (skip_to_sync) break;
        st = type == 'P'   ? HandleParse(body)
             : type == 'B' ? HandleBind(body)
             : type == 'D' ? HandleDescribe(body)
             : type == 'E' ? HandleExecute(body)
                           : HandleClose(body);
        if (!st.ok()) {
          SendError(st);
          skip_to_sync = true;
        }
        if (out_.buffer().size() > (256u << 10) && !Flush().ok()) return;
        break;
      case 'F':
        SendError(Status::NotSupported("the function call protocol is not supported"));
        skip_to_sync = true;
        break;
      case 'd':
      case 'c':
      case 'f':
        SendError(Status::Sql(sqlstate::kProtocolViolation, "unexpected COPY data"));
        if (!Flush().ok()) return;
        break;
      default:
        SendError(Status::Sql(sqlstate::kProtocolViolation,
                              fmt::format("invalid frontend message type {}",
                                          static_cast<int>(static_cast<uint8_t>(type)))),
                  "FATAL");
        (void)Flush();
        return;
    }
  }
}

void PgSession::HandleQuery(const std::string& body) {
  cancel_->store(false);
  Published published(*this, body);
  auto stmts = sql::Parse(body);
  if (!stmts.ok()) {
    SendError(stmts.status());
    return;
  }
  if (stmts->size() == 1 && std::holds_alternative<sql::EmptyStmt>((*stmts)[0])) {
    out_.EmptyQueryResponse();
    return;
  }
  if (stmts->size() == 1 && std::holds_alternative<sql::CopyStmt>((*stmts)[0])) {
    if (!HandleCopy(std::get<sql::CopyStmt>((*stmts)[0]))) copy_failed_connection_ = true;
    return;
  }
  WireSink sink(out_, socket_, cluster_.config().client_io_timeout_ms);
  for (auto& st : *stmts) {
    auto tag = WithStatementTimeout([&] { return executor_.Execute(st, sink, cancel_.get()); });
    if (!tag.ok()) {
      SendError(tag.status());
      return;
    }
    if (!tag->empty()) out_.CommandComplete(*tag);
  }
}

Result<std::shared_ptr<PgSession::Prepared>> PgSession::Describe(const std::string& sql,
                                                                 std::vector<int32_t> oids) {
  auto p = std::make_shared<Prepared>();
  p->sql = sql;
  ASSIGN_OR_RETURN(auto stmts, sql::Parse(sql));
  if (stmts.size() != 1)
    return Status::Sql(sqlstate::kSyntaxError,
                       "cannot insert multiple commands into a prepared statement");
  size_t nparams = std::max<size_t>(oids.size(), static_cast<size_t>(sql::MaxParamIndex(sql)));
  oids.resize(nparams, 0);
  p->declared_oids = oids;
  std::vector<SqlType> types;
  for (int32_t oid : oids) {
    ASSIGN_OR_RETURN(SqlType t, pg::TypeFromOid(oid));
    types.push_back(t);
  }
  sql::Statement& st = stmts[0];
  const plan::CatalogReader& cat = executor_.catalog();
  if (auto* sel = std::get_if<sql::SelectStmt>(&st)) {
    ASSIGN_OR_RETURN(plan::BoundSelect b, plan::BindSelect(*sel, cat, &types));
    p->returns_rows = true;
    p->plannable = true;
    p->names = b.names;
    p->types = b.types;
  } else if (auto* ins = std::get_if<sql::InsertStmt>(&st)) {
    RETURN_NOT_OK(plan::RewriteViewTarget(*ins, cat));
    RETURN_NOT_OK(plan::BindInsert(*ins, cat, &types).status());
    p->plannable = true;
  } else if (auto* up = std::get_if<sql::UpdateStmt>(&st)) {
    RETURN_NOT_OK(plan::RewriteViewTarget(*up, cat));
    RETURN_NOT_OK(plan::BindUpdate(*up, cat, &types).status());
    p->plannable = true;
  } else if (auto* del = std::get_if<sql::DeleteStmt>(&st)) {
    RETURN_NOT_OK(plan::RewriteViewTarget(*del, cat));
    RETURN_NOT_OK(plan::BindDelete(*del, cat, &types).status());
    p->plannable = true;
  } else if (auto* show = std::get_if<sql::ShowStmt>(&st)) {
    p->returns_rows = true;
    p->names = {show->name};
    p->types = {SqlType{TypeId::kText}};
  } else if (std::holds_alternative<sql::EmptyStmt>(st)) {
    p->empty = true;
  }
  for (auto& t : types) {
    if (t.id == TypeId::kNull) t = SqlType{TypeId::kText};  // as PostgreSQL: unknown is text
  }
  p->param_types = std::move(types);
  return p;
}

Status PgSession::HandleParse(std::string_view body) {
  Body b(body);
  std::string name, sql;
  int16_t n = 0;
  RETURN_NOT_OK(b.Cstr(&name));
  RETURN_NOT_OK(b.Cstr(&sql));
  RETURN_NOT_OK(b.I16(&n));
  if (n < 0) return Status::Sql(sqlstate::kProtocolViolation, "negative parameter count");
  std::vector<int32_t> oids(n);
  for (auto& o : oids) RETURN_NOT_OK(b.I32(&o));
  if (!name.empty() && statements_.count(name)) {
    return Status::Sql(sqlstate::kDuplicatePreparedStatement,
                       fmt::format("prepared statement \"{}\" already exists", name));
  }
  ASSIGN_OR_RETURN(auto p, Describe(sql, std::move(oids)));
  statements_[name] = std::move(p);
  out_.Simple('1');
  return Status::OK();
}

Status PgSession::HandleBind(std::string_view body) {
  Body b(body);
  std::string_view portal, stmt;
  RETURN_NOT_OK(b.Cstr(&portal));
  RETURN_NOT_OK(b.Cstr(&stmt));
  auto it = statements_.find(stmt);
  if (it == statements_.end()) {
    return Status::Sql(sqlstate::kInvalidSqlStatementName,
                       fmt::format("prepared statement \"{}\" does not exist", stmt));
  }
  const Prepared& p = *it->second;
  int16_t nfmt = 0, nparams = 0, nres = 0;
  RETURN_NOT_OK(b.I16(&nfmt));
  if (nfmt < 0) return Status::Sql(sqlstate::kProtocolViolation, "negative format count");
  SmallVector<int16_t, 8> pfmt(nfmt);
  for (auto& f : pfmt) RETURN_NOT_OK(b.I16(&f));
  RETURN_NOT_OK(b.I16(&nparams));
  if (nparams != static_cast<int16_t>(p.param_types.size())) {
    return Status::Sql(
        sqlstate::kProtocolViolation,
        fmt::format("bind message supplies {} parameters, but prepared statement \"{}\" "
                    "requires {}",
                    nparams, stmt, p.param_types.size()));
  }
  if (nfmt > 1 && nfmt != nparams)
    return Status::Sql(sqlstate::kProtocolViolation, "parameter format count does not match");
  // A portal bound again (the unnamed one, at each execution) is taken out of the map, and
  // lends its node and its lists' memory to the new binding; if the binding fails, it is
  // gone, as PostgreSQL drops it first.
  Portal po;
  auto bound = portals_.find(portal);
  auto old = bound == portals_.end() ? decltype(portals_)::node_type() : portals_.extract(bound);
  if (!old.empty()) {
    po.params = std::move(old.mapped().params);
    po.formats = std::move(old.mapped().formats);
    po.params.clear();
    po.formats.clear();
  }
  po.stmt = it->second;
  po.params.reserve(nparams);
  for (int i = 0; i < nparams; i++) {
    int32_t len = 0;
    RETURN_NOT_OK(b.I32(&len));
    if (len == -1) {
      po.params.push_back(Value());
      continue;
    }
    if (len < 0) return Status::Sql(sqlstate::kProtocolViolation, "invalid parameter length");
    std::string_view bytes;
    RETURN_NOT_OK(b.Bytes(len, &bytes));
    bool binary = nfmt == 0 ? false : pfmt[nfmt == 1 ? 0 : i] == 1;
    auto v = pg::DecodeParam(bytes, binary, p.param_types[i], p.declared_oids[i]);
    if (!v.ok()) return v.status().Prepend(fmt::format("parameter ${}", i + 1));
    po.params.push_back(std::move(v).value());
  }
  RETURN_NOT_OK(b.I16(&nres));
  if (nres < 0) return Status::Sql(sqlstate::kProtocolViolation, "negative result format count");
  SmallVector<int16_t, 8> rfmt(nres);
  for (auto& f : rfmt) {
    RETURN_NOT_OK(b.I16(&f));
    if (f != 0 && f != 1)
      return Status::Sql(sqlstate::kInvalidParameterValue,
                         fmt::format("unsupported format code: {}", f));
  }
  po.formats.reserve(p.types.size());
  for (size_t c = 0; c < p.types.size(); c++) {
    po.formats.push_back(nres == 0 ? 0 : rfmt[nres == 1 ? 0 : std::min<size_t>(c, nres - 1)]);
  }
  if (old.empty()) {
    portals_.emplace(std::string(portal), std::move(po));
  } else {
    old.mapped() = std::move(po);
    portals_.insert(std::move(old));
  }
  out_.Simple('2');
  return Status::OK();
}

Status PgSession::HandleDescribe(std::string_view body) {
  Body b(body);
  char what = b.Byte();
  std::string name;
  RETURN_NOT_OK(b.Cstr(&name));
  if (what == 'S') {
    auto it = statements_.find(name);
    if (it == statements_.end()) {
      return Status::Sql(sqlstate::kInvalidSqlStatementName,
                         fmt::format("prepared statement \"{}\" does not exist", name));
    }
    out_.ParameterDescription(it->second->param_types);
    if (it->second->returns_rows) {
      out_.RowDescription(it->second->names, it->second->types);
    } else {
      out_.Simple('n');
    }
    return Status::OK();
  }
  if (what == 'P') {
    auto it = portals_.find(name);
    if (it == portals_.end())
      return Status::Sql(sqlstate::kInvalidCursorName,
                         fmt::format("portal \"{}\" does not exist", name));
    const Prepared& p = *it->second.stmt;
    if (p.returns_rows) {
      out_.RowDescription(p.names, p.types, it->second.formats);
    } else {
      out_.Simple('n');
    }
    return Status::OK();
  }
  return Status::Sql(sqlstate::kProtocolViolation, "invalid DESCRIBE message subtype");
}

Status PgSession::HandleExecute(std::string_view body) {
  Body b(body);
  std::string_view name;
  int32_t max_rows = 0;
  RETURN_NOT_OK(b.Cstr(&name));
  RETURN_NOT_OK(b.I32(&max_rows));
  auto it = portals_.find(name);
  if (it == portals_.end())
    return Status::Sql(sqlstate::kInvalidCursorName,
                       fmt::format("portal \"{}\" does not exist", name));
  Portal& po = it->second;
  const Prepared& p = *po.stmt;
  if (p.empty) {
    out_.EmptyQueryResponse();
    return Status::OK();
  }
  if (!po.executed && max_rows <= 0) {
    // The whole result at once (what libpq and most drivers ask for): stream it.
    po.executed = true;
    cancel_->store(false);
    Published published(*this, p.sql);
    PortalStreamSink sink(out_, socket_, cluster_.config().client_io_timeout_ms, p.types,
                          po.formats);
    ASSIGN_OR_RETURN(po.tag, RunPrepared(*po.stmt, po.params, sink));
    out_.CommandComplete(p.returns_rows && po.tag.rfind("SELECT", 0) == 0
                             ? fmt::format("SELECT {}", sink.rows())
                             : po.tag);
    return Status::OK();
  }
  if (!po.executed) {
    po.executed = true;
    cancel_->store(false);
    Published published(*this, p.sql);
    BufferSink sink(out_, &po.rows);
    ASSIGN_OR_RETURN(po.tag, RunPrepared(*po.stmt, po.params, sink));
  }
  std::vector<std::string> cells(p.types.size());
  std::vector<const std::string*> ptrs(p.types.size());
  size_t sent = 0;
  while (po.next < po.rows.size() && (max_rows <= 0 || sent < static_cast<size_t>(max_rows))) {
    const auto& row = po.rows[po.next++];
    for (size_t c = 0; c < row.size() && c < cells.size(); c++) {
      ptrs[c] = nullptr;
      if (row[c].is_null()) continue;
      cells[c].clear();
      pg::EncodeValue(row[c], p.types[c], po.formats[c] == 1, &cells[c]);
      ptrs[c] = &cells[c];
    }
    out_.DataRow(ptrs);
    sent++;
    if (out_.buffer().size() > (256u << 10)) RETURN_NOT_OK(Flush());
  }
  if (po.next < po.rows.size()) {
    out_.Simple('s');  // PortalSuspended: Execute again for more
    return Status::OK();
  }
  out_.CommandComplete(
      p.returns_rows && po.tag.rfind("SELECT", 0) == 0 ? fmt::format("SELECT {}", sent) : po.tag);
  return Status::OK();
}

Result<std::string> PgSession::RunPrepared(Prepared& p, const std::vector<Value>& params,
                                           ResultSink& sink) {
  if (p.cached && !executor_.Valid(*p.cached)) {
    p.cached.reset();
    p.executions = 0;  // planned again from the text, generic again from the second execution
  }
  if (p.cached) {
    return WithStatementTimeout(
        [&] { return executor_.ExecuteCached(*p.cached, params, sink, cancel_.get()); });
  }
  if (p.txn) {
    sql::Statement stmt = *p.txn;
    return WithStatementTimeout([&] { return executor_.Execute(stmt, sink, cancel_.get()); });
  }
  ASSIGN_OR_RETURN(auto stmts, sql::Parse(p.sql));
  if (stmts.size() == 1 && std::holds_alternative<sql::TxnStmt>(stmts[0]))
    p.txn = std::get<sql::TxnStmt>(stmts[0]);
  if (p.plannable && ++p.executions == 2) {
    // Once per statement (the unnamed one, parsed anew for each use, never gets here).
    ASSIGN_OR_RETURN(auto generic, sql::Parse(p.sql));
    ASSIGN_OR_RETURN(auto custom, sql::Parse(p.sql));
    RETURN_NOT_OK(Substitute(custom[0], params));
    p.cached = executor_.PlanGeneric(generic[0], custom[0], p.param_types, params);
  }
  RETURN_NOT_OK(Substitute(stmts[0], params));
  return WithStatementTimeout([&] { return executor_.Execute(stmts[0], sink, cancel_.get()); });
}

Status PgSession::HandleClose(std::string_view body) {
  Body b(body);
  char what = b.Byte();
  std::string name;
  RETURN_NOT_OK(b.Cstr(&name));
  if (what == 'S') {
    statements_.erase(name);
  } else if (what == 'P') {
    portals_.erase(name);
  } else {
    return Status::Sql(sqlstate::kProtocolViolation, "invalid CLOSE message subtype");
  }
  out_.Simple('3');
  return Status::OK();
}

}  // namespace wattdb::master
