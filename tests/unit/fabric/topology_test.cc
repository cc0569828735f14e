// Pod presets, and ClusterLayout positions, machine indexes and SortedAgentCursor.
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fabric/pods.h"
#include "fabric/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

using ::testing::HasSubstr;

struct PresetCase {
  std::string name;
  MachineType machine_type;
  uint32_t machines;
  uint32_t ilds;
  IldTopology topology;
  ClusterTopology cluster_topology;
};

const std::vector<PresetCase>& Presets() {
  static const auto* cases = new std::vector<PresetCase>{
      {"pod4", MachineType::kM2000, 1, 1, IldTopology::kMesh, ClusterTopology::kLooped},
      {"pod16", MachineType::kM2000, 4, 1, IldTopology::kMesh, ClusterTopology::kLooped},
      {"pod64", MachineType::kM2000, 16, 1, IldTopology::kTorus, ClusterTopology::kLooped},
      {"pod128", MachineType::kM2000, 32, 2, IldTopology::kTorus, ClusterTopology::kLooped},
      {"pod256", MachineType::kM2000, 64, 4, IldTopology::kTorus, ClusterTopology::kLooped},
      {"bow-pod4", MachineType::kBow, 1, 1, IldTopology::kMesh, ClusterTopology::kLooped},
      {"bow-pod16", MachineType::kBow, 4, 1, IldTopology::kMesh, ClusterTopology::kLooped},
      {"bow-pod64", MachineType::kBow, 16, 1, IldTopology::kTorus, ClusterTopology::kLooped},
      {"bow-pod128", MachineType::kBow, 32, 2, IldTopology::kTorus, ClusterTopology::kLooped},
      {"bow-pod256", MachineType::kBow, 64, 4, IldTopology::kTorus, ClusterTopology::kSwitched},
  };
  return *cases;
}

TEST(FabricPodPresetTest, EveryPresetHasItsShape) {
  std::vector<std::string> expected_names;
  for (const PresetCase& c : Presets()) {
    SCOPED_TRACE(c.name);
    expected_names.push_back(c.name);
    absl::StatusOr<PodSpec> pod = PodPreset(c.name);
    ASSERT_TRUE(pod.ok()) << pod.status();
    EXPECT_EQ(pod->name, c.name);
    EXPECT_EQ(pod->machine_type, c.machine_type);
    EXPECT_EQ(pod->num_machines, c.machines);
    EXPECT_EQ(pod->num_ilds, c.ilds);
    EXPECT_EQ(pod->topology, c.topology);
    EXPECT_EQ(pod->cluster_topology, c.cluster_topology);
  }
  EXPECT_THAT(PodPresetNames(), ::testing::UnorderedElementsAreArray(expected_names));
}

TEST(FabricPodPresetTest, NamesAreCaseInsensitive) {
  absl::StatusOr<PodSpec> pod = PodPreset("POD64");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->name, "pod64");
  pod = PodPreset("Bow-Pod256");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->name, "bow-pod256");
  EXPECT_EQ(pod->cluster_topology, ClusterTopology::kSwitched);
}

TEST(FabricPodPresetTest, UnknownNameListsKnownOnes) {
  for (const char* bad : {"", "pod32", "pod", "bow-pod512", "pod64 ", "bowpod64"}) {
    absl::StatusOr<PodSpec> pod = PodPreset(bad);
    ASSERT_FALSE(pod.ok()) << bad;
    EXPECT_EQ(pod.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(pod.status().message(), HasSubstr("pod16"));
    EXPECT_THAT(pod.status().message(), HasSubstr("bow-pod256"));
  }
}

TEST(FabricPodClusterTest, AgentsAreNumberedFromOne) {
  Cluster cluster = PodCluster(*PodPreset("pod16"), "c16", "m");
  EXPECT_EQ(cluster.id, "c16");
  EXPECT_THAT(cluster.agent_ids, ::testing::ElementsAre("m1", "m2", "m3", "m4"));
  EXPECT_EQ(cluster.topology, IldTopology::kMesh);
  EXPECT_EQ(PodCluster(*PodPreset("pod4"), "c").agent_ids.front(), "ag1");
}

TEST(FabricClusterLayoutTest, EveryPresetLaysOutItsIlds) {
  for (const PresetCase& c : Presets()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<ClusterLayout> layout =
        ClusterLayout::Build(PodCluster(*PodPreset(c.name), "c"));
    ASSERT_TRUE(layout.ok()) << layout.status();
    const uint32_t m = c.machines / c.ilds;
    EXPECT_EQ(layout->num_ilds(), c.ilds);
    EXPECT_EQ(layout->machines_per_ild(), m);
    EXPECT_EQ(layout->ipus_per_ild(), m * 4);
    EXPECT_EQ(layout->num_ipus(), c.machines * 4);
    for (uint32_t ild = 0; ild < c.ilds; ++ild) {
      for (uint32_t tid = 0; tid < m * 4; ++tid) {
        const IpuRef ipu = layout->IpuAt(ild, tid);
        // ILD i holds agents [i*M, (i+1)*M); slot s is IPU# 3-s.
        EXPECT_EQ(ipu.agent_id, "ag" + std::to_string(ild * m + tid / 4 + 1));
        EXPECT_EQ(ipu.ipu, 3 - tid % 4);
        auto pos = layout->PositionOf(ipu);
        ASSERT_TRUE(pos.has_value());
        EXPECT_EQ(pos->first, ild);
        EXPECT_EQ(pos->second, tid);
      }
    }
  }
}

TEST(FabricClusterLayoutTest, DeviceZeroIsIpuThree) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  EXPECT_EQ(layout.IpuAt(0, 0), (IpuRef{"ag1", 3}));
  EXPECT_EQ(layout.IpuAt(0, 3), (IpuRef{"ag1", 0}));
  EXPECT_EQ(layout.IpuAt(0, 4), (IpuRef{"ag2", 3}));
  EXPECT_EQ(layout.IpuAt(1, 0), (IpuRef{"ag17", 3}));
  EXPECT_EQ(layout.IpuAt(1, 63), (IpuRef{"ag32", 0}));
}

TEST(FabricClusterLayoutTest, OutsidePositionsAndIpus) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  EXPECT_EQ(layout.IpuAt(2, 0), IpuRef{});
  EXPECT_EQ(layout.IpuAt(0, 64), IpuRef{});
  EXPECT_FALSE(layout.PositionOf(IpuRef{"ag33", 0}).has_value());
  EXPECT_FALSE(layout.PositionOf(IpuRef{"ag1", 4}).has_value());
  EXPECT_FALSE(layout.PositionOf(IpuRef{"", 0}).has_value());
}

TEST(FabricClusterLayoutTest, MachineIndexIsThePositionInTheAgentList) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  EXPECT_EQ(layout.MachineIndex("ag1"), 0u);
  EXPECT_EQ(layout.MachineIndex("ag17"), 16u);
  EXPECT_EQ(layout.MachineIndex("ag32"), 31u);
  EXPECT_FALSE(layout.MachineIndex("ag33").has_value());
  EXPECT_FALSE(layout.MachineIndex("").has_value());
  for (uint32_t index = 0; index < 32; ++index) {
    for (uint32_t ipu = 0; ipu < 4; ++ipu) {
      const auto pos = layout.PositionAt(index, ipu);
      EXPECT_EQ(layout.IpuAt(pos.first, pos.second),
                (IpuRef{layout.cluster().agent_ids[index], ipu}));
    }
  }
}

TEST(FabricClusterLayoutTest, ByAgentIdOrdersMachineIndexesByAgentId) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  const std::vector<uint32_t>& order = layout.by_agent_id();
  ASSERT_EQ(order.size(), 32u);
  const std::vector<std::string>& ids = layout.cluster().agent_ids;
  EXPECT_EQ(ids[order[0]], "ag1");
  EXPECT_EQ(ids[order[1]], "ag10");  // string order, not numeric
  for (size_t r = 1; r < order.size(); ++r) EXPECT_LT(ids[order[r - 1]], ids[order[r]]);
  EXPECT_EQ(std::set<uint32_t>(order.begin(), order.end()).size(), 32u);
}

TEST(FabricClusterLayoutTest, SortedAgentCursorFindsEveryAgentOfASortedSweep) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  std::set<std::string> sorted(layout.cluster().agent_ids.begin(),
                               layout.cluster().agent_ids.end());
  // Ids outside the cluster before, between and after the cluster's.
  for (const char* other : {"a", "ag", "ag05", "ag2x", "ag9", "zz"}) sorted.insert(other);
  SortedAgentCursor cursor(layout);
  for (const std::string& id : sorted) {
    SCOPED_TRACE(id);
    EXPECT_EQ(cursor.Find(id), layout.MachineIndex(id));
    EXPECT_EQ(cursor.Find(id), layout.MachineIndex(id));  // the same id again
  }
}

TEST(FabricClusterLayoutTest, SortedAgentCursorIsRightOutOfOrder) {
  ClusterLayout layout = *ClusterLayout::Build(PodCluster(*PodPreset("pod128"), "c"));
  SortedAgentCursor cursor(layout);
  for (const char* id : {"ag32", "ag1", "zz", "ag17", "ag16", "", "ag9", "ag10", "ag2"}) {
    SCOPED_TRACE(id);
    EXPECT_EQ(cursor.Find(id), layout.MachineIndex(id));
  }
  std::mt19937 rng(7);  // runs up and down, in and outside the cluster
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "ag" + std::to_string(rng() % 40) + (rng() % 5 == 0 ? "x" : "");
    SCOPED_TRACE(id);
    ASSERT_EQ(cursor.Find(id), layout.MachineIndex(id));
  }
}

TEST(FabricClusterLayoutTest, NonPowerOfTwoIldIsAllowed) {
  Cluster cluster;
  cluster.id = "c";
  cluster.agent_ids = {"a", "b", "c", "d", "e", "f"};
  cluster.num_ilds = 2;
  absl::StatusOr<ClusterLayout> layout = ClusterLayout::Build(cluster);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->ipus_per_ild(), 12u);
  EXPECT_EQ(layout->IpuAt(1, 0), (IpuRef{"d", 3}));
}

TEST(FabricClusterLayoutTest, RejectsBadClusters) {
  struct Case {
    std::string what;
    std::vector<std::string> agents;
    uint32_t ilds;
    std::string message;
  };
  std::vector<std::string> seventeen;
  for (int i = 0; i < 17; ++i) seventeen.push_back("m" + std::to_string(i));
  const std::vector<Case> cases = {
      {"zero ILDs", {"a"}, 0, "num_ilds"},
      {"no agents", {}, 1, "agents"},
      {"uneven split", {"a", "b", "c"}, 2, "equal ILDs"},
      {"more ILDs than agents", {"a"}, 2, "equal ILDs"},
      {"ILD over 64 IPUs", seventeen, 1, "at most 64 IPUs"},
      {"duplicate agent", {"a", "b", "a", "c"}, 1, "listed twice"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Cluster cluster;
    cluster.id = "bad";
    cluster.agent_ids = c.agents;
    cluster.num_ilds = c.ilds;
    absl::StatusOr<ClusterLayout> layout = ClusterLayout::Build(cluster);
    ASSERT_FALSE(layout.ok());
    EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(layout.status().message(), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace vipu::fabric
