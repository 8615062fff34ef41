// Password authentication through libpq: SCRAM-SHA-256 and md5, users from the config and
// from CREATE USER, wrong and missing passwords, and trust for loopback when configured.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

std::string Conn(const MiniCluster& c, const std::string& user, const std::string& password) {
  return fmt::format(
      "host=127.0.0.1 port={} user={} dbname=wattdb sslmode=disable connect_timeout=10{}",
      c.pg_port(), user, password.empty() ? "" : " password=" + password);
}

MiniClusterOptions Options(const std::string& method) {
  MiniClusterOptions o{1, 64 << 10, 300};
  o.extra_toml = fmt::format(
      "[auth]\nmethod = \"{}\"\ntrust_loopback = false\n"
      "[[auth.user]]\nname = \"wattdb\"\npassword = \"s3cret-pass\"\n",
      method);
  o.password = "s3cret-pass";
  return o;
}

void ExpectAuthCycle(const MiniCluster& cluster) {
  PgConn good(Conn(cluster, "wattdb", "s3cret-pass"));
  ASSERT_TRUE(good.ok()) << good.error();
  EXPECT_EQ(good.Scalar("SELECT 1 + 1"), "2");

  PgConn wrong(Conn(cluster, "wattdb", "nope"));
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().find("password authentication failed for user \"wattdb\""),
            std::string::npos)
      << wrong.error();
  PgConn unknown(Conn(cluster, "mallory", "nope"));
  EXPECT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("password authentication failed"), std::string::npos)
      << unknown.error();
  PgConn missing(Conn(cluster, "wattdb", ""));
  EXPECT_FALSE(missing.ok());

  // Users made with SQL authenticate too, and ALTER USER changes the password.
  ASSERT_EQ(good.Exec("CREATE USER alice WITH PASSWORD 'wonder'"), "");
  EXPECT_EQ(good.Exec("CREATE USER alice"), sqlstate::kDuplicateObject);
  PgConn alice(Conn(cluster, "alice", "wonder"));
  ASSERT_TRUE(alice.ok()) << alice.error();
  ASSERT_EQ(good.Exec("ALTER USER alice PASSWORD 'land'"), "");
  EXPECT_FALSE(PgConn(Conn(cluster, "alice", "wonder")).ok());
  EXPECT_TRUE(PgConn(Conn(cluster, "alice", "land")).ok());
  ASSERT_EQ(good.Exec("DROP USER alice"), "");
  EXPECT_FALSE(PgConn(Conn(cluster, "alice", "land")).ok());
  EXPECT_EQ(good.Exec("DROP USER alice"), sqlstate::kUndefinedObject);
  EXPECT_EQ(good.Exec("DROP USER IF EXISTS alice"), "");
}

TEST(Auth, ScramSha256) {
  MiniCluster cluster(Options("scram-sha-256"));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  ExpectAuthCycle(cluster);
  // Users made by SQL survive a master restart (their verifiers are in the catalog).
  {
    PgConn c(Conn(cluster, "wattdb", "s3cret-pass"));
    ASSERT_EQ(c.Exec("CREATE USER bob PASSWORD 'builder'"), "");
  }
  cluster.StopMaster();
  ASSERT_TRUE(cluster.StartMaster());
  PgConn bob(Conn(cluster, "bob", "builder"));
  EXPECT_TRUE(bob.ok()) << bob.error();
}

TEST(Auth, Md5) {
  MiniCluster cluster(Options("md5"));
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  ExpectAuthCycle(cluster);
}

}  // namespace
}  // namespace wattdb::testing
