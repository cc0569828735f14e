// IPUoF configs per GCD and the target options of partitions of several shapes.
#include "fabric/ipuof_config.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fabric/placement.h"
#include "fabric/pods.h"
#include "fabric/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/pod_layout.h"

namespace vipu::fabric {
namespace {

using Options = std::vector<std::pair<std::string, std::string>>;
using test::PodLayout;

// A partition as the server would build it: defaults resolved, IPUs placed
// on an empty cluster.
Partition MakePartition(const ClusterLayout& layout, PartitionRequest request) {
  request.id = request.id.empty() ? "p" : request.id;
  absl::StatusOr<PartitionRequest> resolved = ResolveDefaults(request, layout);
  EXPECT_TRUE(resolved.ok()) << resolved.status();
  PlacementRequest placement;
  placement.size = resolved->size;
  placement.num_ilds = resolved->num_ilds;
  const auto& agents = layout.cluster().agent_ids;
  auto ipus = Place(layout, {agents.begin(), agents.end()}, {}, placement);
  EXPECT_TRUE(ipus.ok()) << ipus.status();
  Partition p = PartitionFromRequest(*resolved, *ipus);
  p.cluster_id = layout.cluster().id;
  return p;
}

PartitionRequest Req(uint32_t size, uint32_t num_gcds = 0) {
  PartitionRequest r;
  r.size = size;
  r.num_gcds = num_gcds;
  return r;
}

TEST(FabricIpuofConfigTest, TwoGcdPartitionDevicesAndAttributes) {
  ClusterLayout layout = PodLayout("pod16");
  PartitionRequest r = Req(8, 2);
  r.id = "train";
  r.num_replicas = 4;
  Partition p = MakePartition(layout, r);
  std::map<std::string, MachineEndpoint> endpoints;
  // The RDMA ports are the machines' own, not derived from the server
  // ports: 50053 would be another machine's server port.
  endpoints["ag1"] = {
      "10.1.5.10", 50052, MachineType::kM2000, "2.6.0", "2.6.1", {"c0", "c1", "c2", "c3"}, 50070};
  endpoints["ag2"] = {"10.1.5.11", 50053, MachineType::kM2000, "2.6.0", "2.6.1", {"d0"}, 50071};

  std::vector<GcdConfig> gcds = BuildIpuofConfigs(p, layout, endpoints);
  ASSERT_EQ(gcds.size(), 2u);
  const std::vector<std::string> gcd0_chips = {"c3", "c2", "c1", "c0"};
  const std::vector<std::string> gcd1_chips = {"", "", "", "d0"};  // only IPU# 0 known
  for (uint32_t g = 0; g < 2; ++g) {
    SCOPED_TRACE(g);
    ASSERT_EQ(gcds[g].devices.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
      const IpuofDevice& d = gcds[g].devices[i];
      EXPECT_EQ(d.device_id, i);
      EXPECT_EQ(d.routing_id, g * 4 + i);
      EXPECT_EQ(d.ipulink_segment_id, 0u);
      EXPECT_EQ(d.ipu_arch_id, 2u);
      EXPECT_EQ(d.ipu_id, 3 - i);
      EXPECT_EQ(d.ip, g == 0 ? "10.1.5.10" : "10.1.5.11");
      EXPECT_EQ(d.server_port, g == 0 ? 50052u : 50053u);
      EXPECT_EQ(d.rdma_port, g == 0 ? 50070u : 50071u);
      EXPECT_EQ(d.chip_id, g == 0 ? gcd0_chips[i] : gcd1_chips[i]);
      EXPECT_EQ(d.gwsw_version, "2.6.0");
      EXPECT_EQ(d.ipum_sw_version, "2.6.1");
    }
  }
  const std::map<std::string, std::string> expected = {
      {"GCD Id", "0"},
      {"Num GCDs", "2"},
      {"Num Replicas", "4"},
      {"Partition Id", "train"},
      {"Fabric Reconfigurable", "false"},
      {"IPU-Link Domain Size", "8"},
      {"IPU-Link Configuration", "slidingWindow"},
      {"IPU-Link Topology", "mesh"},
      {"GW Routing", "DEFAULT"},
      {"Sync Type", "pod-native-default"},
      {"IPUoF Server Version", "v1.3.3"},
  };
  EXPECT_EQ(gcds[0].attributes, expected);
  std::map<std::string, std::string> expected1 = expected;
  expected1["GCD Id"] = "1";
  EXPECT_EQ(gcds[1].attributes, expected1);
}

TEST(FabricIpuofConfigTest, ReconfigurableAndMissingEndpoint) {
  ClusterLayout layout = PodLayout("pod64");
  PartitionRequest r = Req(4);
  r.reconfigurable = true;
  Partition p = MakePartition(layout, r);
  std::vector<GcdConfig> gcds = BuildIpuofConfigs(p, layout, {});
  ASSERT_EQ(gcds.size(), 1u);
  EXPECT_EQ(gcds[0].attributes.at("Fabric Reconfigurable"), "true");
  EXPECT_EQ(gcds[0].attributes.at("Sync Type"), "c2-compatible");
  EXPECT_EQ(gcds[0].attributes.at("IPU-Link Configuration"), "default");
  // Its pairs and the whole, as Poplar numbers them after the 4 singles.
  EXPECT_EQ(gcds[0].attributes.at("Multi IPU Devices"), "4:0-1 5:2-3 6:0-3");
  ASSERT_EQ(gcds[0].devices.size(), 4u);
  EXPECT_EQ(gcds[0].devices[0].ip, "");
  EXPECT_EQ(gcds[0].devices[0].server_port, 0u);
  EXPECT_EQ(gcds[0].devices[0].chip_id, "");
  EXPECT_EQ(gcds[0].devices[0].ipu_id, 3u);
}

TEST(FabricIpuofConfigTest, MultiIldSegmentsAndGwRouting) {
  ClusterLayout layout = PodLayout("pod128");
  Partition p = MakePartition(layout, Req(128, 4));
  std::vector<GcdConfig> gcds = BuildIpuofConfigs(p, layout, {});
  ASSERT_EQ(gcds.size(), 4u);
  for (uint32_t g = 0; g < 4; ++g) {
    ASSERT_EQ(gcds[g].devices.size(), 32u);
    EXPECT_EQ(gcds[g].devices.front().ipulink_segment_id, g / 2);
    EXPECT_EQ(gcds[g].devices.front().routing_id, (g % 2) * 32);
    EXPECT_EQ(gcds[g].attributes.at("GW Routing"), "RING");
    EXPECT_EQ(gcds[g].attributes.at("IPU-Link Topology"), "torus");
    EXPECT_EQ(gcds[g].attributes.at("IPU-Link Domain Size"), "64");
  }
}

TEST(FabricTargetOptionsTest, FourIpusOnPod64) {
  ClusterLayout layout = PodLayout("pod64");
  Partition p = MakePartition(layout, Req(4));
  EXPECT_EQ(TargetOptions(p, layout), (Options{{"ipuLinkDomainSize", "4"},
                                               {"ipuLinkConfiguration", "default"},
                                               {"ipuLinkTopology", "mesh"},
                                               {"gatewayMode", "true"},
                                               {"instanceSize", "4"}}));
}

TEST(FabricTargetOptionsTest, WholePod64) {
  ClusterLayout layout = PodLayout("bow-pod64");
  Partition p = MakePartition(layout, Req(64));
  EXPECT_EQ(TargetOptions(p, layout), (Options{{"ipuLinkDomainSize", "64"},
                                               {"ipuLinkConfiguration", "slidingWindow"},
                                               {"ipuLinkTopology", "torus"},
                                               {"gatewayMode", "true"},
                                               {"instanceSize", "64"}}));
}

TEST(FabricTargetOptionsTest, WholePod128WithTwoGcds) {
  ClusterLayout layout = PodLayout("pod128");
  Partition p = MakePartition(layout, Req(128, 2));
  EXPECT_EQ(TargetOptions(p, layout), (Options{{"ipuLinkDomainSize", "64"},
                                               {"ipuLinkConfiguration", "slidingWindow"},
                                               {"ipuLinkTopology", "torus"},
                                               {"gatewayMode", "true"},
                                               {"instanceSize", "64"}}));
}

TEST(FabricTargetOptionsTest, RoutingAndSegmentVariants) {
  ClusterLayout layout = PodLayout("pod128");
  PartitionRequest r = Req(16);
  r.routing = RoutingType::kBtnc;
  Partition p = MakePartition(layout, r);
  Options opts = TargetOptions(p, layout);
  EXPECT_EQ(opts[0].second, "16");
  EXPECT_EQ(opts[1].second, "barleyTwist");
  EXPECT_EQ(opts[2].second, "mesh");
  // 64 IPUs as two 32-IPU segments: each IPU-Link domain holds 32.
  r = Req(64);
  r.num_ilds = 2;
  p = MakePartition(layout, r);
  opts = TargetOptions(p, layout);
  EXPECT_EQ(opts[0].second, "32");
  EXPECT_EQ(opts[1].second, "slidingWindow");
  EXPECT_EQ(opts[2].second, "mesh");
  EXPECT_EQ(opts[4].second, "64");
}

}  // namespace
}  // namespace vipu::fabric
