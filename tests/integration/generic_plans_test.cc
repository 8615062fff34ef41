// Prepared statements that keep a generic plan (reads and writes bound once, run with each
// execution's values), checked against their answers and the master's plan counters.
#include <chrono>
#include <string>
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
