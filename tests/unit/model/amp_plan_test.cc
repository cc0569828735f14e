// Products mapped to the AMP units and tiles: channel groupings, kernels,
// the fold of a narrow input into channels, and the split over the tiles.
#include "model/amp_plan.h"

#include "gtest/gtest.h"
#include "model/calibration.h"
#include "model/system_spec.h"

namespace vipu::model {
namespace {

Product Conv(double batch, double in_hw, double in, double out, double kernel, double stride) {
  const double out_hw = in_hw / stride;
  Product p;
  p.positions = batch * out_hw * out_hw;
  p.in_channels = in;
  p.out_channels = out;
  p.kernel_positions = kernel * kernel;
  p.input_stride = stride;
  return p;
}

// Share of the AMP peak the plan reaches.
double Efficiency(const Product& p, const SystemSpec& sys) {
  const ProductPlan plan = PlanProduct(p, sys, DefaultCalibration().elementwise_efficiency);
  const double peak_per_cycle = sys.peak_fp16_flops / sys.clock_hz;
  return ProductFlops(p) / (plan.cycles * peak_per_cycle);
}

TEST(ModelAmpPlanTest, AmpFiguresGiveTheDatasheetPeak) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  const double macs_per_cycle =
      sys.amp_input_channels * sys.amp_output_channels / sys.amp_cycles_per_position;
  EXPECT_NEAR(2 * macs_per_cycle * sys.tiles_per_ipu * sys.clock_hz, sys.peak_fp16_flops, 1e6);
  EXPECT_NEAR(sys.exchange_bytes_per_tile_cycle * sys.tiles_per_ipu * 1.325e9, 8e12, 1e9);
}

TEST(ModelAmpPlanTest, PlanStaysWithinTheTilesAndBelowPeak) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  for (const Product& p : {Conv(18, 56, 64, 64, 1, 1), Conv(18, 14, 256, 256, 3, 1),
                           Conv(18, 224, 3, 64, 7, 2), Conv(18, 7, 2048, 512, 1, 1)}) {
    const ProductPlan plan = PlanProduct(p, sys, 0.25);
    EXPECT_LE(plan.split_groups * plan.split_positions * plan.split_in * plan.split_out,
              sys.tiles_per_ipu);
    EXPECT_GT(plan.cycles, 0);
    EXPECT_NEAR(plan.cycles, plan.compute_cycles + plan.exchange_cycles + plan.reduction_cycles,
                1e-6 * plan.cycles);
    EXPECT_LT(Efficiency(p, sys), 1.0);
    EXPECT_GE(plan.supersteps, 1);
  }
}

TEST(ModelAmpPlanTest, ChannelsArePaddedToTheAmpGroups) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  Product sixteen;
  sixteen.positions = 4096;
  sixteen.in_channels = 1024;
  sixteen.out_channels = 16;
  Product nine = sixteen;
  nine.out_channels = 9;
  // Nine output channels take a whole group of sixteen on the AMP.
  EXPECT_DOUBLE_EQ(PlanProduct(nine, sys, 0.25).compute_cycles,
                   PlanProduct(sixteen, sys, 0.25).compute_cycles);
  EXPECT_LT(Efficiency(nine, sys), 0.6 * Efficiency(sixteen, sys));
}

TEST(ModelAmpPlanTest, TheThreeChannelStemFoldsItsKernelAndStillCostsMore) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  const Product stem = Conv(18, 224, 3, 64, 7, 2);
  const ProductPlan plan = PlanProduct(stem, sys, 0.25);
  // Three channels fill 3/16 of an AMP group; folding the kernel's width
  // (21 channels) or the whole kernel (147) fills far more.
  EXPECT_GT(plan.folded_channels, 3);
  const Product wide = Conv(18, 14, 256, 256, 3, 1);
  EXPECT_LT(Efficiency(stem, sys), Efficiency(wide, sys));
}

TEST(ModelAmpPlanTest, KernelShapeChangesTheCostOfTheSameFlops) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  // The same FLOPs as a 1x1 and as a 3x3 convolution (nine times the input
  // channels for the 1x1): the 3x3 reuses each input nine times from one
  // exchange, the 1x1 must receive nine times the input.
  const Product three = Conv(18, 28, 128, 128, 3, 1);
  const Product one = Conv(18, 28, 9 * 128, 128, 1, 1);
  EXPECT_DOUBLE_EQ(ProductFlops(three), ProductFlops(one));
  const ProductPlan p3 = PlanProduct(three, sys, 0.25);
  const ProductPlan p1 = PlanProduct(one, sys, 0.25);
  EXPECT_NE(p3.cycles, p1.cycles);
  EXPECT_LT(p3.exchange_cycles, p1.exchange_cycles);
}

TEST(ModelAmpPlanTest, OneByOneLayersRunBelowThreeByThree) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  // A 1x1 kernel does a ninth of a 3x3's work on each input it receives,
  // and each AMP item's fixed cycles buy fewer MACs.
  EXPECT_LT(Efficiency(Conv(18, 56, 64, 256, 1, 1), sys),
            Efficiency(Conv(18, 56, 64, 64, 3, 1), sys));
  EXPECT_LT(Efficiency(Conv(18, 7, 2048, 512, 1, 1), sys),
            Efficiency(Conv(18, 7, 512, 512, 3, 1), sys));
}

TEST(ModelAmpPlanTest, EmptyProductCostsNothing) {
  const SystemSpec sys = *SystemSpecForPreset("bow-pod16");
  EXPECT_EQ(PlanProduct(Product{}, sys, 0.25).cycles, 0);
  EXPECT_EQ(ProductFlops(Product{}), 0);
}

}  // namespace
}  // namespace vipu::model
