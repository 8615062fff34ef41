// Real PostgreSQL clients, unmodified, against a real cluster: pgbench (initialization with its
// default steps, the built-in TPC-B-like and select-only scripts, and a custom script, in all
// three query modes) and psycopg2. After each run the database must be consistent: TPC-B-like
// transactions add the same delta to an account, a teller, a branch and the history, so the
// four sums agree exactly when every transaction was atomic.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/sqlstate.h"
#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

const char* kPgbench = "/usr/lib/postgresql/15/bin/pgbench";

std::string Pgbench(const MiniCluster& c, const std::string& args) {
  return fmt::format("PGSSLMODE=disable {} -h 127.0.0.1 -p {} -U wattdb {} wattdb", kPgbench,
                     c.pg_port(), args);
}

// The number of transactions pgbench reports as processed.
long Processed(const std::string& out) {
  std::smatch m;
  std::regex re("number of transactions actually processed: ([0-9]+)");
  return std::regex_search(out, m, re) ? std::stol(m[1]) : -1;
}

void ExpectConsistent(PgConn& conn) {
  std::string a = conn.Scalar("SELECT sum(abalance) FROM pgbench_accounts");
  EXPECT_EQ(conn.Scalar("SELECT sum(bbalance) FROM pgbench_branches"), a);
  EXPECT_EQ(conn.Scalar("SELECT sum(tbalance) FROM pgbench_tellers"), a);
  std::string h = conn.Scalar("SELECT coalesce(sum(delta), 0) FROM pgbench_history");
  EXPECT_EQ(h, a == "NULL" ? "0" : a);
}

TEST(Clients, PgbenchInitAndBuiltinScripts) {
  ASSERT_TRUE(std::filesystem::exists(kPgbench))
      << "install postgresql-15 (scripts/install-deps.sh)";
  MiniCluster cluster(MiniClusterOptions{3, 256 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string out;
  // Default steps dtgvp: drop, create (CHAR(n), TIMESTAMP, fillfactor), COPY in a
  // transaction, VACUUM ANALYZE, ALTER TABLE ADD PRIMARY KEY.
  ASSERT_EQ(RunCommand(Pgbench(cluster, "-i -s 2"), &out), 0) << out;
  auto conn = cluster.Connect();
  EXPECT_EQ(conn->Scalar("SELECT count(*) FROM pgbench_accounts"), "200000");
  EXPECT_EQ(conn->Scalar("SELECT count(*) FROM pgbench_tellers"), "20");
  EXPECT_EQ(
      conn->Scalar("SELECT primary_key FROM wattdb_tables WHERE table_name = 'pgbench_accounts'"),
      "aid");
  // The re-keyed accounts table spans several segments (maintenance splits it right after
  // the load), and a key lookup prunes to one.
  EXPECT_TRUE(cluster.WaitFor(
      "SELECT count(*) > 1 FROM wattdb_segments WHERE table_name = 'pgbench_accounts'", "t",
      30000));
  ASSERT_EQ(conn->Exec("INSERT INTO pgbench_accounts VALUES (1, 1, 0, '')"),
            sqlstate::kUniqueViolation);

  for (const char* mode : {"simple", "extended", "prepared"}) {
    // Two branches: clients conflict sometimes; pgbench retries serialization failures.
    ASSERT_EQ(RunCommand(Pgbench(cluster,
                                 fmt::format("-n -c 3 -t 40 --max-tries=100 --verbose-errors -M {}",
                                             mode)),
                         &out),
              0)
        << out;
    EXPECT_EQ(Processed(out), 120) << out;
    ExpectConsistent(*conn);
    ASSERT_EQ(RunCommand(Pgbench(cluster, fmt::format("-n -S -c 2 -t 200 -M {}", mode)), &out), 0)
        << out;
    EXPECT_EQ(Processed(out), 400) << out;
  }
  EXPECT_EQ(conn->Scalar("SELECT count(*) FROM pgbench_history"), "360");

  // A custom script with \set variables, in every mode.
  std::string script = cluster.dir() + "/custom.sql";
  std::ofstream(script)
      << "\\set aid random(1, 200000)\n\\set delta random(-100, 100)\n"
         "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n"
         "UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :aid;\n"
         "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n";
  std::string before = conn->Scalar("SELECT sum(abalance) FROM pgbench_accounts");
  for (const char* mode : {"simple", "extended", "prepared"}) {
    ASSERT_EQ(
        RunCommand(Pgbench(cluster, fmt::format("-n -c 2 -t 50 -M {} -f {}", mode, script)), &out),
        0)
        << out;
    EXPECT_EQ(Processed(out), 100) << out;
  }
  EXPECT_EQ(conn->Scalar("SELECT sum(abalance) FROM pgbench_accounts"), before);

  // Server-side data generation (-I G: INSERT ... SELECT ... FROM generate_series).
  ASSERT_EQ(RunCommand(Pgbench(cluster, "-i -I dtGvp -s 1"), &out), 0) << out;
  EXPECT_EQ(conn->Scalar("SELECT count(*) FROM pgbench_accounts"), "100000");
  EXPECT_EQ(conn->Scalar("SELECT count(DISTINCT bid) FROM pgbench_tellers"), "1");
}

// The TPC-C driver (benchmarks/tpcc/tpcc.py, psycopg2) on a 3-node cluster whose 1 MiB segments
// spread the 1-warehouse database over all nodes: the five transactions run from four
// clients with 40001 retries, and the specification's consistency conditions 1-4 must hold
// after loading and after the run (the driver exits non-zero otherwise).
TEST(Clients, TpccOneWarehouseStaysConsistent) {
  MiniCluster cluster(MiniClusterOptions{3, 1 << 20, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string out;
  int rc = RunCommand(
      fmt::format(
          "/usr/bin/python3 {}/benchmarks/tpcc/tpcc.py --port {} --clients 4 --transactions 200",
          WATTDB_SOURCE_DIR, cluster.pg_port()),
      &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("consistency conditions 1-4: hold"), std::string::npos) << out;
  std::printf("%s", out.c_str());
  auto conn = cluster.Connect();
  EXPECT_EQ(conn->Scalar(
                "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'stock'"),
            "3");
}

// sysbench's pgsql driver with its defaults: SERIAL ids and the secondary index on k, over
// three nodes with small segments. oltp_read_write deletes and re-inserts rows, so the row
// count stays; a range over the index must find exactly the rows a full scan finds.
TEST(Clients, SysbenchOltpReadWrite) {
  MiniCluster cluster(MiniClusterOptions{3, 256 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string sb = fmt::format(
      "sysbench oltp_read_write --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port={} "
      "--pgsql-user=wattdb --pgsql-db=wattdb --tables=2 --table-size=5000",
      cluster.pg_port());
  std::string out;
  ASSERT_EQ(RunCommand(sb + " prepare", &out), 0) << out;
  EXPECT_NE(out.find("Creating a secondary index"), std::string::npos) << out;
  ASSERT_EQ(RunCommand(sb + " --threads=3 --events=300 --time=0 run", &out), 0) << out;
  EXPECT_NE(out.find("transactions:                        300"), std::string::npos) << out;
  auto conn = cluster.Connect();
  for (const char* t : {"sbtest1", "sbtest2"}) {
    EXPECT_EQ(conn->Scalar(fmt::format("SELECT count(*) FROM {}", t)), "5000");
    EXPECT_EQ(conn->Scalar(fmt::format(
                  "SELECT count(*) FROM {} WHERE k BETWEEN -2147483648 AND 2147483647", t)),
              "5000");
    EXPECT_EQ(conn->Scalar(fmt::format("SELECT max(id) FROM {}", t)), "5000");
  }
  EXPECT_GT(
      std::stoi(conn->Scalar(
          "SELECT count(DISTINCT node_id) FROM wattdb_segments WHERE table_name = 'sbtest1'")),
      1);
}

TEST(Clients, Psql) {
  MiniCluster cluster(MiniClusterOptions{2, 4 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string csv = cluster.dir() + "/in.csv";
  std::ofstream(csv) << "1,one\n2,two\n3,\"three, with comma\"\n";
  std::string script = cluster.dir() + "/script.sql";
  std::ofstream(script) << "\\set ON_ERROR_STOP on\n"
                           "CREATE TABLE p (id INT PRIMARY KEY, name TEXT);\n"
                           "\\copy p FROM '"
                        << csv
                        << "' WITH (FORMAT csv)\n"
                           "SELECT id, name FROM p ORDER BY id;\n"
                           "\\copy (SELECT 1) TO STDOUT\n";
  std::string out;
  int rc = RunCommand(fmt::format("psql -X -A -t -h 127.0.0.1 -p {} -U wattdb -d wattdb -f {}",
                                  cluster.pg_port(), script),
                      &out);
  // \copy (query) TO needs COPY (query), which is not supported: psql stops there (exit 3).
  EXPECT_EQ(rc, 3) << out;
  EXPECT_NE(out.find("COPY 3"), std::string::npos) << out;
  EXPECT_NE(out.find("1|one\n2|two\n3|three, with comma"), std::string::npos) << out;
  EXPECT_NE(out.find("COPY (query) TO is not supported"), std::string::npos) << out;
  ASSERT_EQ(
      RunCommand(
          fmt::format(
              "psql -X -A -t -h 127.0.0.1 -p {} -U wattdb -d wattdb -c 'SELECT count(*) FROM p'",
              cluster.pg_port()),
          &out),
      0)
      << out;
  EXPECT_EQ(out, "3\n");
}

// psql's describe commands (\dt, \d, \d+, \di, \dv, \dn) read pg_catalog; their output must
// be what PostgreSQL 15 prints for the same schema (psql_describe.expected was produced by it).
TEST(Clients, PsqlDescribeMatchesPostgres) {
  MiniCluster cluster(MiniClusterOptions{3, 4 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string out;
  ASSERT_EQ(RunCommand(fmt::format("psql -X -h 127.0.0.1 -p {} -U wattdb -d wattdb -f "
                                   "{}/tests/integration/psql_describe.sql",
                                   cluster.pg_port(), WATTDB_SOURCE_DIR),
                       &out),
            0)
      << out;
  std::ifstream in(std::string(WATTDB_SOURCE_DIR) + "/tests/integration/psql_describe.expected");
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(out, expected.str());
}

TEST(Clients, Psycopg2) {
  MiniCluster cluster(MiniClusterOptions{3, 4 << 10, 300});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string py = cluster.dir() + "/client.py";
  std::ofstream(py) << R"PY(import sys, psycopg2
conn = psycopg2.connect(host="127.0.0.1", port=int(sys.argv[1]), user="wattdb", dbname="wattdb", sslmode="disable")
cur = conn.cursor()
cur.execute("CREATE TABLE kv (k INT PRIMARY KEY, v TEXT, at TIMESTAMP)")
conn.commit()
cur.executemany("INSERT INTO kv VALUES (%s, %s, now())", [(i, "v%d" % i) for i in range(200)])
conn.commit()
cur.execute("SELECT count(*), min(v), max(k) FROM kv WHERE k >= %s", (10,))
print("rows", cur.fetchone())
cur.execute("UPDATE kv SET v = %s WHERE k = %s", ("changed", 5))
conn.rollback()
cur.execute("SELECT v FROM kv WHERE k = 5")
print("after rollback", cur.fetchone()[0])
try:
    cur.execute("INSERT INTO kv VALUES (1, 'dup', now())")
except psycopg2.Error as e:
    print("error", e.pgcode)
    conn.rollback()
cur.execute("SELECT a.k, b.k FROM kv a JOIN kv b ON b.k = a.k + 100 WHERE a.k < 3 ORDER BY 1")
print("join", cur.fetchall())
conn.close()
)PY";
  std::string out;
  ASSERT_EQ(RunCommand(fmt::format("/usr/bin/python3 {} {}", py, cluster.pg_port()), &out), 0)
      << out;
  EXPECT_NE(out.find("rows (190, 'v10', 199)"), std::string::npos) << out;
  EXPECT_NE(out.find("after rollback v5"), std::string::npos) << out;
  EXPECT_NE(out.find("error 23505"), std::string::npos) << out;
  EXPECT_NE(out.find("join [(0, 100), (1, 101), (2, 102)]"), std::string::npos) << out;
}

}  // namespace
}  // namespace wattdb::testing
