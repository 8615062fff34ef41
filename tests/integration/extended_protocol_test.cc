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
#include "tests/integration/prepared_util.h"

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
