// SetTopology per machine, and the fingerprint that tells requests apart.
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cluster_links.h"
#include "server/topology_request.h"

namespace vipu::server {
namespace {

ClusterLinks Pod16() {
  return BuildClusterLinks(
      *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod16"), "pod16")));
}

TEST(TopologyRequestTest, TellsEachMachineItsPlaceAndPorts) {
  ClusterLinks links = Pod16();
  vipuagent::SetTopologyRequest r = TopologyRequest(links, "ag3");
  EXPECT_EQ(r.cluster_id(), "pod16");
  EXPECT_EQ(r.machine_index(), 2u);
  EXPECT_EQ(r.machines_per_ild(), 4u);
  EXPECT_FALSE(r.torus());
  ASSERT_EQ(r.ports_size(), 12);
  const auto& prev = r.ports(6);  // rail-prev-0
  EXPECT_EQ(prev.port(), fabric::kPortRailPrev0);
  EXPECT_EQ(prev.name(), "ag2.ipu1-ag3.ipu3");
  EXPECT_EQ(prev.local_ipu(), 3u);
  EXPECT_EQ(prev.peer_agent_id(), "ag2");
  EXPECT_EQ(prev.peer_port(), fabric::kPortRailNext0);
  EXPECT_NE(TopologyFingerprint(r), TopologyFingerprint(TopologyRequest(links, "ag2")));
}

}  // namespace
}  // namespace vipu::server
