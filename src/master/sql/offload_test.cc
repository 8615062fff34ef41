#include "master/sql/offload.h"

#include <gtest/gtest.h>

#include "common/sqlstate.h"

namespace wattdb::master {
namespace {

using Mode = OffloadSetting::Mode;

TEST(OffloadSetting, ParsesModesAndNodeIds) {
  EXPECT_EQ(OffloadSetting::Parse("off")->mode, Mode::kOff);
  EXPECT_EQ(OffloadSetting::Parse("auto")->mode, Mode::kAuto);
  EXPECT_EQ(OffloadSetting::Parse("on")->mode, Mode::kOn);
  auto n = OffloadSetting::Parse("12");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->mode, Mode::kNode);
  EXPECT_EQ(n->node, 12u);
  for (const char* bad : {"", "0", "-1", "2x", "yes", "99999999999"}) {
    auto r = OffloadSetting::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().sqlstate(), sqlstate::kInvalidParameterValue) << bad;
  }
}

TEST(ChooseHelper, PicksTheLeastLoadedNodeAndOnlyWhenAutoFindsTheMasterBusy) {
  std::vector<HelperCandidate> nodes = {{1, 90, 0}, {2, 5, 0}, {3, 5, 1}};
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kOff, 0}, 1.0), 0u);
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kOn, 0}, 0.0), 2u);    // running offloads count as load
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kNode, 3}, 0.0), 3u);  // forced, however busy
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kNode, 7}, 1.0), 0u);  // not a candidate: the master runs it
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kAuto, 0}, 0.2), 0u);  // the master has room
  EXPECT_EQ(ChooseHelper(nodes, {Mode::kAuto, 0}, kMasterBusyShare), 2u);
  // Busy master, but no helper nearly idle: stay.
  std::vector<HelperCandidate> busy = {{1, 80, 0}, {2, 60, 0}};
  EXPECT_EQ(ChooseHelper(busy, {Mode::kAuto, 0}, 1.0), 0u);
  EXPECT_EQ(ChooseHelper(busy, {Mode::kOn, 0}, 0.0), 2u);
  // Ties go to the lower id; no candidates, no helper.
  EXPECT_EQ(ChooseHelper({{4, 0, 0}, {3, 0, 0}}, {Mode::kOn, 0}, 0.0), 3u);
  EXPECT_EQ(ChooseHelper({}, {Mode::kOn, 0}, 1.0), 0u);
  EXPECT_GT(CpuCapacity(), 0.0);
}

}  // namespace
}  // namespace wattdb::master
