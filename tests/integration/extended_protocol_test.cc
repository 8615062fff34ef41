// The extended query protocol through libpq (prepared statements, typed and binary
// parameters, binary results) and on a raw socket (row-limited Execute, error recovery).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

class ExtendedProtocol : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new MiniCluster(MiniClusterOptions{2, 1 << 20, 300});
    ASSERT_TRUE(cluster_->Start()) << "logs in " << cluster_->dir();
    auto c = cluster_->Connect();
    ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, name TEXT, big BIGINT, d DOUBLE "
                      "PRECISION, ok BOOLEAN)"),
              "");
    ASSERT_EQ(
        c->Exec(
            "INSERT INTO t VALUES (1, 'one', 10000000000, 1.5, true), (2, 'two', -2, 2.25, false), "
            "(3, NULL, 3, 3.0, NULL), (4, 'four', 4, 4.5, true), (5, 'five', 5, 5.5, false)"),
        "");
  }
  static void TearDownTestSuite() { delete cluster_; }
  void SetUp() override {
    conn_ = PQconnectdb(cluster_->conninfo().c_str());
    ASSERT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
  }
  void TearDown() override { PQfinish(conn_); }
  static std::string State(PGresult* r) {
    const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return s ? s : "";
  }
  // Runs COPY ... FROM STDIN with `data`: the row count, or "ERROR <sqlstate>".
  std::string CopyIn(const char* sql, const std::string& data) {
    PGresult* res = PQexec(conn_, sql);
    EXPECT_EQ(PQresultStatus(res), PGRES_COPY_IN) << PQresultErrorMessage(res);
    PQclear(res);
    EXPECT_EQ(PQputCopyData(conn_, data.data(), static_cast<int>(data.size())), 1);
    EXPECT_EQ(PQputCopyEnd(conn_, nullptr), 1);
    res = PQgetResult(conn_);
    std::string state = State(res), tuples = PQcmdTuples(res);
    PQclear(res);
    while ((res = PQgetResult(conn_)) != nullptr) PQclear(res);
    return state.empty() ? tuples : "ERROR " + state;
  }
  // The first field of the first row of `sql`'s result, or "ERROR <sqlstate>".
  std::string Value(const char* sql) {
    PGresult* r = PQexec(conn_, sql);
    std::string v = PQresultStatus(r) == PGRES_TUPLES_OK    ? PQgetvalue(r, 0, 0)
                    : PQresultStatus(r) == PGRES_COMMAND_OK ? ""
                                                            : "ERROR " + State(r);
    PQclear(r);
    return v;
  }
  static MiniCluster* cluster_;
  PGconn* conn_ = nullptr;
};
MiniCluster* ExtendedProtocol::cluster_ = nullptr;

TEST_F(ExtendedProtocol, PreparedStatementInfersParameterTypes) {
  PGresult* r = PQprepare(conn_, "by_id", "SELECT name, big FROM t WHERE id = $1", 0, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
  r = PQdescribePrepared(conn_, "by_id");
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK);
  EXPECT_EQ(PQnparams(r), 1);
  EXPECT_EQ(PQparamtype(r, 0), 23u);  // int4, from the comparison with id
  EXPECT_EQ(PQnfields(r), 2);
  EXPECT_EQ(PQftype(r, 1), 20u);  // int8
  PQclear(r);
  for (const char* id : {"1", "2", "3"}) {
    const char* vals[] = {id};
    r = PQexecPrepared(conn_, "by_id", 1, vals, nullptr, nullptr, 0);
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
    ASSERT_EQ(PQntuples(r), 1);
    if (std::string(id) == "1") {
      EXPECT_STREQ(PQgetvalue(r, 0, 1), "10000000000");
    }
    if (std::string(id) == "3") {
      EXPECT_TRUE(PQgetisnull(r, 0, 0));
    }
    PQclear(r);
  }
}

TEST_F(ExtendedProtocol, BinaryParametersAndResults) {
  uint32_t id = htonl(2);
  const char* vals[] = {reinterpret_cast<const char*>(&id)};
  int lens[] = {4};
  int fmts[] = {1};
  Oid types[] = {23};
  PGresult* r = PQexecParams(conn_, "SELECT id, big, d, ok, name FROM t WHERE id = $1", 1, types,
                             vals, lens, fmts, 1);
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
  ASSERT_EQ(PQntuples(r), 1);
  ASSERT_EQ(PQgetlength(r, 0, 0), 4);
  uint32_t got;
  std::memcpy(&got, PQgetvalue(r, 0, 0), 4);
  EXPECT_EQ(ntohl(got), 2u);
  ASSERT_EQ(PQgetlength(r, 0, 1), 8);
  uint64_t big = 0;
  for (int i = 0; i < 8; i++) big = (big << 8) | static_cast<uint8_t>(PQgetvalue(r, 0, 1)[i]);
  EXPECT_EQ(static_cast<int64_t>(big), -2);
  uint64_t bits = 0;
  for (int i = 0; i < 8; i++) bits = (bits << 8) | static_cast<uint8_t>(PQgetvalue(r, 0, 2)[i]);
  double d;
  std::memcpy(&d, &bits, 8);
  EXPECT_EQ(d, 2.25);
  EXPECT_EQ(PQgetvalue(r, 0, 3)[0], 0);
  EXPECT_EQ(std::string(PQgetvalue(r, 0, 4), PQgetlength(r, 0, 4)), "two");
  PQclear(r);
}

TEST_F(ExtendedProtocol, WritesWithParametersAndErrorsRecover) {
  const char* ins[] = {"10", "ten", nullptr};
  PGresult* r = PQexecParams(conn_, "INSERT INTO t (id, name, big) VALUES ($1, $2, $3)", 3, nullptr,
                             ins, nullptr, nullptr, 0);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  EXPECT_STREQ(PQcmdTuples(r), "1");
  PQclear(r);
  const char* upd[] = {"77", "10"};
  r = PQexecParams(conn_, "UPDATE t SET big = $1 WHERE id = $2", 2, nullptr, upd, nullptr, nullptr,
                   0);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
  const char* bad[] = {"abc"};
  r = PQexecParams(conn_, "SELECT name FROM t WHERE id = $1", 1, nullptr, bad, nullptr, nullptr, 0);
  EXPECT_EQ(State(r), sqlstate::kInvalidTextRepresentation);
  PQclear(r);
  r = PQexecParams(conn_, "INSERT INTO t (id) VALUES ($1)", 1, nullptr, upd + 1, nullptr, nullptr,
                   0);
  EXPECT_EQ(State(r), sqlstate::kUniqueViolation);
  PQclear(r);
  // The session recovered at Sync: the next statement works.
  const char* id[] = {"10"};
  r = PQexecParams(conn_, "SELECT big, name FROM t WHERE id = $1", 1, nullptr, id, nullptr, nullptr,
                   0);
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "77");
  PQclear(r);
  const char* del[] = {"10"};
  r = PQexecParams(conn_, "DELETE FROM t WHERE id = $1", 1, nullptr, del, nullptr, nullptr, 0);
  EXPECT_STREQ(PQcmdTuples(r), "1");
  PQclear(r);
}

TEST_F(ExtendedProtocol, CopyInAndOutInTextAndCsv) {
  PGresult* r = PQexec(conn_, "CREATE TABLE cp (id INT PRIMARY KEY, name TEXT)");
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
  auto copy_in = [&](const char* sql, const std::string& data) { return CopyIn(sql, data); };
  EXPECT_EQ(copy_in("COPY cp FROM STDIN", "1\tone\n2\t\\N\n3\ta\\tb\n"), "3");
  EXPECT_EQ(
      copy_in("COPY cp FROM STDIN WITH (FORMAT csv, HEADER)", "id,name\n4,\"x,y\"\n5,\n6,\"\"\n"),
      "3");
  // A bad row fails the whole COPY: nothing of it is inserted.
  EXPECT_EQ(copy_in("COPY cp FROM STDIN", "7\tseven\nnot-a-number\tx\n"), "ERROR 22P02");
  EXPECT_EQ(copy_in("COPY cp FROM STDIN", "1\tagain\n"), "ERROR 23505");
  r = PQexec(conn_, "COPY cp TO STDOUT WITH CSV");
  ASSERT_EQ(PQresultStatus(r), PGRES_COPY_OUT) << PQresultErrorMessage(r);
  PQclear(r);
  std::string out;
  char* buf = nullptr;
  int n;
  while ((n = PQgetCopyData(conn_, &buf, 0)) > 0) {
    out.append(buf, n);
    PQfreemem(buf);
  }
  while ((r = PQgetResult(conn_)) != nullptr) PQclear(r);
  EXPECT_EQ(out, "1,one\n2,\n3,a\tb\n4,\"x,y\"\n5,\n6,\"\"\n");
}

// Columns a COPY does not name get what an INSERT not naming them gets: their DEFAULT, the
// next serial, or NULL; a table without a primary key its hidden row ids. Errors name the
// line and column, as PostgreSQL's do.
TEST_F(ExtendedProtocol, CopyWithAColumnListFillsDefaultsAndSerials) {
  ASSERT_EQ(Value("CREATE TABLE cd (a INT PRIMARY KEY, b INT DEFAULT 5, c TEXT DEFAULT 'x' || 'y', "
                  "n NUMERIC(6,2) DEFAULT 1.255, s SERIAL, z TEXT)"),
            "");
  EXPECT_EQ(CopyIn("COPY cd (a) FROM STDIN", "1\n2\n"), "2");
  EXPECT_EQ(CopyIn("COPY cd (z, a, b) FROM STDIN WITH (FORMAT csv)", "zed,3,\n"),
            "1");  // b given as NULL
  ASSERT_EQ(Value("INSERT INTO cd (a) VALUES (4)"), "");
  PGresult* r = PQexec(conn_, "SELECT a, b, c, n, s, z FROM cd ORDER BY a");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
  std::string got;
  for (int i = 0; i < PQntuples(r); i++) {
    for (int j = 0; j < 6; j++)
      got +=
          std::string(PQgetisnull(r, i, j) ? "NULL" : PQgetvalue(r, i, j)) + (j < 5 ? "," : "\n");
  }
  PQclear(r);
  EXPECT_EQ(got,
            "1,5,xy,1.26,1,NULL\n2,5,xy,1.26,2,NULL\n3,NULL,xy,1.26,3,zed\n4,5,xy,1.26,4,NULL\n");

  ASSERT_EQ(
      Value("CREATE TABLE heap (v TEXT NOT NULL, at TIMESTAMP DEFAULT '2024-05-06 07:08:09')"), "");
  EXPECT_EQ(CopyIn("COPY heap (v) FROM STDIN", "p\nq\np\n"), "3");
  EXPECT_EQ(Value("SELECT count(DISTINCT v) || '/' || count(*) || '/' || min(at) FROM heap"),
            "2/3/2024-05-06 07:08:09");

  r = PQexec(conn_, "COPY heap (v) FROM STDIN");
  PQclear(r);
  std::string bad = "a\nb\n\\N\n";  // NULL into NOT NULL on line 3
  PQputCopyData(conn_, bad.data(), static_cast<int>(bad.size()));
  PQputCopyEnd(conn_, nullptr);
  r = PQgetResult(conn_);
  EXPECT_EQ(State(r), sqlstate::kNotNullViolation);
  EXPECT_NE(std::string(PQresultErrorMessage(r)).find("COPY heap, line 3"), std::string::npos)
      << PQresultErrorMessage(r);
  PQclear(r);
  while ((r = PQgetResult(conn_)) != nullptr) PQclear(r);
  EXPECT_EQ(CopyIn("COPY cd (a, b) FROM STDIN", "9\t1\n10\tten\n"), "ERROR 22P02");
  EXPECT_EQ(Value("SELECT count(*) FROM heap"), "3");
  EXPECT_EQ(Value("SELECT count(*) FROM cd"), "4");
}

// A COPY of more than one piece (4 MiB) has each piece prepared on the nodes while the next
// is parsed, and stays one transaction: a duplicate key in its last piece, of a committed
// row or of one of its own earlier rows, fails all of it, in a block or alone.
TEST_F(ExtendedProtocol, ALargeCopyIsOneTransactionWhicheverPieceFails) {
  ASSERT_EQ(Value("CREATE TABLE big (id INT PRIMARY KEY, pad TEXT)"), "");
  constexpr int kRows = 100000;  // about 9 MiB
  std::string pad(80, 'x');
  auto rows = [&](int from, int to, int dup) {
    std::string data;
    for (int i = from; i < to; i++) data += fmt::format("{}\t{}\n", i, pad);
    if (dup >= 0) data += fmt::format("{}\tagain\n", dup);
    return data;
  };
  EXPECT_EQ(CopyIn("COPY big FROM STDIN", rows(0, kRows, -1)), std::to_string(kRows));
  const std::string sum = std::to_string(int64_t{kRows} * (kRows - 1) / 2);
  EXPECT_EQ(Value("SELECT sum(id) FROM big"), sum);
  EXPECT_EQ(CopyIn("COPY big FROM STDIN", rows(kRows, 2 * kRows, 5)), "ERROR 23505");
  EXPECT_EQ(CopyIn("COPY big FROM STDIN", rows(kRows, 2 * kRows, kRows)), "ERROR 23505");
  ASSERT_EQ(Value("BEGIN"), "");
  EXPECT_EQ(CopyIn("COPY big FROM STDIN", rows(kRows, 2 * kRows, kRows + 1)), "ERROR 23505");
  EXPECT_EQ(Value("SELECT 1"), "ERROR 25P02");
  ASSERT_EQ(Value("ROLLBACK"), "");
  EXPECT_EQ(Value("SELECT count(*) FROM big"), std::to_string(kRows));
  EXPECT_EQ(Value("SELECT sum(id) FROM big"), sum);
  // The keys the failed loads had locked are free again.
  EXPECT_EQ(CopyIn("COPY big FROM STDIN", rows(kRows, kRows + 10, -1)), "10");
}

// Minimal frontend on a raw socket, to drive Execute with a row limit.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    std::string body = Int32(196608) + std::string("user\0wattdb\0\0", 13);
    Send(Int32(static_cast<int32_t>(body.size() + 4)) + body);
    ReadUntilReady();
  }
  ~RawClient() { close(fd_); }
  static std::string Int32(int32_t v) {
    uint32_t n = htonl(static_cast<uint32_t>(v));
    return std::string(reinterpret_cast<char*>(&n), 4);
  }
  static std::string Int16(int16_t v) {
    uint16_t n = htons(static_cast<uint16_t>(v));
    return std::string(reinterpret_cast<char*>(&n), 2);
  }
  void Msg(char type, const std::string& body) {
    Send(std::string(1, type) + Int32(static_cast<int32_t>(body.size() + 4)) + body);
  }
  void Send(const std::string& s) {
    ASSERT_EQ(write(fd_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  // Message types received up to and including ReadyForQuery; the SQLSTATE of each error
  // appended to *states if given.
  std::string ReadUntilReady(std::vector<std::string>* states = nullptr) {
    std::string types;
    while (true) {
      char hdr[5];
      if (!ReadN(hdr, 5)) return types + "!";
      uint32_t len;
      std::memcpy(&len, hdr + 1, 4);
      std::string body(ntohl(len) - 4, '\0');
      if (!ReadN(body.data(), body.size())) return types + "!";
      types += hdr[0];
      if (hdr[0] == 'E' && states) {
        for (size_t at = 0; at < body.size() && body[at] != '\0';) {  // fields: type, text, NUL
          size_t end = body.find('\0', at + 1);
          if (end == std::string::npos) break;
          if (body[at] == 'C') states->push_back(body.substr(at + 1, end - at - 1));
          at = end + 1;
        }
      }
      if (hdr[0] == 'Z') return types;
    }
  }

 private:
  bool ReadN(char* p, size_t n) {
    while (n > 0) {
      ssize_t r = read(fd_, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  int fd_;
};

TEST_F(ExtendedProtocol, ExecuteWithRowLimitSuspendsThePortal) {
  RawClient c(cluster_->pg_port());
  c.Msg('P',
        std::string("q\0SELECT id FROM t WHERE id <= 5 ORDER BY id\0", 46) + RawClient::Int16(0));
  c.Msg('B',
        std::string("p\0q\0", 4) + RawClient::Int16(0) + RawClient::Int16(0) + RawClient::Int16(0));
  c.Msg('D', std::string("Pp\0", 3));
  c.Msg('E', std::string("p\0", 2) + RawClient::Int32(2));
  c.Msg('E', std::string("p\0", 2) + RawClient::Int32(2));
  c.Msg('E', std::string("p\0", 2) + RawClient::Int32(2));
  c.Msg('S', "");
  // ParseComplete, BindComplete, RowDescription, 2 rows + suspended, 2 rows + suspended,
  // the last row + CommandComplete, ReadyForQuery.
  EXPECT_EQ(c.ReadUntilReady(), "12TDDsDDsDCZ");
  // An error skips the rest up to Sync; the session then works again.
  c.Msg('P', std::string("\0SELECT nope FROM t\0", 20) + RawClient::Int16(0));
  c.Msg('B',
        std::string("\0\0", 2) + RawClient::Int16(0) + RawClient::Int16(0) + RawClient::Int16(0));
  c.Msg('E', std::string("\0", 1) + RawClient::Int32(0));
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(), "EZ");
  c.Msg('Q', std::string("SELECT 1\0", 9));
  EXPECT_EQ(c.ReadUntilReady(), "TDCZ");
  // Close and reuse of the statement name.
  c.Msg('C', std::string("Sq\0", 3));
  c.Msg('P', std::string("q\0SELECT 2\0", 11) + RawClient::Int16(0));
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(), "31Z");
}

// A portal bound again runs with its new values; a bind that fails drops the portal it would
// have replaced (as PostgreSQL drops it first), so executing it then finds no portal.
TEST_F(ExtendedProtocol, APortalBoundAgainTakesItsNewValuesAndAFailedBindDropsIt) {
  RawClient c(cluster_->pg_port());
  auto bind = [&](const std::string& value) {
    c.Msg('B', std::string("p\0q\0", 4) + RawClient::Int16(0) + RawClient::Int16(1) +
                   RawClient::Int32(static_cast<int32_t>(value.size())) + value +
                   RawClient::Int16(0));
  };
  auto execute = [&] { c.Msg('E', std::string("p\0", 2) + RawClient::Int32(0)); };
  c.Msg('P', std::string("q\0SELECT id FROM t WHERE id <= $1\0", 34) + RawClient::Int16(0));
  bind("2");
  execute();
  bind("4");
  execute();
  bind("1");
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(), "12DDC2DDDDC2Z");
  std::vector<std::string> states;
  bind("x");  // not an integer
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(&states), "EZ");
  execute();
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(&states), "EZ");
  EXPECT_EQ(states, (std::vector<std::string>{sqlstate::kInvalidTextRepresentation,
                                              sqlstate::kInvalidCursorName}));
  bind("3");
  execute();
  c.Msg('S', "");
  EXPECT_EQ(c.ReadUntilReady(), "2DDDCZ");
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

// Runs prepared statement `name` with text parameters (nullptr = NULL); rows as "a|b" lines.
std::string ExecPrepared(PGconn* c, const char* name, std::vector<const char*> vals) {
  PGresult* r =
      PQexecPrepared(c, name, static_cast<int>(vals.size()), vals.data(), nullptr, nullptr, 0);
  std::string out;
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    out = std::string("ERROR ") + PQresultErrorMessage(r);
  } else {
    for (int i = 0; i < PQntuples(r); i++) {
      for (int j = 0; j < PQnfields(r); j++)
        out += (j ? "|" : "") + std::string(PQgetvalue(r, i, j));
      out += "\n";
    }
  }
  PQclear(r);
  return out;
}

void Prepare(PGconn* c, const char* name, const char* sql) {
  PGresult* r = PQprepare(c, name, sql, 0, nullptr);
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQresultErrorMessage(r);
  PQclear(r);
}

// A prepared SELECT run again reuses its generic plan, filled with each execution's values
// (key ranges pruned per value, across segments on two nodes), and stays right after
// writes, DDL that replaces its table, an index, a planner setting and inside a block.
// Two nodes, small segments, and the master's metrics on `port`.
MiniClusterOptions GenericPlanCluster(int port) {
  MiniClusterOptions o{2, 64 << 10, 300};
  o.extra_toml = fmt::format("[power]\nmetrics_port = {}\n", port);
  return o;
}

// Sample `name` of the master's metrics on `port`; -1 if unreadable.
double Metric(int port, const char* name) {
  int status = 0;
  std::string text = HttpGet(port, "/metrics", &status);
  return status == 0 ? MetricValue(text, name) : -1.0;
}

double GenericPlanExecutions(int port) {
  return Metric(port, "wattdb_generic_plan_executions_total");
}

// g(id, v, s): rows 1..4000 with v = 7 * id and s = 'row' || id.
void CreateG(PgConn& admin) {
  ASSERT_EQ(admin.Exec("CREATE TABLE g (id INT PRIMARY KEY, v INT, s TEXT)"), "");
  ASSERT_EQ(admin.Exec("INSERT INTO g SELECT i, i * 7, 'row' || i FROM generate_series(1, 4000) i"),
            "");
}

TEST(GenericPlans, PreparedSelectsReuseTheirPlanAndStayRight) {
  int port = FreeTcpPort();
  MiniCluster cluster(GenericPlanCluster(port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto admin = cluster.Connect();
  CreateG(*admin);
  PGconn* c = PQconnectdb(cluster.conninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  auto generic = [&] { return GenericPlanExecutions(port); };
  double before = generic();
  ASSERT_GE(before, 0);

  Prepare(c, "by_id", "SELECT v, s FROM g WHERE id = $1");
  int runs = 0;
  for (int id = 1; id <= 4000; id += 37, runs++) {
    std::string ids = std::to_string(id);
    ASSERT_EQ(ExecPrepared(c, "by_id", {ids.c_str()}), fmt::format("{}|row{}\n", id * 7, id))
        << "id " << id;
  }
  EXPECT_EQ(ExecPrepared(c, "by_id", {"0"}), "");
  EXPECT_EQ(ExecPrepared(c, "by_id", {nullptr}), "");  // id = NULL: no row
  runs += 2;
  EXPECT_GE(generic() - before, runs - 2);  // every execution after the first two

  Prepare(c, "range", "SELECT count(*), sum(v) FROM g WHERE id >= $1 AND id < $2");
  for (auto [lo, hi] : {std::pair{1, 4001}, {100, 200}, {3990, 5000}, {50, 50}, {7, 8}}) {
    std::string l = std::to_string(lo), h = std::to_string(hi);
    int n = std::max(0, std::min(hi, 4001) - lo);
    int64_t sum = 0;
    for (int i = lo; i < std::min(hi, 4001); i++) sum += 7 * i;
    EXPECT_EQ(ExecPrepared(c, "range", {l.c_str(), h.c_str()}),
              n ? fmt::format("{}|{}\n", n, sum) : std::string("0|\n"))
        << lo << ".." << hi;
  }

  // Writes are seen (plans hold no data); an index made later is used and right.
  ASSERT_EQ(admin->Exec("UPDATE g SET v = -1 WHERE id = 38"), "");
  EXPECT_EQ(ExecPrepared(c, "by_id", {"38"}), "-1|row38\n");
  ASSERT_EQ(admin->Exec("CREATE INDEX g_v ON g (v)"), "");
  Prepare(c, "by_v", "SELECT id FROM g WHERE v = $1");
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(ExecPrepared(c, "by_v", {"70"}), "10\n");
    EXPECT_EQ(ExecPrepared(c, "by_v", {"-1"}), "38\n");
  }

  // The table dropped and made again: the statement reads the new one.
  ASSERT_EQ(admin->Exec("DROP TABLE g"), "");
  EXPECT_NE(ExecPrepared(c, "by_id", {"5"}).find("ERROR"), std::string::npos);
  ASSERT_EQ(admin->Exec("CREATE TABLE g (id INT PRIMARY KEY, v INT, s TEXT)"), "");
  ASSERT_EQ(admin->Exec("INSERT INTO g VALUES (5, 99, 'new')"), "");
  double mid = generic();
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(ExecPrepared(c, "by_id", {"5"}), "99|new\n");
    EXPECT_EQ(ExecPrepared(c, "by_id", {"6"}), "");
  }
  EXPECT_GE(generic() - mid, 4);  // planned again once, then reused

  // Another planner setting, and a block's own uncommitted row.
  PQclear(PQexec(c, "SET wattdb_pushdown = off"));
  EXPECT_EQ(ExecPrepared(c, "by_id", {"5"}), "99|new\n");
  PQclear(PQexec(c, "BEGIN"));
  PQclear(PQexec(c, "INSERT INTO g VALUES (6, 1, 'mine')"));
  EXPECT_EQ(ExecPrepared(c, "by_id", {"6"}), "1|mine\n");
  PQclear(PQexec(c, "ROLLBACK"));
  EXPECT_EQ(ExecPrepared(c, "by_id", {"6"}), "");
  PQfinish(c);
}

// A prepared SELECT of one key (`k = $n` for each key column) runs its generic plan with the
// values in place: the exchange reads the key's range, and the segment's node (a process of
// its own, or the master's) evaluates $n from the values sent along. Right for every key,
// composite keys, parameters in the output, a transaction's own writes and moved segments;
// a key that is NULL or not of the column's type falls back to the filled plan.
TEST(GenericPlans, PreparedPointReadsRunWithTheirValuesInPlace) {
  int port = FreeTcpPort();
  MiniCluster cluster(GenericPlanCluster(port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto admin = cluster.Connect();
  CreateG(*admin);
  ASSERT_EQ(admin->Exec("CREATE TABLE k (a BIGINT, b TEXT, v INT, PRIMARY KEY (a, b))"), "");
  ASSERT_EQ(
      admin->Exec("INSERT INTO k SELECT i / 3, 'b' || (i % 3), i FROM generate_series(0, 2999) i"),
      "");
  ASSERT_TRUE(cluster.WaitFor(
      "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'g'", "2", 30000))
      << "the table did not spread over both nodes";
  PGconn* c = PQconnectdb(cluster.conninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  auto templated = [&] { return Metric(port, "wattdb_point_read_template_executions_total"); };
  auto rows_read = [&] {
    return std::stoll(admin->Scalar("SELECT coalesce(sum(rows_read), 0) FROM wattdb_segments"));
  };
  double before = templated();
  ASSERT_GE(before, 0);
  // Rows read by the nodes settle once the load's reads were reported.
  long long read0 = rows_read();
  for (int i = 0; i < 20; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    long long now = rows_read();
    if (now == read0) break;
    read0 = now;
  }

  Prepare(c, "by_id", "SELECT v, s FROM g WHERE id = $1");
  int runs = 0;
  for (int id = 1; id <= 4000; id += 7, runs++) {
    std::string ids = std::to_string(id);
    ASSERT_EQ(ExecPrepared(c, "by_id", {ids.c_str()}), fmt::format("{}|row{}\n", id * 7, id))
        << "id " << id;
  }
  EXPECT_GE(templated() - before, runs - 2);
  // Each read read its one row, not the table: the nodes report about `runs` rows.
  long long read1 = read0;
  for (int i = 0; i < 50 && read1 - read0 < runs; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    read1 = rows_read();
  }
  EXPECT_GE(read1 - read0, runs);
  EXPECT_LT(read1 - read0, 4 * runs) << "point reads scanned more than their key";

  double mid = templated();
  EXPECT_EQ(ExecPrepared(c, "by_id", {"0"}), "");
  EXPECT_EQ(ExecPrepared(c, "by_id", {nullptr}), "");  // NULL: the filled plan, no row
  EXPECT_EQ(ExecPrepared(c, "by_id", {"abc"}).substr(0, 6), "ERROR ");
  EXPECT_EQ(templated() - mid, 1);  // only the key 0

  Prepare(c, "shifted", "SELECT v + $2, s || $3 FROM g WHERE id = $1");
  for (int i = 0; i < 4; i++) {
    EXPECT_EQ(ExecPrepared(c, "shifted", {"10", "5", "!"}), "75|row10!\n");
    EXPECT_EQ(ExecPrepared(c, "shifted", {"3999", "-1", ""}), "27992|row3999\n");
  }
  Prepare(c, "pair", "SELECT v FROM k WHERE b = $2 AND a = $1");
  Prepare(c, "half",
          "SELECT count(*), sum(v) FROM k WHERE a = $1");  // part of the key: not one row
  for (int a : {0, 1, 500, 999}) {
    std::string as = std::to_string(a);
    for (int b = 0; b < 3; b++) {
      std::string bs = "b" + std::to_string(b);
      EXPECT_EQ(ExecPrepared(c, "pair", {as.c_str(), bs.c_str()}), fmt::format("{}\n", 3 * a + b))
          << a << " " << bs;
    }
    EXPECT_EQ(ExecPrepared(c, "half", {as.c_str()}), fmt::format("3|{}\n", 9 * a + 3));
  }
  EXPECT_EQ(ExecPrepared(c, "pair", {"1000", "b0"}), "");

  // A transaction reads its own writes; moved segments are found where they went.
  PQclear(PQexec(c, "BEGIN"));
  PQclear(PQexec(c, "UPDATE g SET v = -5 WHERE id = 7"));
  PQclear(PQexec(c, "DELETE FROM g WHERE id = 8"));
  EXPECT_EQ(ExecPrepared(c, "by_id", {"7"}), "-5|row7\n");
  EXPECT_EQ(ExecPrepared(c, "by_id", {"8"}), "");
  PQclear(PQexec(c, "ROLLBACK"));
  EXPECT_EQ(ExecPrepared(c, "by_id", {"7"}), "49|row7\n");
  EXPECT_EQ(ExecPrepared(c, "by_id", {"8"}), "56|row8\n");
  std::vector<std::vector<std::string>> segs;
  ASSERT_EQ(
      admin->Exec("SELECT segment_id, node_id FROM wattdb_segments WHERE table_name = 'g'", &segs),
      "");
  for (const auto& seg : segs) {
    std::string msg;
    ASSERT_EQ(admin->Exec(fmt::format("ALTER TABLE g MOVE SEGMENT {} TO NODE {}", seg[0],
                                      seg[1] == "1" ? 2 : 1),
                          nullptr, &msg),
              "")
        << msg;
  }
  for (int id = 3; id <= 4000; id += 211) {
    std::string ids = std::to_string(id);
    ASSERT_EQ(ExecPrepared(c, "by_id", {ids.c_str()}), fmt::format("{}|row{}\n", id * 7, id))
        << "id " << id;
  }
  PQfinish(c);
}

// Prepared BEGIN, COMMIT and ROLLBACK run again and again keep what they say (parsed once):
// the isolation level BEGIN names, and the outcome each ends with.
TEST_F(ExtendedProtocol, PreparedTransactionControlKeepsItsMeaning) {
  Prepare(conn_, "begin_rr", "BEGIN ISOLATION LEVEL REPEATABLE READ");
  Prepare(conn_, "commit", "COMMIT");
  Prepare(conn_, "rollback", "ROLLBACK");
  Prepare(conn_, "count", "SELECT count(*) FROM t WHERE id >= 1000");
  auto run = [&](const char* name) {
    PGresult* r = PQexecPrepared(conn_, name, 0, nullptr, nullptr, nullptr, 0);
    std::string tag =
        PQresultStatus(r) == PGRES_COMMAND_OK ? PQcmdStatus(r) : PQresultErrorMessage(r);
    PQclear(r);
    return tag;
  };
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(run("begin_rr"), "BEGIN");
    EXPECT_EQ(Value("SHOW transaction_isolation"), "repeatable read");
    ASSERT_EQ(Value(fmt::format("INSERT INTO t (id, name) VALUES ({}, 'gone')", 1000 + i).c_str()),
              "");
    ASSERT_EQ(run("rollback"), "ROLLBACK");
    EXPECT_EQ(ExecPrepared(conn_, "count", {}), "0\n");
  }
  EXPECT_EQ(Value("SHOW transaction_isolation"), "read committed");
  for (int i = 0; i < 3; i++) {
    ASSERT_EQ(run("begin_rr"), "BEGIN");
    ASSERT_EQ(Value(fmt::format("INSERT INTO t (id, name) VALUES ({}, 'kept')", 2000 + i).c_str()),
              "");
    ASSERT_EQ(run("commit"), "COMMIT");
    EXPECT_EQ(ExecPrepared(conn_, "count", {}), fmt::format("{}\n", i + 1));
    EXPECT_EQ(Value("SHOW transaction_isolation"), "read committed");
  }
}

}  // namespace
}  // namespace wattdb::testing

namespace wattdb::testing {
namespace {

// Runs prepared statement `name` (a write) with text parameters; its command tag, or the
// error's SQLSTATE as "ERROR <code>".
std::string WritePrepared(PGconn* c, const char* name, std::vector<const char*> vals) {
  PGresult* r =
      PQexecPrepared(c, name, static_cast<int>(vals.size()), vals.data(), nullptr, nullptr, 0);
  const char* code = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  std::string out = PQresultStatus(r) == PGRES_COMMAND_OK
                        ? std::string(PQcmdStatus(r))
                        : std::string("ERROR ") + (code ? code : "?");
  PQclear(r);
  return out;
}

// Prepared INSERTs, UPDATEs and DELETEs reuse their generic plans too: by key (on the row's
// node) and by range, across segments on two nodes; now() is each execution's own time; NOT
// NULL and missing rows answer as before; a block's rollback undoes them; a view's INSERT
// is rewritten once; DDL that replaces the table plans them again.
TEST(GenericPlans, PreparedWritesReuseTheirPlanAndStayRight) {
  int port = FreeTcpPort();
  MiniCluster cluster(GenericPlanCluster(port));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto admin = cluster.Connect();
  ASSERT_EQ(
      admin->Exec("CREATE TABLE w (id INT PRIMARY KEY, v INT NOT NULL, s TEXT, at TIMESTAMP)"), "");
  PGconn* c = PQconnectdb(cluster.conninfo().c_str());
  ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
  auto generic = [&] { return GenericPlanExecutions(port); };
  double before = generic();
  ASSERT_GE(before, 0);

  Prepare(c, "ins", "INSERT INTO w VALUES ($1, $2, $3, now())");
  for (int id = 1; id <= 300; id++) {
    std::string ids = std::to_string(id), v = std::to_string(id * 3), s = "s" + ids;
    ASSERT_EQ(WritePrepared(c, "ins", {ids.c_str(), v.c_str(), s.c_str()}), "INSERT 0 1") << id;
  }
  EXPECT_GE(generic() - before, 298);
  EXPECT_EQ(WritePrepared(c, "ins", {"7", "1", "dup"}), "ERROR 23505");
  EXPECT_EQ(WritePrepared(c, "ins", {"301", nullptr, "x"}), "ERROR 23502");
  EXPECT_EQ(admin->Scalar("SELECT count(*) || ' ' || sum(v) FROM w"), "300 135450");
  // Every execution read the clock: the times differ and rise with the key.
  EXPECT_GT(std::stoi(admin->Scalar("SELECT count(DISTINCT at) FROM w")), 250);
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w a JOIN w b ON b.id = a.id + 1 WHERE b.at < a.at"),
            "0");
  Prepare(c, "seen", "SELECT count(*) FROM w WHERE at <= now()");
  for (int i = 0; i < 3; i++) EXPECT_EQ(ExecPrepared(c, "seen", {}), "300\n");
  ASSERT_EQ(WritePrepared(c, "ins", {"301", "0", "late"}), "INSERT 0 1");
  EXPECT_EQ(ExecPrepared(c, "seen", {}), "301\n");

  double mid = generic();
  Prepare(c, "add", "UPDATE w SET v = v + $2 WHERE id = $1");
  for (int id = 1; id <= 300; id++) {
    std::string ids = std::to_string(id), d = std::to_string(id);
    ASSERT_EQ(WritePrepared(c, "add", {ids.c_str(), d.c_str()}), "UPDATE 1") << id;
  }
  EXPECT_EQ(WritePrepared(c, "add", {"999", "1"}), "UPDATE 0");
  EXPECT_GE(generic() - mid, 299);
  EXPECT_EQ(WritePrepared(c, "add", {nullptr, "1"}), "UPDATE 0");  // a NULL key: no row
  EXPECT_GE(Metric(port, "wattdb_key_write_template_executions_total"), 299)
      << "a prepared UPDATE by key sends its node its values, not a plan per execution";
  Prepare(c, "set", "UPDATE w SET v = $2 WHERE id = $1");
  for (int i = 0; i < 3; i++) EXPECT_EQ(WritePrepared(c, "set", {"5", nullptr}), "ERROR 23502");
  // Parameters in the node's filter and new row; now() is not sent to nodes (the master's path).
  Prepare(c, "tag", "UPDATE w SET s = s || $3 WHERE id = $1 AND v > $2");
  EXPECT_EQ(WritePrepared(c, "tag", {"20", "1000", "!"}), "UPDATE 0");  // v = 80
  for (int i = 0; i < 3; i++) EXPECT_EQ(WritePrepared(c, "tag", {"20", "79", "!"}), "UPDATE 1");
  EXPECT_EQ(WritePrepared(c, "tag", {"20", "80", "?"}), "UPDATE 0");
  EXPECT_EQ(admin->Scalar("SELECT s FROM w WHERE id = 20"), "s20!!!");
  Prepare(c, "touch", "UPDATE w SET at = now(), v = v + $2 WHERE id = $1");
  for (int i = 0; i < 3; i++) EXPECT_EQ(WritePrepared(c, "touch", {"21", "0"}), "UPDATE 1");
  EXPECT_EQ(admin->Scalar(
                "SELECT count(*) FROM w WHERE id = 21 AND at > (SELECT at FROM w WHERE id = 22)"),
            "1");
  Prepare(c, "label", "UPDATE w SET s = $1 WHERE id >= $2 AND id < $3");
  EXPECT_EQ(WritePrepared(c, "label", {"a", "1", "101"}), "UPDATE 100");
  EXPECT_EQ(WritePrepared(c, "label", {"b", "101", "151"}), "UPDATE 50");
  EXPECT_EQ(WritePrepared(c, "label", {"c", "290", "400"}), "UPDATE 12");
  EXPECT_EQ(admin->Scalar("SELECT sum(v) FROM w"), "180600");
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w WHERE s = 'a'"), "100");
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w WHERE s = 'b'"), "50");
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w WHERE s = 'c'"), "12");

  // A block's prepared writes roll back with it.
  PQclear(PQexec(c, "BEGIN"));
  for (int i = 0; i < 3; i++) EXPECT_EQ(WritePrepared(c, "add", {"10", "1000"}), "UPDATE 1");
  PQclear(PQexec(c, "ROLLBACK"));
  EXPECT_EQ(admin->Scalar("SELECT v FROM w WHERE id = 10"), "40");

  Prepare(c, "del", "DELETE FROM w WHERE id = $1");
  for (int id = 1; id <= 300; id += 2) {
    std::string ids = std::to_string(id);
    ASSERT_EQ(WritePrepared(c, "del", {ids.c_str()}), "DELETE 1") << id;
  }
  EXPECT_EQ(WritePrepared(c, "del", {"1"}), "DELETE 0");
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w"), "151");
  Prepare(c, "delif", "DELETE FROM w WHERE id = $1 AND s = $2");
  EXPECT_EQ(WritePrepared(c, "delif", {"2", "nope"}), "DELETE 0");
  EXPECT_EQ(WritePrepared(c, "delif", {"2", "a"}), "DELETE 1");
  EXPECT_EQ(WritePrepared(c, "delif", {"4", "a"}), "DELETE 1");
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w"), "149");

  ASSERT_EQ(admin->Exec("CREATE VIEW wv AS SELECT id, v, s FROM w"), "");
  Prepare(c, "vins", "INSERT INTO wv VALUES ($1, $2, 'view')");
  for (int id = 1001; id <= 1004; id++) {
    std::string ids = std::to_string(id);
    EXPECT_EQ(WritePrepared(c, "vins", {ids.c_str(), "1"}), "INSERT 0 1");
  }
  EXPECT_EQ(admin->Scalar("SELECT count(*) FROM w WHERE s = 'view'"), "4");

  // Expressions over the values in several rows; a key twice in one statement; a subquery.
  Prepare(c, "ins2",
          "INSERT INTO w (id, v, s) VALUES ($1, $2 * 2, $3 || '!'), ($1 + 1, -$2, upper($3))");
  for (int i = 0; i < 4; i++) {
    std::string ids = std::to_string(2001 + 2 * i), v = std::to_string(i + 1),
                s = "x" + std::to_string(i);
    EXPECT_EQ(WritePrepared(c, "ins2", {ids.c_str(), v.c_str(), s.c_str()}), "INSERT 0 2") << i;
  }
  EXPECT_EQ(admin->Scalar("SELECT count(*) || ' ' || sum(v) FROM w WHERE id > 2000"), "8 10");
  EXPECT_EQ(admin->Scalar("SELECT s FROM w WHERE id = 2007"), "x3!");
  EXPECT_EQ(admin->Scalar("SELECT s || v FROM w WHERE id = 2008"), "X3-4");
  Prepare(c, "pair", "INSERT INTO w (id, v) VALUES ($1, 1), ($2, 2)");
  for (int i = 0; i < 3; i++) EXPECT_EQ(WritePrepared(c, "pair", {"3000", "3000"}), "ERROR 23505");
  EXPECT_EQ(WritePrepared(c, "pair", {"3000", "3001"}), "INSERT 0 2");
  Prepare(c, "insq", "INSERT INTO w (id, v, s) VALUES ($1, (SELECT max(v) FROM w) + $2, 'q')");
  for (int id = 4001; id <= 4004; id++) {
    std::string ids = std::to_string(id);
    EXPECT_EQ(WritePrepared(c, "insq", {ids.c_str(), "1"}), "INSERT 0 1");
  }
  EXPECT_EQ(
      admin->Scalar(
          "SELECT count(*) FROM w a JOIN w b ON b.id = a.id + 1 WHERE a.s = 'q' AND b.v = a.v + 1"),
      "3");

  // The table replaced by one with another column: planned again against the new one.
  ASSERT_EQ(admin->Exec("DROP VIEW wv"), "");
  ASSERT_EQ(admin->Exec("DROP TABLE w"), "");
  ASSERT_EQ(admin->Exec("CREATE TABLE w (id INT PRIMARY KEY, v INT NOT NULL, s TEXT, at TIMESTAMP, "
                        "n INT DEFAULT 42)"),
            "");
  double again = generic();
  for (int id = 1; id <= 4; id++) {
    std::string ids = std::to_string(id);
    EXPECT_EQ(WritePrepared(c, "ins", {ids.c_str(), "5", "new"}), "INSERT 0 1");
  }
  EXPECT_GE(generic() - again, 2);
  EXPECT_EQ(admin->Scalar("SELECT count(*) || ' ' || sum(n) FROM w WHERE s = 'new'"), "4 168");
  PQfinish(c);
}

}  // namespace
}  // namespace wattdb::testing
