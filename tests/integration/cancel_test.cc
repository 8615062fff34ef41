// CancelRequest: BackendKeyData identifies a session; a cancel with its key stops the running
// statement with 57014 and leaves the connection usable; a cancel with an unknown key changes
// nothing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

// Sends a raw CancelRequest for (pid, secret) to the master.
void SendCancel(int port, int32_t pid, int32_t secret) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  int32_t msg[4] = {static_cast<int32_t>(htonl(16)), static_cast<int32_t>(htonl(80877102)),
                    static_cast<int32_t>(htonl(static_cast<uint32_t>(pid))),
                    static_cast<int32_t>(htonl(static_cast<uint32_t>(secret)))};
  ASSERT_EQ(write(fd, msg, sizeof(msg)), static_cast<ssize_t>(sizeof(msg)));
  char b;
  (void)read(fd, &b, 1);  // the server closes the connection
  close(fd);
}

TEST(Cancel, StopsALongQueryAndIgnoresUnknownKeys) {
  MiniCluster cluster(MiniClusterOptions{2, 64 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto setup = cluster.Connect();
  ASSERT_EQ(setup->Exec("CREATE TABLE n (k INT PRIMARY KEY)"), "");
  std::string values;
  for (int i = 0; i < 1000; i++) values += (i ? ",(" : "(") + std::to_string(i) + ")";
  ASSERT_EQ(setup->Exec("INSERT INTO n VALUES " + values), "");

  PGconn* conn = PQconnectdb(cluster.conninfo().c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  int pid = PQbackendPID(conn);
  EXPECT_GT(pid, 0);
  // A wrong secret for this session, and an unknown session: both ignored.
  SendCancel(cluster.pg_port(), pid, 12345);
  SendCancel(cluster.pg_port(), 999999, 1);
  PGresult* ok = PQexec(conn, "SELECT count(*) FROM n");
  EXPECT_EQ(PQresultStatus(ok), PGRES_TUPLES_OK) << PQresultErrorMessage(ok);
  PQclear(ok);

  // A billion-row cross join runs far longer than the test; cancel it.
  ASSERT_EQ(PQsendQuery(conn, "SELECT count(*) FROM n a, n b, n c"), 1);
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  PGcancel* cancel = PQgetCancel(conn);
  char err[256];
  ASSERT_EQ(PQcancel(cancel, err, sizeof(err)), 1) << err;
  PQfreeCancel(cancel);
  PGresult* r = PQgetResult(conn);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(PQresultStatus(r), PGRES_FATAL_ERROR);
  const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  EXPECT_STREQ(state ? state : "", sqlstate::kQueryCanceled);
  PQclear(r);
  while ((r = PQgetResult(conn)) != nullptr) PQclear(r);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));

  // The session goes on.
  r = PQexec(conn, "SELECT count(*) FROM n WHERE k < 10");
  ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
  EXPECT_STREQ(PQgetvalue(r, 0, 0), "10");
  PQclear(r);
  PQfinish(conn);
}

// A node aggregating a whole segment sends nothing until it is done; a cancelled statement
// (here by statement_timeout) stops waiting for it at once and closes the stream, instead of
// sitting out the node's work, and the node stops that work.
TEST(Cancel, DoesNotWaitForANodeThatIsStillAggregating) {
  MiniCluster cluster(MiniClusterOptions{1, 256 << 20, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE w (k INT PRIMARY KEY, pad TEXT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO w SELECT g, repeat('x', 1000) FROM generate_series(1, 20000) g"),
            "");
  ASSERT_EQ(c->Scalar("SELECT count(*) FROM wattdb_segments WHERE table_name = 'w'"), "1");
  // About 20 GB of string building on the node, in one partial aggregate: many seconds.
  const std::string slow = "SELECT sum(length(repeat(pad, 1000))) FROM w";
  std::vector<std::vector<std::string>> plan;
  ASSERT_EQ(c->Exec("EXPLAIN " + slow, &plan), "");
  std::string text;
  for (auto& r : plan) text += r[0] + "\n";
  ASSERT_NE(text.find("PartialAggregate"), std::string::npos) << text;
  ASSERT_EQ(c->Exec("SET statement_timeout = 300"), "");
  auto start = std::chrono::steady_clock::now();
  std::string msg;
  EXPECT_EQ(c->Exec(slow, nullptr, &msg), sqlstate::kQueryCanceled) << msg;
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 3.0) << "the statement waited for the node's aggregate";
  // The node notices the closed stream between batches and stops its aggregate too: its CPU
  // falls back within a few telemetry intervals, not after the many seconds of the work.
  EXPECT_TRUE(
      cluster.WaitFor("SELECT cpu_percent < 30 FROM wattdb_nodes WHERE node_id = 1", "t", 4000))
      << "the node went on aggregating for a statement that was gone";
  ASSERT_EQ(c->Exec("SET statement_timeout = 0"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM w WHERE k <= 10"),
            "10");  // the session and the node go on
}

}  // namespace
}  // namespace wattdb::testing
