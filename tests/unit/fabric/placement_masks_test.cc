// Placement from per-ILD masks (what the server calls on every create) must
// choose exactly what placement from sets of agents and used IPUs chooses.
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fabric/placement.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/pod_layout.h"

namespace vipu::fabric {
namespace {

using test::PlacementOfSize;
using test::PodLayout;
using ::testing::HasSubstr;

std::vector<bool> Allowed(const ClusterLayout& layout, const std::set<std::string>& agents) {
  std::vector<bool> allowed(layout.cluster().agent_ids.size(), false);
  for (const std::string& a : agents) {
    if (auto i = layout.MachineIndex(a)) allowed[*i] = true;
  }
  return allowed;
}

// Same status (code and message) and, when OK, the same IPUs in order.
void ExpectSamePlacement(const absl::StatusOr<std::vector<PartitionIpu>>& from_sets,
                         const absl::StatusOr<std::vector<PartitionIpu>>& from_masks) {
  ASSERT_EQ(from_sets.status(), from_masks.status());
  if (!from_sets.ok()) return;
  ASSERT_EQ(from_sets->size(), from_masks->size());
  for (size_t i = 0; i < from_sets->size(); ++i) {
    const PartitionIpu& a = (*from_sets)[i];
    const PartitionIpu& b = (*from_masks)[i];
    EXPECT_EQ(a.ipu, b.ipu) << i;
    EXPECT_EQ(a.ild, b.ild) << i;
    EXPECT_EQ(a.ild_routing, b.ild_routing) << i;
    EXPECT_EQ(a.topology_id, b.topology_id) << i;
    EXPECT_EQ(a.routing_id, b.routing_id) << i;
  }
}

TEST(FabricPlacementMasksTest, MasksMarkAllowedMachinesAndUsedIpusByTopologyId) {
  ClusterLayout layout = PodLayout("pod64");  // 16 machines, one ILD of 64 IPUs
  std::vector<bool> allowed(layout.cluster().agent_ids.size(), false);
  allowed[0] = allowed[15] = true;
  const std::string& m1 = layout.cluster().agent_ids[1];
  // IPU# 3 is topology slot 0 (IpuAt reverses the slots), IPU# 0 slot 3.
  std::set<IpuRef> used = {{m1, 3}, {m1, 0}, {"not-in-cluster", 1}, {m1, 4}};
  IldMasks masks = MasksOf(layout, allowed, used);
  ASSERT_EQ(masks.allowed.size(), 1u);
  ASSERT_EQ(masks.used.size(), 1u);
  EXPECT_EQ(masks.allowed[0], uint64_t{0xF} | (uint64_t{0xF} << 60));
  EXPECT_EQ(masks.used[0], (uint64_t{1} << 4) | (uint64_t{1} << 7));
  EXPECT_EQ(layout.PositionOf({m1, 3})->second, 4u);
  EXPECT_EQ(layout.PositionOf({m1, 0})->second, 7u);
}

TEST(FabricPlacementMasksTest, ShortAllowedVectorLeavesTheRestNotAllowed) {
  ClusterLayout layout = PodLayout("pod128");  // 2 ILDs
  IldMasks masks = MasksOf(layout, std::vector<bool>(3, true), {});
  EXPECT_EQ(masks.allowed[0], uint64_t{0xFFF});
  EXPECT_EQ(masks.allowed[1], 0u);
  IldMasks none = MasksOf(layout, {}, {});
  EXPECT_EQ(none.allowed, std::vector<uint64_t>(2, 0));
  auto refused = Place(layout, none, PlacementOfSize(1));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(FabricPlacementMasksTest, RefusesMasksThatDoNotHaveOneEntryPerIld) {
  ClusterLayout layout = PodLayout("pod128");
  IldMasks ok = MasksOf(layout, std::vector<bool>(32, true), {});
  for (auto [allowed, used] : {std::pair<size_t, size_t>{1, 2}, {2, 1}, {3, 2}, {2, 0}, {0, 0}}) {
    SCOPED_TRACE(testing::Message() << allowed << " allowed, " << used << " used");
    IldMasks bad;
    bad.allowed.assign(allowed, ~uint64_t{0});
    bad.used.assign(used, 0);
    auto r = Place(layout, bad, PlacementOfSize(4));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(r.status().message(), HasSubstr("masks: need one per ILD (2)"));
  }
  EXPECT_TRUE(Place(layout, ok, PlacementOfSize(4)).ok());
}

// Random allowed subsets and used IPUs on pod256: every size and ILD count,
// filled until refused, gives the same answer both ways.
TEST(FabricPlacementMasksTest, ChoosesWhatPlacementFromSetsChooses) {
  ClusterLayout layout = PodLayout("pod256");
  std::mt19937 rng(42);
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(round);
    std::set<std::string> agents;
    for (const std::string& a : layout.cluster().agent_ids) {
      if (rng() % 8 != 0) agents.insert(a);
    }
    std::set<IpuRef> used;
    for (uint32_t ild = 0; ild < layout.num_ilds(); ++ild) {
      for (uint32_t t = 0; t < layout.ipus_per_ild(); ++t) {
        if (rng() % 4 == 0) used.insert(layout.IpuAt(ild, t));
      }
    }
    const std::vector<bool> allowed = Allowed(layout, agents);
    for (uint32_t size = 1; size <= 256; size *= 2) {
      for (uint32_t num_ilds : {0u, 1u, 2u, 4u, 8u}) {
        SCOPED_TRACE(testing::Message() << "size " << size << " num_ilds " << num_ilds);
        ExpectSamePlacement(
            Place(layout, agents, used, PlacementOfSize(size, num_ilds)),
            Place(layout, MasksOf(layout, allowed, used), PlacementOfSize(size, num_ilds)));
      }
    }
    // Fill with size-4 partitions until refused; both ways agree each time.
    for (int n = 0; n < 64; ++n) {
      auto a = Place(layout, agents, used, PlacementOfSize(4));
      auto b = Place(layout, MasksOf(layout, allowed, used), PlacementOfSize(4));
      ExpectSamePlacement(a, b);
      if (!a.ok()) break;
      for (const PartitionIpu& p : *a) used.insert(p.ipu);
    }
  }
}

TEST(FabricPlacementMasksTest, ExplicitIpusGiveTheSameAnswersAndErrors) {
  ClusterLayout layout = PodLayout("pod128");
  const std::vector<std::string>& ids = layout.cluster().agent_ids;
  std::set<std::string> agents(ids.begin(), ids.end());
  agents.erase(ids[2]);  // topology ids 8..11 of ILD 0 are outside the allocation
  std::set<IpuRef> used = {layout.IpuAt(1, 5)};
  const std::vector<bool> allowed = Allowed(layout, agents);
  auto block = [](uint32_t ild, uint32_t start, uint32_t size) {
    PlacementRequest r;
    r.size = size;
    for (uint32_t t = start; t < start + size; ++t) {
      PartitionIpu p;
      p.ild = ild;
      p.topology_id = t;
      r.explicit_ipus.push_back(p);
    }
    return r;
  };
  struct Case {
    PlacementRequest request;
    absl::StatusCode code;
  };
  PlacementRequest two_ilds = block(0, 0, 4);
  for (PartitionIpu p : block(1, 0, 4).explicit_ipus) two_ilds.explicit_ipus.push_back(p);
  two_ilds.size = 8;
  const std::vector<Case> cases = {
      {block(0, 0, 4), absl::StatusCode::kOk},
      {two_ilds, absl::StatusCode::kOk},
      {block(0, 8, 4), absl::StatusCode::kInvalidArgument},    // outside the allocation
      {block(1, 4, 4), absl::StatusCode::kResourceExhausted},  // IPU in use
      {block(0, 2, 4), absl::StatusCode::kInvalidArgument},    // not aligned
      {block(2, 0, 4), absl::StatusCode::kInvalidArgument},    // no ILD 2
      {block(0, 62, 4), absl::StatusCode::kInvalidArgument},   // past the ILD
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    auto from_sets = Place(layout, agents, used, cases[i].request);
    EXPECT_EQ(from_sets.status().code(), cases[i].code) << from_sets.status();
    ExpectSamePlacement(from_sets, Place(layout, MasksOf(layout, allowed, used), cases[i].request));
  }
}

}  // namespace
}  // namespace vipu::fabric
