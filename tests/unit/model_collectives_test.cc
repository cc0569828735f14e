// Ring collective formulas, replica layouts and the GW-Link phase of the reduction.
#include "gtest/gtest.h"
#include "model/collectives.h"
#include "model/system_spec.h"

namespace vipu::fabric::model {
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

}  // namespace
}  // namespace vipu::fabric::model
