// The stable-port walk: the bind decides, reserved and handed-out ports are
// never tried, pairs keep their successor, a full turn without a port is 0.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "agents/stable_port_picker.h"

namespace vipu::agents {
namespace {

using ::testing::ElementsAre;

TEST(StablePortPickerTest, APortTakenBetweenProbeAndBindMovesOnToTheNext) {
  StablePortPicker picker({62000, 62009}, 0, {});
  // Another process won the first two ports: their binds fail.
  std::vector<uint32_t> tried;
  const uint32_t got = picker.Take([&](uint32_t port) {
    tried.push_back(port);
    return port >= 62002;
  });
  EXPECT_EQ(got, 62002u);
  EXPECT_THAT(tried, ElementsAre(62000u, 62001u, 62002u));
  // The next walk goes on from there and never hands the same port out again.
  EXPECT_EQ(picker.Take([](uint32_t) { return true; }), 62003u);
}

TEST(StablePortPickerTest, ReservedPortsAreNeverTried) {
  StablePortPicker picker({62000, 62004}, 0, {62000, 62002});
  std::vector<uint32_t> tried;
  auto record = [&](uint32_t port) {
    tried.push_back(port);
    return true;
  };
  EXPECT_EQ(picker.Take(record), 62001u);
  picker.Reserve(62003);
  EXPECT_EQ(picker.Take(record), 62004u);
  EXPECT_THAT(tried, ElementsAre(62001u, 62004u));
  EXPECT_TRUE(picker.Reserved(62004));
}

TEST(StablePortPickerTest, APairNeedsItsSuccessorInRangeAndUnreserved) {
  // 62001 is reserved, so 62000 cannot start a pair; 62004 is the last port.
  StablePortPicker picker({62000, 62004}, 0, {62001});
  std::vector<uint32_t> tried;
  auto record = [&](uint32_t port) {
    tried.push_back(port);
    return true;
  };
  EXPECT_EQ(picker.Take(record, /*pair=*/true), 62002u);
  picker.Reserve(62003);
  EXPECT_EQ(picker.Take(record, /*pair=*/true), 0u);  // only 62004 is left, the last port
  EXPECT_THAT(tried, ElementsAre(62002u));
}

TEST(StablePortPickerTest, AWalkStartsWhereAskedAndWrapsOnce) {
  StablePortPicker picker({62000, 62004}, 13, {});  // 13 % 5 = 3
  std::vector<uint32_t> tried;
  EXPECT_EQ(picker.Take([&](uint32_t port) {
    tried.push_back(port);
    return false;
  }),
            0u);
  EXPECT_THAT(tried, ElementsAre(62003u, 62004u, 62000u, 62001u, 62002u));
}

TEST(StablePortPickerTest, AnEmptyRangeHandsOutNothing) {
  StablePortPicker picker({65536, 65535}, 7, {});
  bool tried = false;
  EXPECT_EQ(picker.Take([&](uint32_t) { return tried = true; }), 0u);
  EXPECT_FALSE(tried);
}

}  // namespace
}  // namespace vipu::agents
