// LinkTopology's index of links by machine and port: every link is found
// from both its ends, ports without a link find nothing, and PartitionLinks
// (which looks only at the partition's machines' ports) owns exactly the
// links a scan of every link of the cluster would.
#include <set>
#include <string>
#include <vector>

#include "fabric/link_topology.h"
#include "fabric/placement.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

ClusterLayout LayoutOfPod(const std::string& pod) {
  auto spec = PodPreset(pod);
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto layout = ClusterLayout::Build(PodCluster(*spec, pod));
  EXPECT_TRUE(layout.ok()) << layout.status();
  return *layout;
}

// PartitionLinks as it was: a scan of every link of the cluster.
std::vector<const Link*> ScanAll(const LinkTopology& t, const Partition& partition) {
  std::set<IpuRef> ipus;
  std::set<std::string> machines;
  for (const PartitionIpu& p : partition.ipus) {
    ipus.insert(p.ipu);
    machines.insert(p.ipu.agent_id);
  }
  std::vector<const Link*> out;
  for (const Link& l : t.links()) {
    if (l.wrap && partition.routing != RoutingType::kRingSwnc) continue;
    const bool owned =
        l.kind == LinkKind::kIpuLink
            ? ipus.count({l.a.agent_id, l.a.ipu}) && ipus.count({l.b.agent_id, l.b.ipu})
            : machines.count(l.a.agent_id) && machines.count(l.b.agent_id);
    if (owned) out.push_back(&l);
  }
  return out;
}

TEST(LinkPortsTest, EveryLinkIsFoundFromItsEnds) {
  for (const char* pod : {"pod16", "pod64", "pod128", "pod256"}) {
    ClusterLayout layout = LayoutOfPod(pod);
    LinkTopology t = LinkTopology::Build(layout);
    for (const Link& l : t.links()) {
      // The lower end always finds it; the upper end unless another link
      // ends on that port too (a two-machine torus's wrap rail).
      EXPECT_EQ(t.Find(l.a.agent_id, l.a.port), &l) << pod << " " << l.name;
      const Link* b = t.Find(l.b.agent_id, l.b.port);
      ASSERT_NE(b, nullptr) << pod << " " << l.name;
      EXPECT_TRUE(b == &l || b->b.agent_id == l.b.agent_id) << pod << " " << l.name;
    }
    EXPECT_EQ(t.Find("nobody", 0), nullptr);
    EXPECT_EQ(t.Find(layout.cluster().agent_ids[0], kPortsPerMachine), nullptr);
    EXPECT_FALSE(t.PortsOf(layout.cluster().agent_ids[0]).empty());
    EXPECT_TRUE(t.PortsOf("nobody").empty());
  }
}

TEST(LinkPortsTest, PartitionLinksMatchAScanOfEveryLink) {
  for (const char* pod : {"pod16", "pod64", "pod256"}) {
    ClusterLayout layout = LayoutOfPod(pod);
    LinkTopology t = LinkTopology::Build(layout);
    const std::vector<bool> all(layout.cluster().agent_ids.size(), true);
    std::set<IpuRef> used;
    int n = 0;
    for (uint32_t size : {1u, 2u, 4u, 8u, 16u, 32u, 64u, 2u, 4u}) {
      auto ipus = Place(layout, MasksOf(layout, all, used), PlacementRequest{size, 0, {}});
      if (!ipus.ok()) continue;
      for (RoutingType routing : {RoutingType::kSwnc, RoutingType::kRingSwnc}) {
        Partition p;
        p.id = "p" + std::to_string(n++);
        p.routing = routing;
        p.ipus = *ipus;
        EXPECT_EQ(PartitionLinks(t, p), ScanAll(t, p)) << pod << " size " << size;
      }
      for (const PartitionIpu& ipu : *ipus) used.insert(ipu.ipu);
    }
  }
}

}  // namespace
}  // namespace vipu::fabric
