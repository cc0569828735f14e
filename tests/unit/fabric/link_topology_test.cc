// LinkTopology: link counts per pod, link names and ports, and the links partitions own.
#include <set>

#include "fabric/link_topology.h"
#include "fabric/placement.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

ClusterLayout LayoutOf(const std::string& pod) {
  auto spec = PodPreset(pod);
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto layout = ClusterLayout::Build(PodCluster(*spec, pod));
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

struct CountCase {
  std::string pod;
  LinkCounts want;
};

class LinkCountsTest : public ::testing::TestWithParam<CountCase> {};

TEST_P(LinkCountsTest, CountsFollowThePodSize) {
  const CountCase& c = GetParam();
  LinkCounts got = LinkTopology::Build(LayoutOf(c.pod)).Counts();
  EXPECT_EQ(got.agents, c.want.agents);
  EXPECT_EQ(got.ipu_link_cables, c.want.ipu_link_cables);
  EXPECT_EQ(got.sync_cables, c.want.sync_cables);
  EXPECT_EQ(got.ipu_links, c.want.ipu_links);
  EXPECT_EQ(got.ilds, c.want.ilds);
  EXPECT_EQ(got.gw_links, c.want.gw_links);
}

// pod4/pod16 are mesh ladders (no wrap), pod64+ torus ILDs of 16 machines.
// IPU-Links: 2 rungs + 2 inner rails per machine, 2 rails per machine cut;
// cables: 2 per rail between machines; sync: 2 per cut; GW: one per machine
// of a multi-ILD pod.
INSTANTIATE_TEST_SUITE_P(Pods, LinkCountsTest,
                         ::testing::Values(CountCase{"pod4", {1, 0, 0, 4, 1, 0}},
                                           CountCase{"pod16", {4, 12, 6, 22, 1, 0}},
                                           CountCase{"pod64", {16, 64, 32, 96, 1, 0}},
                                           CountCase{"bow-pod64", {16, 64, 32, 96, 1, 0}},
                                           CountCase{"pod128", {32, 128, 64, 192, 2, 32}},
                                           CountCase{"pod256", {64, 256, 128, 384, 4, 64}}),
                         [](const auto& info) {
                           std::string name = info.param.pod;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

TEST(LinkTopologyTest, NamesUsePhysicalIpuNumbers) {
  LinkTopology t = LinkTopology::Build(LayoutOf("pod16"));
  // Slot 0 is IPU#3 (device 0 is IPU# 3 on real machines).
  const Link* rung = t.Find("ag1", kPortRungLower);
  ASSERT_NE(rung, nullptr);
  EXPECT_EQ(rung->name, "ag1.ipu3-ag1.ipu2");
  EXPECT_TRUE(rung->internal);
  EXPECT_EQ(rung->cables, 0u);
  const Link* rail = t.Find("ag3", kPortRailNext0);
  ASSERT_NE(rail, nullptr);
  EXPECT_EQ(rail->name, "ag3.ipu1-ag4.ipu3");
  EXPECT_EQ(rail, t.Find("ag4", kPortRailPrev0));  // one link, two ends
  EXPECT_EQ(rail->cables, kCablesPerRail);
  const Link* sync = t.Find("ag2", kPortSyncNext1);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->name, "ag2.sync1-ag3.sync3");
  EXPECT_EQ(LinkKindName(sync->kind), "Sync-Link");
}

TEST(LinkTopologyTest, MeshEndsHaveNoOuterPortsTorusWraps) {
  LinkTopology mesh = LinkTopology::Build(LayoutOf("pod16"));
  EXPECT_EQ(mesh.Find("ag1", kPortRailPrev0), nullptr);
  EXPECT_EQ(mesh.Find("ag4", kPortRailNext1), nullptr);
  EXPECT_EQ(mesh.Find("ag1", kPortGw0), nullptr);
  EXPECT_EQ(mesh.PortsOf("ag1").size(), 4u + 2u + 2u);  // inner + next rails + next sync
  EXPECT_EQ(mesh.PortsOf("ag2").size(), 12u);

  LinkTopology torus = LinkTopology::Build(LayoutOf("pod64"));
  const Link* wrap = torus.Find("ag16", kPortRailNext0);
  ASSERT_NE(wrap, nullptr);
  EXPECT_TRUE(wrap->wrap);
  EXPECT_EQ(wrap->b.agent_id, "ag1");
  EXPECT_EQ(wrap, torus.Find("ag1", kPortRailPrev0));
  EXPECT_EQ(torus.PortsOf("ag1").size(), 12u);
}

TEST(LinkTopologyTest, GwLinksJoinTheSameMachineOfNeighbouringIlds) {
  LinkTopology t = LinkTopology::Build(LayoutOf("pod128"));
  const Link* gw = t.Find("ag1", kPortGw0);
  ASSERT_NE(gw, nullptr);
  EXPECT_EQ(gw->name, "ag1.gw0-ag17.gw1");
  const Link* back = t.Find("ag17", kPortGw0);
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(back->name, "ag17.gw0-ag1.gw1");
  EXPECT_EQ(t.PortsOf("ag1").size(), kPortsPerMachine);
}

TEST(LinkTopologyTest, UnknownPortOrAgentFindsNothing) {
  LinkTopology t = LinkTopology::Build(LayoutOf("pod16"));
  EXPECT_EQ(t.Find("ag2", kPortsPerMachine), nullptr);
  EXPECT_EQ(t.Find("ag9", kPortRungLower), nullptr);
  EXPECT_THAT(t.PortsOf("ag9"), IsEmpty());
  EXPECT_EQ(PortName(kPortsPerMachine), "port 14");
  EXPECT_EQ(PortName(kPortGw1), "gw1");
}

Partition PlacedPartition(const ClusterLayout& layout, const std::set<IpuRef>& used, uint32_t size,
                          RoutingType routing, const std::string& id) {
  std::set<std::string> agents(layout.cluster().agent_ids.begin(),
                               layout.cluster().agent_ids.end());
  auto ipus = Place(layout, agents, used, PlacementRequest{size, 0, {}});
  EXPECT_TRUE(ipus.ok()) << ipus.status();
  Partition p;
  p.id = id;
  p.routing = routing;
  p.ipus = *ipus;
  return p;
}

TEST(PartitionLinksTest, SizesOwnTheLinksInsideTheirBlock) {
  ClusterLayout layout = LayoutOf("pod64");
  LinkTopology t = LinkTopology::Build(layout);
  std::set<IpuRef> none;
  EXPECT_THAT(PartitionLinks(t, PlacedPartition(layout, none, 1, RoutingType::kDnc, "p")),
              IsEmpty());
  EXPECT_EQ(PartitionLinks(t, PlacedPartition(layout, none, 2, RoutingType::kDnc, "p")).size(), 1u);
  EXPECT_EQ(PartitionLinks(t, PlacedPartition(layout, none, 4, RoutingType::kDnc, "p")).size(), 4u);
  // 2 machines: 8 inner links, 2 rails and 2 sync cables between them.
  EXPECT_EQ(PartitionLinks(t, PlacedPartition(layout, none, 8, RoutingType::kSwnc, "p")).size(),
            12u);
  // The whole torus with RINGSWNC also owns the wrap rails and sync.
  Partition whole = PlacedPartition(layout, none, 64, RoutingType::kRingSwnc, "p");
  EXPECT_EQ(PartitionLinks(t, whole).size(), 96u + 32u);
  whole.routing = RoutingType::kSwnc;
  EXPECT_EQ(PartitionLinks(t, whole).size(), 96u + 32u - 4u);
}

TEST(PartitionLinksTest, PartitionsNeverShareALink) {
  ClusterLayout layout = LayoutOf("pod64");
  LinkTopology t = LinkTopology::Build(layout);
  std::set<IpuRef> used;
  std::set<std::string> claimed;
  const uint32_t sizes[] = {8, 4, 2, 1, 1, 16, 8, 4, 2, 2, 16};
  int n = 0;
  for (uint32_t size : sizes) {
    Partition p =
        PlacedPartition(layout, used, size, RoutingType::kSwnc, "p" + std::to_string(n++));
    for (const PartitionIpu& ipu : p.ipus) used.insert(ipu.ipu);
    for (const Link* l : PartitionLinks(t, p)) {
      EXPECT_TRUE(claimed.insert(l->name).second) << l->name << " claimed twice";
    }
  }
  EXPECT_EQ(used.size(), 64u);
}

TEST(PartitionLinksTest, PortsAreListedPerMachineBothEnds) {
  ClusterLayout layout = LayoutOf("pod16");
  LinkTopology t = LinkTopology::Build(layout);
  Partition p = PlacedPartition(layout, {}, 8, RoutingType::kSwnc, "p");
  auto ports = PartitionPorts(t, p);
  ASSERT_EQ(ports.size(), 2u);
  const std::string first = p.ipus.front().ipu.agent_id;
  const std::string second = p.ipus.back().ipu.agent_id;
  EXPECT_THAT(ports[first],
              ElementsAre(kPortRungLower, kPortRungUpper, kPortRailInner0, kPortRailInner1,
                          kPortRailNext0, kPortRailNext1, kPortSyncNext0, kPortSyncNext1));
  EXPECT_THAT(ports[second],
              ElementsAre(kPortRungLower, kPortRungUpper, kPortRailInner0, kPortRailInner1,
                          kPortRailPrev0, kPortRailPrev1, kPortSyncPrev0, kPortSyncPrev1));
  // A one-IPU partition still lists its machine, with no ports.
  Partition one = PlacedPartition(layout, {}, 1, RoutingType::kDnc, "one");
  auto bare = PartitionPorts(t, one);
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_THAT(bare.begin()->second, IsEmpty());
}

}  // namespace
}  // namespace vipu::fabric
