#include "master/pgwire/pg_server.h"

#include "common/clock.h"
#include "common/logging.h"
#include "common/sqlstate.h"
#include "master/catalog/database_catalog.h"
#include "master/pgwire/pg_protocol.h"
#include "master/pgwire/pg_session.h"

namespace wattdb::master {

namespace asio = net::asio;

// Reads of frontend messages before the session starts, all within one deadline
// (authentication_timeout_ms from the connection's start).
class StartupReader {
 public:
  StartupReader(net::Stream& s, net::Stream::Deadline deadline) : s_(s), deadline_(deadline) {}
  Status Exact(char* p, size_t n) { return s_.ReadExact(p, n, deadline_); }
  Result<int32_t> I32() {
    unsigned char b[4];
    RETURN_NOT_OK(Exact(reinterpret_cast<char*>(b), 4));
    return static_cast<int32_t>((uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) |
                                (uint32_t(b[2]) << 8) | b[3]);
  }
  net::Stream::Deadline deadline() const { return deadline_; }

 private:
  net::Stream& s_;
  net::Stream::Deadline deadline_;
};

PgServer::PgServer(Cluster& cluster, EnergyService& energy, std::string host, uint16_t port)
    : cluster_(cluster), energy_(energy), host_(std::move(host)), port_(port) {
  for (const auto& [name, password] : cluster_.config().auth.users) {
    config_users_[name] = auth::MakeCredentials(name, password);
  }
}

namespace {

// Reads one typed frontend message during authentication (only 'p' is expected).
Result<std::string> ReadPasswordMessage(StartupReader& in) {
  char type;
  RETURN_NOT_OK(in.Exact(&type, 1));
  ASSIGN_OR_RETURN(int32_t len, in.I32());
  if (type != 'p')
    return Status::Sql(sqlstate::kProtocolViolation,
                       fmt::format("expected a password message, got '{}'", type));
  if (len < 4 || len > 10000)
    return Status::Sql(sqlstate::kProtocolViolation, "invalid password message length");
  std::string body(len - 4, '\0');
  RETURN_NOT_OK(in.Exact(body.data(), body.size()));
  return body;
}

}  // namespace

Status PgServer::Authenticate(net::Stream& socket, StartupReader& in, const std::string& user) {
  const AuthConfig& cfg = cluster_.config().auth;
  if (cfg.method == "trust") return Status::OK();
  if (cfg.trust_loopback && socket.PeerIsLoopback()) return Status::OK();
  std::optional<auth::Credentials> creds;
  if (auto it = config_users_.find(user); it != config_users_.end()) {
    creds = it->second;
  } else {
    creds = cluster_.catalog().GetUser(user);
  }
  auto failed = Status::Sql(sqlstate::kInvalidPassword,
                            fmt::format("password authentication failed for user \"{}\"", user));
  pg::MessageWriter out;
  if (cfg.method == "md5") {
    std::string salt(4, '\0');
    {
      MutexLock l(mu_);
      for (auto& c : salt) c = static_cast<char>(rng_());
    }
    out.Authentication(5, salt);
    RETURN_NOT_OK(WriteAll(socket, out.buffer(), in.deadline()));
    ASSIGN_OR_RETURN(std::string resp, ReadPasswordMessage(in));
    if (!resp.empty() && resp.back() == '\0') resp.pop_back();
    if (!creds || !auth::CheckMd5Response(*creds, salt, resp)) return failed;
    return Status::OK();
  }
  // SCRAM-SHA-256.
  out.Authentication(10, std::string("SCRAM-SHA-256\0\0", 15));
  RETURN_NOT_OK(WriteAll(socket, out.buffer(), in.deadline()));
  ASSIGN_OR_RETURN(std::string init, ReadPasswordMessage(in));
  size_t nul = init.find('\0');
  if (nul == std::string::npos || init.substr(0, nul) != "SCRAM-SHA-256" || init.size() < nul + 5) {
    return Status::Sql(sqlstate::kProtocolViolation,
                       "client selected an invalid SASL authentication mechanism");
  }
  std::string first = init.substr(nul + 5);
  auth::ScramExchange scram(creds);
  ASSIGN_OR_RETURN(std::string server_first, scram.First(first));
  out.Authentication(11, server_first);
  RETURN_NOT_OK(WriteAll(socket, out.buffer(), in.deadline()));
  ASSIGN_OR_RETURN(std::string final_msg, ReadPasswordMessage(in));
  auto server_final = scram.Final(final_msg);
  if (!server_final.ok())
    return server_final.status().sqlstate() == sqlstate::kInvalidPassword ? failed
                                                                          : server_final.status();
  out.Authentication(12, *server_final);
  return WriteAll(socket, out.buffer(), in.deadline());
}

PgServer::~PgServer() { Stop(); }

Status PgServer::Start() {
  server_ =
      std::make_unique<net::TcpServer>("pg", host_, port_, [this](net::Socket& s) { Serve(s); });
  // Connections still authenticating count too: past this many the server closes new ones
  // at once (sessions beyond max_connections are told 53300 first).
  server_->set_max_connections(2 * cluster_.config().max_connections + 16);
  return server_->Start();
}

void PgServer::Stop() {
  if (server_) server_->Stop();
}

namespace {

void SendFatal(net::Stream& socket, pg::MessageWriter& out, const char* code,
               const std::string& msg) {
  out.ErrorOrNotice('E', "FATAL", code, msg, 0);
  (void)WriteAll(socket, out.buffer(), net::Stream::In(1000));
}

int32_t BigEndian32(const std::string& b, size_t off) {
  return int32_t((uint8_t(b[off]) << 24) | (uint8_t(b[off + 1]) << 16) |
                 (uint8_t(b[off + 2]) << 8) | uint8_t(b[off + 3]));
}

// What the startup phase of a connection asked for.
struct Startup {
  enum class Kind { kEnd, kCancel, kSession } kind = Kind::kEnd;
  int32_t pid = 0, secret = 0;                              // kCancel: the session to cancel
  std::vector<std::pair<std::string, std::string>> params;  // kSession
};

// Reads startup packets up to the StartupMessage: SSL/GSS negotiation requests are declined
// with 'N'; a CancelRequest ends the startup. kEnd: the connection ends (after a FATAL where
// one is due).
Startup ReadStartup(net::Stream& socket, StartupReader& in, pg::MessageWriter& out) {
  while (true) {
    auto len = in.I32();
    if (!len.ok()) return {};
    if (*len < 8 || *len > 10000) {
      SendFatal(socket, out, sqlstate::kProtocolViolation, "invalid length of startup packet");
      return {};
    }
    std::string body(*len - 4, '\0');
    if (!in.Exact(body.data(), body.size()).ok()) return {};
    int32_t code = BigEndian32(body, 0);
    if (code == pg::kSslRequest || code == pg::kGssEncRequest) {
      out.buffer().push_back('N');
      if (!WriteAll(socket, out.buffer(), in.deadline()).ok()) return {};
      continue;
    }
    if (code == pg::kCancelRequest) {
      if (body.size() != 12) return {};
      return {Startup::Kind::kCancel, BigEndian32(body, 4), BigEndian32(body, 8), {}};
    }
    if (code != pg::kProtocolV3) {
      SendFatal(socket, out, sqlstate::kFeatureNotSupported,
                fmt::format("unsupported frontend protocol {}.{}: server supports 3.0", code >> 16,
                            code & 0xffff));
      return {};
    }
    auto p = pg::ParseStartupParams(std::string_view(body).substr(4));
    if (!p.ok()) {
      SendFatal(socket, out, sqlstate::kProtocolViolation, p.status().message());
      return {};
    }
    return {Startup::Kind::kSession, 0, 0, std::move(p).value()};
  }
}

// AuthenticationOk, the ParameterStatus messages a client reads, BackendKeyData and
// ReadyForQuery.
void StartupReply(pg::MessageWriter& out, const std::string& user, const std::string& app,
                  int32_t pid, int32_t secret) {
  out.AuthenticationOk();
  for (auto [k, v] :
       std::vector<std::pair<const char*, std::string>>{{"server_version", "15.0"},
                                                        {"server_encoding", "UTF8"},
                                                        {"client_encoding", "UTF8"},
                                                        {"DateStyle", "ISO, MDY"},
                                                        {"integer_datetimes", "on"},
                                                        {"standard_conforming_strings", "on"},
                                                        {"TimeZone", "UTC"},
                                                        {"IntervalStyle", "postgres"},
                                                        {"is_superuser", "on"},
                                                        {"session_authorization", user},
                                                        {"application_name", app}}) {
    out.ParameterStatus(k, v);
  }
  out.BackendKeyData(pid, secret);
  out.ReadyForQuery('I');
}

}  // namespace

void PgServer::Cancel(int32_t pid, int32_t secret) {
  MutexLock l(mu_);
  auto it = sessions_.find(pid);
  if (it != sessions_.end() && it->second.secret == secret) it->second.cancel->store(true);
}

void PgServer::Serve(net::Socket& raw) {
  net::Stream socket(raw, net::Stream::Reads::kBlocking);  // one system call per client message
  StartupReader in(socket, net::Stream::In(cluster_.config().authentication_timeout_ms));
  pg::MessageWriter out;
  auto fatal = [&](const char* code, const std::string& msg) { SendFatal(socket, out, code, msg); };
  Startup startup = ReadStartup(socket, in, out);
  if (startup.kind == Startup::Kind::kCancel) Cancel(startup.pid, startup.secret);
  if (startup.kind != Startup::Kind::kSession) return;
  std::string user, app, database, options;
  for (auto& [k, v] : startup.params) {
    if (k == "user") user = v;
    if (k == "application_name") app = v;
    if (k == "database") database = v;
    if (k == "options") options = v;
  }
  if (database.empty()) database = user;
  if (user.empty()) {
    fatal(sqlstate::kInvalidAuthorizationSpecification,
          "no PostgreSQL user name specified in startup packet");
    return;
  }
  if (Status st = Authenticate(socket, in, user); !st.ok()) {
    Log("master")->info("authentication failed user={} peer={} reason={}", user, socket.peer(),
                        st.message());
    if (st.IsTimedOut())
      fatal(sqlstate::kConnectionFailure, "canceling authentication due to timeout");
    else if (st.code() != Status::Code::kIOError)
      fatal(st.sqlstate().c_str(), st.message());
    return;
  }
  if (database != kDefaultDatabase && !cluster_.catalog().HasDatabase(database)) {
    fatal(sqlstate::kInvalidCatalogName, fmt::format("database \"{}\" does not exist", database));
    return;
  }
  Cluster::SessionGuard attached(cluster_, database);
  int32_t pid, secret;
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  {
    MutexLock l(mu_);
    if (sessions_.size() >= static_cast<size_t>(cluster_.config().max_connections)) {
      fatal(sqlstate::kTooManyConnections, "sorry, too many clients already");
      return;
    }
    pid = next_pid_++;
    secret = static_cast<int32_t>(rng_());
    sessions_[pid] = {secret, cancel};
  }
  struct Unregister {
    PgServer* s;
    int32_t pid;
    ~Unregister() {
      MutexLock l(s->mu_);
      s->sessions_.erase(pid);
      s->cluster_.activity().Disconnected(pid);
    }
  } unregister{this, pid};

  PgSession session(cluster_, energy_, socket, pid, cancel, database, timers_);
  auto settings = pg::ParseStartupOptions(options);
  Status applied = settings.ok() ? session.ApplyStartupOptions(*settings) : settings.status();
  if (!applied.ok()) {
    fatal(applied.sqlstate().c_str(), applied.message());
    return;
  }
  StartupReply(out, user, app, pid, secret);
  if (!WriteAll(socket, out.buffer(), in.deadline()).ok()) return;
  Log("master")->debug("session start pid={} user={} app={}", pid, user, app);
  Activity::Backend me;
  me.pid = pid;
  me.datname = database;
  me.usename = user;
  me.application_name = app;
  cluster_.activity().Connected(std::move(me), socket.peer(), Clock::Real().NowMicros());

  session.Run();
}

}  // namespace wattdb::master
