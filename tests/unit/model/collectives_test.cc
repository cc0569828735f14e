// Ring collective formulas, replica layouts and the GW-Link phase of the reduction.
#include "model/collectives.h"

#include "gtest/gtest.h"
#include "model/system_spec.h"

namespace vipu::model {
namespace {

TEST(ModelCollectivesTest, RingFormulas) {
  // 4 members, 4 MB at 1 GB/s, 1 us a step: 3 steps + 3/4 of the data.
  EXPECT_NEAR(RingReduceScatterSeconds(4e6, 4, 1e9, 1e-6), 3e-6 + 3e-3, 1e-12);
  EXPECT_NEAR(RingAllReduceSeconds(4e6, 4, 1e9, 1e-6), 2 * (3e-6 + 3e-3), 1e-12);
  EXPECT_EQ(RingAllReduceSeconds(4e6, 1, 1e9, 1e-6), 0);
  EXPECT_EQ(RingAllReduceSeconds(0, 8, 1e9, 1e-6), 0);
}

TEST(ModelCollectivesTest, LayoutCountsIldsAndTorus) {
  const SystemSpec pod256 = *SystemSpecForPreset("bow-pod256");
  EXPECT_EQ(LayoutFor(16, 4, pod256).ilds, 1u);
  EXPECT_TRUE(LayoutFor(16, 4, pod256).torus);
  EXPECT_FALSE(LayoutFor(4, 4, pod256).torus);
  EXPECT_EQ(LayoutFor(32, 4, pod256).ilds, 2u);
  EXPECT_EQ(LayoutFor(64, 4, pod256).ilds, 4u);
  EXPECT_FALSE(LayoutFor(4, 4, *SystemSpecForPreset("pod16")).torus);
}

TEST(ModelCollectivesTest, StageGroupsShareTheRails) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod64");
  const Calibration& cal = DefaultCalibration();
  const double one = IntraIldRingBandwidth(LayoutFor(64, 1, sys), sys, cal);
  const double four = IntraIldRingBandwidth(LayoutFor(16, 4, sys), sys, cal);
  const double four_mesh = IntraIldRingBandwidth(LayoutFor(8, 4, sys), sys, cal);
  // 2 rail links x 16 GB/s x 0.85, both ring directions.
  EXPECT_NEAR(one, 2 * 2 * 16e9 * 0.85, 1);
  EXPECT_NEAR(four, one / 2, 1);
  EXPECT_NEAR(four_mesh, one / 4, 1);
}

TEST(ModelCollectivesTest, ThreePhaseAddsGwLinkTime) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod256");
  const Calibration& cal = DefaultCalibration();
  const CollectiveTime in_one = GradientReductionTime(100e6, LayoutFor(16, 4, sys), sys, cal);
  const CollectiveTime across = GradientReductionTime(100e6, LayoutFor(64, 4, sys), sys, cal);
  EXPECT_EQ(in_one.gw_link_s, 0);
  EXPECT_GT(across.gw_link_s, 0);
  EXPECT_NEAR(across.total_s, across.ipu_link_s + across.gw_link_s, 1e-15);
  EXPECT_GT(across.total_s, in_one.total_s);
  EXPECT_EQ(GradientReductionTime(100e6, LayoutFor(1, 4, sys), sys, cal).total_s, 0);
}

TEST(ModelCollectivesTest, CrossIldSyncFollowsTheGwTopology) {
  const SystemSpec looped = *SystemSpecForPreset("pod256");
  const SystemSpec switched = *SystemSpecForPreset("bow-pod256");
  ASSERT_EQ(looped.cluster_topology, fabric::ClusterTopology::kLooped);
  ASSERT_EQ(switched.cluster_topology, fabric::ClusterTopology::kSwitched);
  EXPECT_EQ(CrossIldSyncSeconds(1, looped), 0);
  // Two ILDs are one GW step apart either way: a gather and a release.
  EXPECT_DOUBLE_EQ(CrossIldSyncSeconds(2, looped), 2 * looped.gw_link_latency_s);
  EXPECT_DOUBLE_EQ(CrossIldSyncSeconds(2, looped), CrossIldSyncSeconds(2, switched));
  // A ring of ILDs grows its reach; the switch reaches all in one step.
  EXPECT_GT(CrossIldSyncSeconds(4, looped), CrossIldSyncSeconds(4, switched));
  EXPECT_GT(CrossIldSyncSeconds(8, looped), CrossIldSyncSeconds(4, looped));
  EXPECT_DOUBLE_EQ(CrossIldSyncSeconds(8, switched), CrossIldSyncSeconds(4, switched));
  const Calibration& cal = DefaultCalibration();
  EXPECT_GT(GwRingStepSeconds(2, looped), IntraIldRingStepSeconds(looped, cal));
  EXPECT_DOUBLE_EQ(IntraIldRingStepSeconds(looped, cal),
                   cal.superstep_s + looped.ipu_link_latency_s);
}

TEST(ModelCollectivesTest, GwPhaseGrowsWithTheIlds) {
  const SystemSpec sys = *SystemSpecForPreset("pod256");
  const Calibration& cal = DefaultCalibration();
  const CollectiveTime two = GradientReductionTime(100e6, LayoutFor(32, 4, sys), sys, cal);
  const CollectiveTime four = GradientReductionTime(100e6, LayoutFor(64, 4, sys), sys, cal);
  EXPECT_EQ(two.gw_link_s > 0, true);
  EXPECT_GT(four.gw_link_s, two.gw_link_s);
}

// The GW-Link phase moves each machine's four shards at the gateway's
// effective throughput: halving it adds the same bytes' time again. A
// throughput above what the links carry is held to their payload rate.
TEST(ModelCollectivesTest, GwPhaseMovesAtTheGatewaysThroughputCappedByTheLinks) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod256");
  const ReplicaLayout layout = LayoutFor(64, 4, sys);  // 16 replicas in each of 4 ILDs
  const double bytes = 100e6;
  Calibration fast = DefaultCalibration();
  Calibration slow = fast;
  slow.gw_effective_bps_per_machine = fast.gw_effective_bps_per_machine / 2;
  const double a = GradientReductionTime(bytes, layout, sys, fast).gw_link_s;
  const double b = GradientReductionTime(bytes, layout, sys, slow).gw_link_s;
  const double machine_bytes = bytes / 16 * 4;
  const double moved = 2.0 * 3 / 4 * machine_bytes;
  EXPECT_NEAR(b - a, moved / fast.gw_effective_bps_per_machine, 1e-9);
  Calibration unlimited = fast;
  unlimited.gw_effective_bps_per_machine = 1e15;
  Calibration at_line = fast;
  at_line.gw_effective_bps_per_machine = GwLinkPayloadBps(sys);
  EXPECT_DOUBLE_EQ(GradientReductionTime(bytes, layout, sys, unlimited).gw_link_s,
                   GradientReductionTime(bytes, layout, sys, at_line).gw_link_s);
  EXPECT_NEAR(GwLinkPayloadBps(sys), 2 * 12.5e9 * sys.ethernet_payload_efficiency, 1);
}

}  // namespace
}  // namespace vipu::model
