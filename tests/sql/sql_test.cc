// Runs every tests/sql/*.test file against a fresh 3-node cluster whose tiny segments make
// the data of even small tables span several nodes.
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/sql/slt_runner.h"

namespace wattdb::testing {
namespace {

class SqlLogicTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SqlLogicTest, Passes) {
  MiniCluster cluster(MiniClusterOptions{3, 1024, 200});
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto conn = cluster.Connect();
  ASSERT_TRUE(conn->ok()) << conn->error();
  int records = 0;
  auto failures = RunSltFile(GetParam(), *conn, &records);
  for (const auto& f : failures) ADD_FAILURE_AT(GetParam().c_str(), f.line) << f.message;
  EXPECT_GT(records, 0);
  ::testing::Test::RecordProperty("segments", conn->Scalar("SELECT count(*) FROM wattdb_segments"));
  std::printf("%s: %d records; segments=%s partitions=%s\n", GetParam().c_str(), records,
              conn->Scalar("SELECT count(*) FROM wattdb_segments").c_str(),
              conn->Scalar("SELECT count(*) FROM wattdb_partitions").c_str());
}

std::vector<std::string> Files() {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::directory_iterator(WATTDB_SQL_DIR)) {
    if (e.path().extension() == ".test") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Files, SqlLogicTest, ::testing::ValuesIn(Files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return std::filesystem::path(info.param).stem().string();
                         });

}  // namespace
}  // namespace wattdb::testing
