// fabric::Place: every size, alignment across ILDs, best fit, allowed agents, explicit IPUs.
#include "fabric/placement.h"

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/pod_layout.h"

namespace vipu::fabric {
namespace {

using test::PlacementOfSize;
using test::PodLayout;
using ::testing::HasSubstr;

std::set<std::string> AllAgents(const ClusterLayout& layout) {
  return {layout.cluster().agent_ids.begin(), layout.cluster().agent_ids.end()};
}

// Marks (ild, topology id) positions used.
void Use(const ClusterLayout& layout, std::set<IpuRef>& used, uint32_t ild,
         const std::vector<uint32_t>& tids) {
  for (uint32_t t : tids) used.insert(layout.IpuAt(ild, t));
}

void UseAll(std::set<IpuRef>& used, const std::vector<PartitionIpu>& ipus) {
  for (const auto& p : ipus) ASSERT_TRUE(used.insert(p.ipu).second) << "IPU placed twice";
}

std::vector<uint32_t> Tids(const std::vector<PartitionIpu>& ipus) {
  std::vector<uint32_t> out;
  for (const auto& p : ipus) out.push_back(p.topology_id);
  return out;
}

std::vector<uint32_t> Range(uint32_t from, uint32_t count) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < count; ++i) out.push_back(from + i);
  return out;
}

// Checks the structural promises of a placement: equal aligned segments in
// consecutive ILDs, routing ids in order, physical IPUs from the layout.
void ExpectWellFormed(const ClusterLayout& layout, const std::vector<PartitionIpu>& ipus,
                      uint32_t size, uint32_t num_ilds) {
  ASSERT_EQ(ipus.size(), size);
  const uint32_t segment = size / num_ilds;
  for (uint32_t i = 0; i < size; ++i) {
    const PartitionIpu& p = ipus[i];
    EXPECT_EQ(p.ild_routing, i / segment);
    EXPECT_EQ(p.routing_id, i % segment);
    EXPECT_EQ(p.ild, ipus[0].ild + i / segment);
    const uint32_t start = ipus[(i / segment) * segment].topology_id;
    EXPECT_EQ(start % segment, 0u);
    EXPECT_EQ(p.topology_id, start + i % segment);
    EXPECT_LT(p.topology_id, layout.ipus_per_ild());
    EXPECT_EQ(p.ipu, layout.IpuAt(p.ild, p.topology_id));
  }
}

TEST(FabricPlacementTest, EverySizeOnAnEmptyPod256) {
  ClusterLayout layout = PodLayout("pod256");
  for (uint32_t size = 1; size <= 256; size *= 2) {
    SCOPED_TRACE(size);
    auto ipus = Place(layout, AllAgents(layout), {}, PlacementOfSize(size));
    ASSERT_TRUE(ipus.ok()) << ipus.status();
    const uint32_t ilds = size > 64 ? size / 64 : 1;
    ExpectWellFormed(layout, *ipus, size, ilds);
    EXPECT_EQ(ipus->front().ild, 0u);
    EXPECT_EQ(ipus->front().topology_id, 0u);
    EXPECT_EQ(ipus->front().ipu, (IpuRef{"ag1", 3}));
    EXPECT_EQ(ipus->back().ild, ilds - 1);
  }
}

TEST(FabricPlacementTest, EverySizeFillsPod256ExactlyThenIsExhausted) {
  ClusterLayout layout = PodLayout("pod256");
  for (uint32_t size = 1; size <= 256; size *= 2) {
    SCOPED_TRACE(size);
    std::set<IpuRef> used;
    for (uint32_t n = 0; n < 256 / size; ++n) {
      auto ipus = Place(layout, AllAgents(layout), used, PlacementOfSize(size));
      ASSERT_TRUE(ipus.ok()) << "partition " << n << ": " << ipus.status();
      ExpectWellFormed(layout, *ipus, size, size > 64 ? size / 64 : 1);
      UseAll(used, *ipus);
    }
    EXPECT_EQ(used.size(), 256u);
    auto more = Place(layout, AllAgents(layout), used, PlacementOfSize(size));
    ASSERT_FALSE(more.ok());
    EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
    // A clause about the pod, for the caller to set in its own sentence.
    EXPECT_THAT(std::string(more.status().message()), ::testing::StartsWith("no "));
    EXPECT_THAT(more.status().message(), HasSubstr(absl::StrCat("cluster ", layout.cluster().id)));
  }
}

TEST(FabricPlacementTest, SegmentsAreAlignedAtOneOffsetWhenSpreadOverIlds) {
  ClusterLayout layout = PodLayout("pod128");
  std::set<IpuRef> used;
  Use(layout, used, 0, {0});
  Use(layout, used, 1, {40});
  // 2 ILDs x 16 at one offset free in both: 16 or 48, each next to one used
  // IPU; the tie goes to the lower offset.
  auto ipus = Place(layout, AllAgents(layout), used, PlacementOfSize(32, 2));
  ASSERT_TRUE(ipus.ok()) << ipus.status();
  ExpectWellFormed(layout, *ipus, 32, 2);
  EXPECT_EQ((*ipus)[0].ild, 0u);
  EXPECT_EQ((*ipus)[0].topology_id, 16u);
  EXPECT_EQ((*ipus)[16].ild, 1u);
  EXPECT_EQ((*ipus)[16].topology_id, 16u);
}

TEST(FabricPlacementTest, SmallNumIldsGivesSmallSegments) {
  ClusterLayout layout = PodLayout("pod256");
  auto ipus = Place(layout, AllAgents(layout), {}, PlacementOfSize(4, 4));
  ASSERT_TRUE(ipus.ok()) << ipus.status();
  ExpectWellFormed(layout, *ipus, 4, 4);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ((*ipus)[i].ild, i);
}

TEST(FabricPlacementTest, ImpossibleShapesAreInvalid) {
  ClusterLayout pod128 = PodLayout("pod128");
  struct Case {
    uint32_t size;
    uint32_t num_ilds;
    std::string message;
  };
  const std::vector<Case> cases = {
      {0, 0, "size: must be a power of two"},
      {3, 0, "size: must be a power of two"},
      {100, 0, "size: must be a power of two"},
      {256, 0, "size: 256 IPUs are more than cluster pod128 holds (2 ILDs of 64 IPUs)"},
      {128, 1, "num_ilds"},
      {64, 3, "num_ilds: must be a power of two"},
      {64, 4, "num_ilds: 4 ILDs asked for, but cluster pod128 has only 2 ILDs"},
      {2, 4, "num_ilds: cannot exceed the size"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.size << "/" << c.num_ilds);
    auto ipus = Place(pod128, AllAgents(pod128), {}, PlacementOfSize(c.size, c.num_ilds));
    ASSERT_FALSE(ipus.ok());
    EXPECT_EQ(ipus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(ipus.status().message(), HasSubstr(c.message));
  }
}

TEST(FabricPlacementTest, SinglesPackSoLargerBlocksStayFree) {
  ClusterLayout layout = PodLayout("pod128");
  std::set<IpuRef> used;
  for (uint32_t i = 0; i < 3; ++i) {
    auto one = Place(layout, AllAgents(layout), used, PlacementOfSize(1));
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(one->front().ild, 0u);
    EXPECT_EQ(one->front().topology_id, i);
    UseAll(used, *one);
  }
  auto four = Place(layout, AllAgents(layout), used, PlacementOfSize(4));
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(Tids(*four), Range(4, 4));
  UseAll(used, *four);
  auto whole = Place(layout, AllAgents(layout), used, PlacementOfSize(64));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->front().ild, 1u);
}

// A first-fit allocator would put the single IPU at topology id 0 and then
// scatter the 4, 8 and 16 so that the 32 no longer fits; best fit fills the
// hole next to the used IPUs and every request fits exactly.
TEST(FabricPlacementTest, BestFitFillsHolesInsteadOfBreakingBlocks) {
  ClusterLayout layout = PodLayout("pod64");
  std::set<IpuRef> used;
  Use(layout, used, 0, {4, 5, 6});
  const std::vector<std::pair<uint32_t, std::vector<uint32_t>>> expected = {
      {1, {7}}, {4, Range(0, 4)}, {8, Range(8, 8)}, {16, Range(16, 16)}, {32, Range(32, 32)}};
  for (const auto& [size, tids] : expected) {
    SCOPED_TRACE(size);
    auto ipus = Place(layout, AllAgents(layout), used, PlacementOfSize(size));
    ASSERT_TRUE(ipus.ok()) << ipus.status();
    EXPECT_EQ(Tids(*ipus), tids);
    UseAll(used, *ipus);
  }
  EXPECT_EQ(used.size(), 64u);
}

TEST(FabricPlacementTest, BestFitPrefersTheFullerIld) {
  ClusterLayout layout = PodLayout("pod128");
  std::set<IpuRef> used;
  Use(layout, used, 1, Range(0, 63));  // ILD 1 has only topology id 63 free
  auto one = Place(layout, AllAgents(layout), used, PlacementOfSize(1));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->front().ild, 1u);
  EXPECT_EQ(one->front().topology_id, 63u);
  UseAll(used, *one);
  auto whole = Place(layout, AllAgents(layout), used, PlacementOfSize(64));
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->front().ild, 0u);
}

TEST(FabricPlacementTest, MultiIldWindowAvoidsUsedIlds) {
  ClusterLayout layout = PodLayout("pod256");
  std::set<IpuRef> used;
  Use(layout, used, 0, {17});
  auto ipus = Place(layout, AllAgents(layout), used, PlacementOfSize(128));
  ASSERT_TRUE(ipus.ok()) << ipus.status();
  ExpectWellFormed(layout, *ipus, 128, 2);
  EXPECT_EQ(ipus->front().ild, 1u);
  auto all = Place(layout, AllAgents(layout), used, PlacementOfSize(256));
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(all.status().message(), HasSubstr("consecutive ILDs"));
}

// The POD128 sequence of the BERT benchmark: 32 IPUs, then 64 over 2 ILDs.
// The 64 take the same topology ids 32..63 in both ILDs, so each of their
// machines is GW-linked to its twin.
TEST(FabricPlacementTest, MultiIldSegmentsSitAtTheSamePositions) {
  ClusterLayout layout = PodLayout("pod128");
  std::set<IpuRef> used;
  auto a = Place(layout, AllAgents(layout), used, PlacementOfSize(32));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->front().ild, 0u);
  EXPECT_EQ(Tids(*a), Range(0, 32));
  UseAll(used, *a);
  auto b = Place(layout, AllAgents(layout), used, PlacementOfSize(64, 2));
  ASSERT_TRUE(b.ok()) << b.status();
  ExpectWellFormed(layout, *b, 64, 2);
  for (const PartitionIpu& p : *b) EXPECT_GE(p.topology_id, 32u) << p.ild;
  for (uint32_t i = 0; i < 32; ++i) {
    EXPECT_EQ((*b)[i].ild, 0u);
    EXPECT_EQ((*b)[32 + i].ild, 1u);
    EXPECT_EQ((*b)[i].topology_id, (*b)[32 + i].topology_id);
  }
}

// Free blocks at different offsets in the two ILDs do not make a partition:
// the create is refused and says why.
TEST(FabricPlacementTest, MultiIldRefusesUnalignedFreeSegments) {
  ClusterLayout layout = PodLayout("pod128");
  std::set<IpuRef> used;
  Use(layout, used, 0, Range(0, 32));   // ILD 0: 32..63 free
  Use(layout, used, 1, Range(32, 32));  // ILD 1: 0..31 free
  auto b = Place(layout, AllAgents(layout), used, PlacementOfSize(64, 2));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("at the same topology ids in each"));
  // A partition of 32 in one ILD still fits.
  auto single = Place(layout, AllAgents(layout), used, PlacementOfSize(32));
  EXPECT_TRUE(single.ok()) << single.status();
}

TEST(FabricPlacementTest, OnlyAllowedAgentsAreUsed) {
  ClusterLayout layout = PodLayout("pod64");
  const std::set<std::string> allowed = {"ag5", "ag6", "ag7", "ag8"};  // topology ids 16..31
  auto one = Place(layout, allowed, {}, PlacementOfSize(1));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->front().topology_id, 16u);
  EXPECT_EQ(one->front().ipu.agent_id, "ag5");
  auto sixteen = Place(layout, allowed, {}, PlacementOfSize(16));
  ASSERT_TRUE(sixteen.ok());
  EXPECT_EQ(Tids(*sixteen), Range(16, 16));
  auto too_big = Place(layout, allowed, {}, PlacementOfSize(32));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
  // Agents 4 and 5 straddle an 8-block boundary: 8 cannot be placed there.
  auto straddle = Place(layout, {"ag4", "ag5"}, {}, PlacementOfSize(8));
  EXPECT_EQ(straddle.status().code(), absl::StatusCode::kResourceExhausted);
  auto none = Place(layout, {}, {}, PlacementOfSize(1));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(FabricPlacementTest, AllowedAgentsMustCoverConsecutiveIlds) {
  ClusterLayout layout = PodLayout("pod256");
  std::set<std::string> ilds_1_2, ilds_0_2;
  for (int i = 1; i <= 64; ++i) {
    const std::string id = "ag" + std::to_string(i);
    const int ild = (i - 1) / 16;
    if (ild == 1 || ild == 2) ilds_1_2.insert(id);
    if (ild == 0 || ild == 2) ilds_0_2.insert(id);
  }
  auto ok = Place(layout, ilds_1_2, {}, PlacementOfSize(128));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->front().ild, 1u);
  EXPECT_EQ(ok->back().ild, 2u);
  auto split = Place(layout, ilds_0_2, {}, PlacementOfSize(128));
  EXPECT_EQ(split.status().code(), absl::StatusCode::kResourceExhausted);
}

// Timing of this case lives in bench/placement_list_bench.cc.
TEST(FabricPlacementTest, FragmentedPod256PlacesIntoTheFreeIld) {
  ClusterLayout layout = PodLayout("pod256");
  const auto agents = AllAgents(layout);
  // ILDs 0..2: 90% used, free IPUs scattered; ILD 3 free.
  std::set<IpuRef> used;
  for (uint32_t ild = 0; ild < 3; ++ild) {
    for (uint32_t t = 0; t < 64; ++t) {
      if (t % 10 != 3) used.insert(layout.IpuAt(ild, t));
    }
  }
  std::set<IpuRef> all_fragmented = used;
  for (uint32_t t = 0; t < 64; ++t) {
    if (t % 10 != 3) all_fragmented.insert(layout.IpuAt(3, t));
  }
  auto ipus = Place(layout, agents, used, PlacementOfSize(64));
  ASSERT_TRUE(ipus.ok());
  EXPECT_EQ(ipus->front().ild, 3u);
  auto none = Place(layout, agents, all_fragmented, PlacementOfSize(64));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
}

PlacementRequest Explicit(uint32_t size, const std::vector<std::pair<uint32_t, uint32_t>>& pos,
                          uint32_t num_ilds = 0) {
  PlacementRequest r;
  r.size = size;
  r.num_ilds = num_ilds;
  for (const auto& [ild, tid] : pos) {
    PartitionIpu p;
    p.ild = ild;
    p.topology_id = tid;
    r.explicit_ipus.push_back(p);
  }
  return r;
}

TEST(FabricPlacementExplicitTest, ValidBlockInAnyOrderIsNormalised) {
  ClusterLayout layout = PodLayout("pod64");
  auto ipus = Place(layout, AllAgents(layout), {}, Explicit(4, {{0, 10}, {0, 8}, {0, 11}, {0, 9}}));
  ASSERT_TRUE(ipus.ok()) << ipus.status();
  ExpectWellFormed(layout, *ipus, 4, 1);
  EXPECT_EQ(Tids(*ipus), Range(8, 4));
  EXPECT_EQ((*ipus)[0].ipu, (IpuRef{"ag3", 3}));
}

TEST(FabricPlacementExplicitTest, ValidMultiIldListedOutOfOrder) {
  ClusterLayout layout = PodLayout("pod256");
  std::vector<std::pair<uint32_t, uint32_t>> pos;
  for (uint32_t t = 0; t < 16; ++t) pos.push_back({2, 16 + t});
  for (uint32_t t = 0; t < 16; ++t) pos.push_back({1, 16 + t});
  auto ipus = Place(layout, AllAgents(layout), {}, Explicit(32, pos, 2));
  ASSERT_TRUE(ipus.ok()) << ipus.status();
  ASSERT_EQ(ipus->size(), 32u);
  EXPECT_EQ((*ipus)[0].ild, 1u);
  EXPECT_EQ((*ipus)[0].ild_routing, 0u);
  EXPECT_EQ((*ipus)[0].topology_id, 16u);
  EXPECT_EQ((*ipus)[16].ild, 2u);
  EXPECT_EQ((*ipus)[16].ild_routing, 1u);
  EXPECT_EQ((*ipus)[16].topology_id, 16u);
  EXPECT_EQ((*ipus)[31].routing_id, 15u);
}

TEST(FabricPlacementExplicitTest, InvalidListsAreRefused) {
  ClusterLayout layout = PodLayout("pod256");
  struct Case {
    std::string what;
    PlacementRequest request;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"size not a power of two", Explicit(3, {{0, 0}, {0, 1}, {0, 2}}), "size: must be a power"},
      {"count differs from size", Explicit(4, {{0, 0}, {0, 1}}), "2 IPUs listed"},
      {"ILD outside cluster", Explicit(1, {{4, 0}}), "outside cluster"},
      {"topology id outside ILD", Explicit(1, {{0, 64}}), "outside cluster"},
      {"duplicate", Explicit(2, {{0, 1}, {0, 1}}), "more than once"},
      {"not aligned", Explicit(4, {{0, 2}, {0, 3}, {0, 4}, {0, 5}}), "not an aligned block of 4"},
      {"not contiguous", Explicit(4, {{0, 0}, {0, 1}, {0, 2}, {0, 4}}), "not an aligned block"},
      {"unequal segments", Explicit(4, {{0, 0}, {0, 1}, {0, 2}, {1, 0}}), "same number of IPUs"},
      {"three ILDs", Explicit(4, {{0, 0}, {0, 1}, {1, 0}, {2, 0}}), "power-of-two number of ILDs"},
      {"ILDs not consecutive", Explicit(2, {{0, 0}, {2, 0}}), "consecutive"},
      {"segments at other positions", Explicit(4, {{0, 0}, {0, 1}, {1, 2}, {1, 3}}),
       "segments must sit at the same topology ids in every ILD"},
      {"num_ilds disagrees", Explicit(2, {{0, 0}, {0, 1}}, 2), "num_ilds: is 2"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto ipus = Place(layout, AllAgents(layout), {}, c.request);
    ASSERT_FALSE(ipus.ok());
    EXPECT_EQ(ipus.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(ipus.status().message(), HasSubstr(c.message));
  }
}

TEST(FabricPlacementExplicitTest, OutsideAllocationIsInvalid) {
  ClusterLayout layout = PodLayout("pod64");
  auto ipus = Place(layout, {"ag1"}, {}, Explicit(8, [] {
                      std::vector<std::pair<uint32_t, uint32_t>> pos;
                      for (uint32_t t = 0; t < 8; ++t) pos.push_back({0, t});
                      return pos;
                    }()));
  ASSERT_FALSE(ipus.ok());
  EXPECT_EQ(ipus.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ipus.status().message(), HasSubstr("agent ag2"));
  EXPECT_THAT(ipus.status().message(), HasSubstr("outside the allocation"));
}

TEST(FabricPlacementExplicitTest, UsedIpuIsExhaustedAndNamed) {
  ClusterLayout layout = PodLayout("pod64");
  std::set<IpuRef> used = {IpuRef{"ag1", 1}};  // topology id 2
  auto ipus = Place(layout, AllAgents(layout), used, Explicit(4, {{0, 0}, {0, 1}, {0, 2}, {0, 3}}));
  ASSERT_FALSE(ipus.ok());
  EXPECT_EQ(ipus.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(ipus.status().message(), HasSubstr("topology id 2: agent ag1 IPU 1"));
  EXPECT_THAT(ipus.status().message(), HasSubstr("already in use"));
}

}  // namespace
}  // namespace vipu::fabric
