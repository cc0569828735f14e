// Tests of Poplar's device numbering inside a GCD and its IPUoF attribute.
#include "fabric/sub_devices.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

using ::testing::HasSubstr;

TEST(SubDevicesTest, NumbersPairsThenQuadsThenTheWhole) {
  EXPECT_EQ(FormatMultiIpuDevices(8), "8:0-1 9:2-3 10:4-5 11:6-7 12:0-3 13:4-7 14:0-7");
  EXPECT_EQ(FormatMultiIpuDevices(2), "2:0-1");
  EXPECT_EQ(FormatMultiIpuDevices(1), "");
  EXPECT_EQ(FormatMultiIpuDevices(6), "");
  const std::vector<SubDevice> d16 = MultiIpuDevices(16);
  ASSERT_EQ(d16.size(), 15u);
  EXPECT_EQ(d16.back(), (SubDevice{30, 0, 16}));
}

TEST(SubDevicesTest, ParsesWhatItFormats) {
  for (uint32_t n : {2u, 4u, 8u, 64u}) {
    auto parsed = ParseMultiIpuDevices(FormatMultiIpuDevices(n), n);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, MultiIpuDevices(n));
  }
}

TEST(SubDevicesTest, RefusesMalformedEntries) {
  for (const auto& [text, why] : std::vector<std::pair<std::string, std::string>>{
           {"8", "is not id:first-last"},
           {"8:0", "is not id:first-last"},
           {"x:0-1", "is not id:first-last"},
           {"8:0-2", "power of two"},
           {"8:1-1", "power of two"},
           {"8:3-2", "power of two"},
           {"8:6-9", "beyond the GCD's 8 devices"},
           {"3:0-1", "reuses the id of a single IPU"},
           {"8:0-1 8:2-3", "repeats its id"},
       }) {
    auto parsed = ParseMultiIpuDevices(text, 8);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(why)) << text;
  }
}

}  // namespace
}  // namespace vipu::fabric
