// Which faults count against a partition.
#include "server/control/partition_problems.h"

#include "fabric/placement.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/cluster_links.h"
#include "tests/unit/support/fleet_test_util.h"

namespace vipu::server {
namespace {

using test::MakeLiveAgent;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

ClusterLinks Pod16() {
  return BuildClusterLinks(
      *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod16"), "pod16")));
}

// 8 IPUs on ag1 and ag2 (topology ids 0..7).
fabric::Partition OnFirstTwoMachines(const ClusterLinks& links) {
  fabric::Partition p;
  p.id = "p";
  p.routing = fabric::RoutingType::kSwnc;
  std::set<std::string> agents = {"ag1", "ag2", "ag3", "ag4"};
  p.ipus = *fabric::Place(links.layout, agents, {}, fabric::PlacementRequest{8, 1, {}});
  return p;
}

TEST(PartitionProblemsTest, OnlyTheFaultsOfThePartitionCount) {
  ClusterLinks links = Pod16();
  fabric::Partition p = OnFirstTwoMachines(links);
  AgentRegistry registry(absl::Milliseconds(100));
  const absl::Time now = absl::Now();
  for (const char* id : {"ag1", "ag2", "ag3"}) registry.Register(MakeLiveAgent(id, 1), now);
  // ag4 never registered but holds nothing of p.
  EXPECT_THAT(PartitionProblems(p, links, registry, now), IsEmpty());

  AgentHealth ag3;
  ag3.ipu_errors[0] = "injected fault";
  ag3.links_down[fabric::kPortRailPrev0] = "IPU-Link ag2.ipu1-ag3.ipu3";  // not p's link
  registry.Heartbeat("ag3", now, ag3);
  EXPECT_THAT(PartitionProblems(p, links, registry, now), IsEmpty());

  AgentHealth ag2;
  ag2.ipu_errors[1] = "injected fault";
  ag2.links_down[fabric::kPortRailPrev1] = "IPU-Link ag1.ipu0-ag2.ipu2";
  registry.Heartbeat("ag2", now, ag2);
  EXPECT_THAT(PartitionProblems(p, links, registry, now),
              ElementsAre("agent ag2: IPU 1 error (injected fault)",
                          "agent ag2: IPU-Link ag1.ipu0-ag2.ipu2 down"));

  // Three periods without a heartbeat: Down, named with the timeout, in
  // the same words however long it lasts (a changing message would be a
  // new fault on every pass, and a relocatable partition would never move).
  registry.Heartbeat("ag2", now, {});
  EXPECT_THAT(PartitionProblems(p, links, registry, now + absl::Milliseconds(350)),
              ElementsAre("agent ag1: down (no heartbeat for over 0.3 s)",
                          "agent ag2: down (no heartbeat for over 0.3 s)"));
  EXPECT_EQ(PartitionProblems(p, links, registry, now + absl::Seconds(7)),
            PartitionProblems(p, links, registry, now + absl::Milliseconds(350)));
  registry.ForgetForTesting("ag1");
  EXPECT_THAT(PartitionProblems(p, links, registry, now), ElementsAre("agent ag1: not connected"));
}

}  // namespace
}  // namespace vipu::server
