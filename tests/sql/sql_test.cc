// Runs every tests/sql/*.test file against a fresh 3-node cluster whose tiny segments make
// the data of even small tables span several nodes: once with plan fragments run on the
// nodes (the default), once with everything on the master (wattdb_pushdown = off), once
// with every blocking operator above the nodes' fragments offloaded to a helper node
// (wattdb_offload = on), and once with node 1 in the master process (power = "master": its
// segments read and its writes applied on the sessions' threads).
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/sql/slt_runner.h"

namespace wattdb::testing {
namespace {

enum class Mode { kPushdown, kOnMaster, kOffloaded, kMasterNode };

struct Case {
  std::string file;
  Mode mode;
};

class SqlLogicTest : public ::testing::TestWithParam<Case> {};

TEST_P(SqlLogicTest, Passes) {
  const std::string& file = GetParam().file;
  MiniClusterOptions o{3, 1024, 200};
  if (GetParam().mode == Mode::kMasterNode) o.hosted_node = 1;
  MiniCluster cluster(o);
  ASSERT_TRUE(cluster.Start()) << "logs in " << cluster.dir();
  auto conn = cluster.Connect();
  ASSERT_TRUE(conn->ok()) << conn->error();
  if (GetParam().mode == Mode::kOnMaster) {
    ASSERT_EQ(conn->Exec("SET wattdb_pushdown = off"), "");
  } else if (GetParam().mode == Mode::kOffloaded) {
    ASSERT_EQ(conn->Exec("SET wattdb_offload = on"), "");
  }
  int records = 0;
  auto failures = RunSltFile(file, *conn, &records);
  for (const auto& f : failures) ADD_FAILURE_AT(file.c_str(), f.line) << f.message;
  EXPECT_GT(records, 0);
  ::testing::Test::RecordProperty("segments", conn->Scalar("SELECT count(*) FROM wattdb_segments"));
  std::printf("%s: %d records; segments=%s partitions=%s\n", file.c_str(), records,
              conn->Scalar("SELECT count(*) FROM wattdb_segments").c_str(),
              conn->Scalar("SELECT count(*) FROM wattdb_partitions").c_str());
}

std::vector<Case> Files() {
  std::vector<std::string> files;
  for (auto& e : std::filesystem::directory_iterator(WATTDB_SQL_DIR)) {
    if (e.path().extension() == ".test") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const auto& f : files) {
    for (Mode m : {Mode::kPushdown, Mode::kOnMaster, Mode::kOffloaded, Mode::kMasterNode})
      out.push_back({f, m});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Files, SqlLogicTest, ::testing::ValuesIn(Files()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::filesystem::path(info.param.file).stem().string() +
                                  (info.param.mode == Mode::kOnMaster     ? "_on_master"
                                   : info.param.mode == Mode::kOffloaded  ? "_offloaded"
                                   : info.param.mode == Mode::kMasterNode ? "_master_node"
                                                                          : "");
                         });

}  // namespace
}  // namespace wattdb::testing
