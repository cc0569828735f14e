// gc-info's device list: which single and Multi IPU devices a GCD has, their
// ids, members and DNC order, and the text they print as.
#include "gcinfo/device_listing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vipu::gcinfo {
namespace {

using ::testing::ElementsAre;

std::vector<popdist::ipuof::IpuofDevice> Ipus(size_t n) {
  std::vector<popdist::ipuof::IpuofDevice> ipus;
  for (size_t i = 0; i < n; ++i) {
    // Four IPUs per machine, IPU# counting down as on an IPU-Machine.
    ipus.push_back({static_cast<uint32_t>(i), "127.0.0.1", static_cast<uint32_t>(40000 + i / 4),
                    static_cast<uint32_t>(3 - i % 4), ""});
  }
  return ipus;
}

TEST(GcInfoDevicesOfTest, SixteenIpusHaveSinglesThenPairsQuadsEightsAndTheWhole) {
  std::vector<Device> devices = DevicesOf(16);
  ASSERT_EQ(devices.size(), 16u + 8 + 4 + 2 + 1);
  for (uint32_t i = 0; i < devices.size(); ++i) EXPECT_EQ(devices[i].id, i);
  EXPECT_FALSE(devices[15].multi);
  EXPECT_THAT(devices[15].members, ElementsAre(15));
  EXPECT_TRUE(devices[16].multi);
  EXPECT_THAT(devices[16].members, ElementsAre(0, 1));
  EXPECT_THAT(devices[23].members, ElementsAre(14, 15));
  EXPECT_THAT(devices[24].members, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(devices[29].members, ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_EQ(devices[30].members.size(), 16u);
}

TEST(GcInfoDevicesOfTest, OneIpuIsOneFabricDeviceAndNoneIsNothing) {
  std::vector<Device> devices = DevicesOf(1);
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_FALSE(devices[0].multi);
  EXPECT_TRUE(DevicesOf(0).empty());
}

TEST(GcInfoDevicesOfTest, OnlySinglesWhenTheCountIsNoPowerOfTwo) {
  std::vector<Device> devices = DevicesOf(6);
  ASSERT_EQ(devices.size(), 6u);
  EXPECT_FALSE(devices[5].multi);
}

TEST(GcInfoDeviceListingTest, FourIpusPrintLikeGcInfo) {
  EXPECT_EQ(DeviceListing("p1", 0, Ipus(4), "IPUoF config /h/p1_gcd0_ipuof.conf"),
            "Graphcore device listing:\n"
            "Partition: p1 (gcd:0) has 4 IPUs, from IPUoF config /h/p1_gcd0_ipuof.conf\n"
            "-+- Id: [0], target: [Fabric], IPU-M host: [127.0.0.1:40000], IPU#: [3]\n"
            "-+- Id: [1], target: [Fabric], IPU-M host: [127.0.0.1:40000], IPU#: [2]\n"
            "-+- Id: [2], target: [Fabric], IPU-M host: [127.0.0.1:40000], IPU#: [1]\n"
            "-+- Id: [3], target: [Fabric], IPU-M host: [127.0.0.1:40000], IPU#: [0]\n"
            "-+- Id: [4], target: [Multi IPU], IPUs: [2]\n"
            " |--- Id: [0], DNC Id: [0], IPU-M host: [127.0.0.1:40000], IPU#: [3]\n"
            " |--- Id: [1], DNC Id: [1], IPU-M host: [127.0.0.1:40000], IPU#: [2]\n"
            "-+- Id: [5], target: [Multi IPU], IPUs: [2]\n"
            " |--- Id: [2], DNC Id: [0], IPU-M host: [127.0.0.1:40000], IPU#: [1]\n"
            " |--- Id: [3], DNC Id: [1], IPU-M host: [127.0.0.1:40000], IPU#: [0]\n"
            "-+- Id: [6], target: [Multi IPU], IPUs: [4]\n"
            " |--- Id: [0], DNC Id: [0], IPU-M host: [127.0.0.1:40000], IPU#: [3]\n"
            " |--- Id: [1], DNC Id: [1], IPU-M host: [127.0.0.1:40000], IPU#: [2]\n"
            " |--- Id: [2], DNC Id: [2], IPU-M host: [127.0.0.1:40000], IPU#: [1]\n"
            " |--- Id: [3], DNC Id: [3], IPU-M host: [127.0.0.1:40000], IPU#: [0]\n");
}

TEST(GcInfoDeviceListingTest, IpusOnOtherMachinesShowTheirEndpointAndV6IsBracketed) {
  std::vector<popdist::ipuof::IpuofDevice> ipus = Ipus(8);
  ipus[0].host = "::1";
  const std::string text = DeviceListing("p8", 1, ipus, "V-IPU server h:8090");
  EXPECT_THAT(text, ::testing::HasSubstr("Partition: p8 (gcd:1) has 8 IPUs, from V-IPU server"));
  EXPECT_THAT(text,
              ::testing::HasSubstr("-+- Id: [0], target: [Fabric], IPU-M host: [[::1]:40000]"));
  EXPECT_THAT(text, ::testing::HasSubstr("-+- Id: [7], target: [Fabric], IPU-M host: "
                                         "[127.0.0.1:40001], IPU#: [0]\n"));
  EXPECT_THAT(text, ::testing::HasSubstr("-+- Id: [14], target: [Multi IPU], IPUs: [8]\n"));
}

}  // namespace
}  // namespace vipu::gcinfo
