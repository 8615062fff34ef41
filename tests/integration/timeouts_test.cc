// Session limits and timeouts at the master's SQL port, as PostgreSQL has them:
// statement_timeout (57014), idle_in_transaction_session_timeout (25P03), an
// authentication timeout, and max_connections (53300).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

MiniClusterOptions Options() {
  MiniClusterOptions o;
  o.nodes = 1;
  o.master_toml = "max_connections = 4\nauthentication_timeout_ms = 500\n";
  return o;
}

TEST(Timeouts, StatementTimeoutCancelsALongStatement) {
  MiniCluster cluster(Options());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  EXPECT_EQ(c->Scalar("SHOW statement_timeout"), "0");
  std::string msg;
  EXPECT_EQ(c->Exec("SET statement_timeout = 'soon'", nullptr, &msg),
            sqlstate::kInvalidParameterValue)
      << msg;
  ASSERT_EQ(c->Exec("SET statement_timeout = '300ms'"), "");
  auto t0 = Clock::now();
  EXPECT_EQ(c->Exec("SELECT count(*) FROM generate_series(1, 200000000)", nullptr, &msg),
            sqlstate::kQueryCanceled);
  EXPECT_NE(msg.find("statement timeout"), std::string::npos) << msg;
  EXPECT_LT(SecondsSince(t0), 5.0);
  // Short statements are unaffected; the session goes on; DEFAULT turns it off.
  EXPECT_EQ(c->Scalar("SELECT 1"), "1");
  ASSERT_EQ(c->Exec("SET statement_timeout = DEFAULT"), "");
  EXPECT_EQ(c->Scalar("SELECT count(*) FROM generate_series(1, 100000)"), "100000");
}

TEST(Timeouts, IdleInTransactionEndsTheSessionAndReleasesItsLocks) {
  MiniCluster cluster(Options());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto c = cluster.Connect();
  ASSERT_EQ(c->Exec("CREATE TABLE t (id INT PRIMARY KEY, v INT)"), "");
  ASSERT_EQ(c->Exec("INSERT INTO t VALUES (1, 0)"), "");
  auto idle = cluster.Connect();
  ASSERT_EQ(idle->Exec("SET idle_in_transaction_session_timeout = 400"), "");
  ASSERT_EQ(idle->Exec("BEGIN"), "");
  ASSERT_EQ(idle->Exec("UPDATE t SET v = 1 WHERE id = 1"), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  std::string msg;
  EXPECT_NE(idle->Exec("SELECT 1", nullptr, &msg), "") << "the idle session survived";
  // Its transaction was rolled back and its row lock released.
  ASSERT_EQ(c->Exec("UPDATE t SET v = 2 WHERE id = 1", nullptr, &msg), "") << msg;
  EXPECT_EQ(c->Scalar("SELECT v FROM t WHERE id = 1"), "2");
  // Idle outside a transaction is fine.
  auto quiet = cluster.Connect();
  ASSERT_EQ(quiet->Exec("SET idle_in_transaction_session_timeout = 100"), "");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(quiet->Scalar("SELECT 1"), "1");
}

TEST(Timeouts, SilentClientIsDroppedAndConnectionsAreCapped) {
  MiniCluster cluster(Options());
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  // A client that connects and never completes startup is dropped after
  // authentication_timeout_ms.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(cluster.pg_port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  auto t0 = Clock::now();
  std::string got;
  while (SecondsSince(t0) < 10) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 1000) != 1) continue;
    char buf[256];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;  // closed by the server
    got.append(buf, static_cast<size_t>(n));
  }
  double waited = SecondsSince(t0);
  EXPECT_GE(waited, 0.4);
  EXPECT_LT(waited, 5.0) << "the silent connection was not closed";
  close(fd);
  // max_connections = 4: the fifth session is refused with 53300, the others work.
  std::vector<std::unique_ptr<PgConn>> conns;
  for (int i = 0; i < 4; i++) {
    conns.push_back(cluster.Connect());
    ASSERT_TRUE(conns.back()->ok()) << conns.back()->error();
  }
  PgConn fifth(cluster.conninfo());
  EXPECT_FALSE(fifth.ok());
  EXPECT_NE(fifth.error().find("too many clients"), std::string::npos) << fifth.error();
  conns.pop_back();
  std::unique_ptr<PgConn> again;
  for (int i = 0; i < 50; i++) {  // the closed session ends asynchronously
    again = cluster.Connect();
    if (again->ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(again->ok());
  EXPECT_EQ(conns[0]->Scalar("SELECT 1"), "1");
}

}  // namespace
}  // namespace wattdb::testing
