// SetTopology per machine, and the fingerprint that tells requests apart.
#include <vector>

#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/topology_request.h"

namespace vipu::server {
namespace {

ClusterLinks Pod16() {
  return BuildClusterLinks(
      *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod16"), "pod16")));
}

TEST(TopologyRequestTest, TellsEachMachineItsPlaceAndPorts) {
  ClusterLinks links = Pod16();
  AgentTopology t = TopologyFor(links, "ag3");
  EXPECT_EQ(t.cluster_id, "pod16");
  EXPECT_EQ(t.machine_index, 2u);
  EXPECT_EQ(t.machines_per_ild, 4u);
  EXPECT_FALSE(t.torus);
  ASSERT_EQ(t.ports.size(), 12u);
  const AgentLinkPort& prev = t.ports[6];  // rail-prev-0
  EXPECT_EQ(prev.port, fabric::kPortRailPrev0);
  EXPECT_EQ(prev.name, "ag2.ipu1-ag3.ipu3");
  EXPECT_EQ(prev.local_ipu, 3u);
  EXPECT_EQ(prev.peer_agent_id, "ag2");
  EXPECT_EQ(prev.peer_port, fabric::kPortRailNext0);
  EXPECT_EQ(TopologyFingerprint(t), TopologyFingerprint(TopologyFor(links, "ag3")));
  EXPECT_NE(TopologyFingerprint(t), TopologyFingerprint(TopologyFor(links, "ag2")));
}

TEST(TopologyRequestTest, TheFingerprintChangesWithEveryField) {
  const AgentTopology base = TopologyFor(Pod16(), "ag3");
  std::vector<AgentTopology> changed(9, base);
  changed[0].cluster_id = "other";
  changed[1].ild = 1;
  changed[2].num_ilds = 2;
  changed[3].machine_index = 3;
  changed[4].machines_per_ild = 8;
  changed[5].torus = true;
  changed[6].ports[0].peer_agent_id = "ag9";
  changed[7].ports[0].internal = !base.ports[0].internal;
  changed[8].ports.pop_back();
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(TopologyFingerprint(changed[i]), TopologyFingerprint(base)) << i;
  }
  // Field boundaries count: moving a character from one name to the next
  // is a different topology.
  AgentTopology a = base, b = base;
  a.ports[0].name = "xy";
  a.ports[0].peer_agent_id = "z";
  b.ports[0].name = "x";
  b.ports[0].peer_agent_id = "yz";
  EXPECT_NE(TopologyFingerprint(a), TopologyFingerprint(b));
}

}  // namespace
}  // namespace vipu::server
