// Runs sqllogictest files with the sqllogictest-rs runner (installed by
// scripts/install-deps.sh) under both of its engines: `postgres` (simple query protocol) and
// `postgres-extended` (Parse/Bind/Execute with binary results). Each file gets a fresh
// 3-node cluster with tiny segments, so even small tables span nodes. Files: our own
// tests/sql/*.test and the SQLite corpus with PostgreSQL 15's answers in tests/sql/sqlite/.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/integration/mini_cluster.h"

namespace wattdb::testing {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string file;
  std::string engine;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file << " (" << c.engine << ")"; }

std::string Runner() {
  const char* home = std::getenv("CARGO_HOME");
  std::string cargo =
      home ? home : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cargo";
  std::string path = cargo + "/bin/sqllogictest";
  if (fs::exists(path)) return path;
  return "sqllogictest";  // from PATH
}

class SltRs : public ::testing::TestWithParam<Case> {};
std::vector<Case> Cases();

TEST_P(SltRs, Passes) {
  const Case& c = GetParam();
  MiniCluster cluster(MiniClusterOptions{3, 1024, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string cmd = fmt::format(
      "{} -e {} -h 127.0.0.1 -p {} -d wattdb -u wattdb --label postgresql "
      "--color never {}",
      Runner(), c.engine, cluster.pg_port(), c.file);
  std::string out;
  int rc = RunCommand(cmd, &out);
  ASSERT_EQ(rc, 0) << cmd << "\n"
                   << out.substr(0, 8000)
                   << "\n(runner missing? scripts/install-deps.sh installs it with cargo)";
  EXPECT_NE(out.find("[OK]"), std::string::npos) << out;
}

// Every file at once with `-j 2`: the runner creates one database per file (CREATE DATABASE),
// runs two files at a time in one cluster, and drops each database afterwards; files use the
// same table names, so the databases must keep them apart.
TEST(SltRsParallel, OneDatabasePerFile) {
  MiniCluster cluster(MiniClusterOptions{3, 4096, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  std::string files;
  for (const auto& c : Cases()) {
    if (c.engine == "postgres") files += " " + c.file;
  }
  for (const char* engine : {"postgres", "postgres-extended"}) {
    std::string cmd = fmt::format(
        "{} -j 2 -e {} -h 127.0.0.1 -p {} -d wattdb -u wattdb --label postgresql "
        "--color never{}",
        Runner(), engine, cluster.pg_port(), files);
    std::string out;
    ASSERT_EQ(RunCommand(cmd, &out), 0) << out.substr(0, 8000);
  }
  // Every per-file database is gone again.
  auto conn = cluster.Connect();
  EXPECT_EQ(conn->Scalar("SELECT count(*) FROM wattdb_tables"), "0");
}

std::vector<Case> Cases() {
  std::vector<std::string> files;
  for (const char* dir : {WATTDB_SQL_DIR, WATTDB_SQL_DIR "/sqlite"}) {
    for (auto& e : fs::directory_iterator(dir)) {
      auto ext = e.path().extension();
      if ((ext == ".test" || ext == ".slt")) {
        files.push_back(e.path().string());
      }
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const auto& f : files) {
    for (const char* engine : {"postgres", "postgres-extended"}) out.push_back({f, engine});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Files, SltRs, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string stem = fs::path(info.param.file).stem().string();
                           return stem + "_" +
                                  (info.param.engine == "postgres" ? "simple" : "extended");
                         });

}  // namespace
}  // namespace wattdb::testing
