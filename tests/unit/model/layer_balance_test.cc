// BalanceLayers: even splits, work pinned to the first or last IPU, and PredictStep's use.
#include "model/layer_balance.h"

#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

using ::testing::ElementsAre;

TEST(ModelLayerBalanceTest, EqualLayersSplitEvenly) {
  EXPECT_THAT(BalanceLayers(std::vector<double>(24, 1.0), 0, 0, 4), ElementsAre(6, 6, 6, 6));
  EXPECT_THAT(BalanceLayers(std::vector<double>(12, 1.0), 0, 0, 1), ElementsAre(12));
}

TEST(ModelLayerBalanceTest, WorkPinnedToTheFirstIpuTakesLayersAway) {
  // Embedding and heads worth four layers: IPU 0 keeps the fewest.
  EXPECT_THAT(BalanceLayers(std::vector<double>(24, 1.0), 4.0, 0, 4), ElementsAre(3, 7, 7, 7));
  EXPECT_THAT(BalanceLayers(std::vector<double>(12, 1.0), 5.0, 0, 4), ElementsAre(0, 4, 4, 4));
}

TEST(ModelLayerBalanceTest, WorkPinnedToTheLastIpu) {
  EXPECT_THAT(BalanceLayers(std::vector<double>(8, 1.0), 0, 2.0, 2), ElementsAre(5, 3));
}

TEST(ModelLayerBalanceTest, UnequalLayersMinimiseTheBottleneck) {
  const std::vector<double> t = {5, 1, 1, 1, 1, 1};
  EXPECT_THAT(BalanceLayers(t, 0, 0, 2), ElementsAre(1, 5));
}

TEST(ModelLayerBalanceTest, MoreIpusThanLayersLeavesSomeEmpty) {
  const std::vector<uint32_t> split = BalanceLayers(std::vector<double>(3, 1.0), 0, 0, 4);
  EXPECT_EQ(std::accumulate(split.begin(), split.end(), 0u), 3u);
  for (uint32_t n : split) EXPECT_LE(n, 1u);
}

TEST(ModelLayerBalanceTest, PredictStepBalancesWhenNoSplitIsGiven) {
  Workload w = *WorkloadPreset("bert-large");
  w.micro_batch = 8;
  w.grad_accum = 64;
  w.ipus_per_replica = 4;
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->layers_auto_balanced);
  ASSERT_EQ(p->layers_per_ipu.size(), 4u);
  EXPECT_EQ(std::accumulate(p->layers_per_ipu.begin(), p->layers_per_ipu.end(), 0u), 24u);
  // IPU 0 carries the embedding and heads, so it never takes more layers.
  for (uint32_t i = 1; i < 4; ++i) EXPECT_LE(p->layers_per_ipu[0], p->layers_per_ipu[i]);

  // The balanced split is at least as fast as a lopsided one.
  w.layers_per_ipu = {9, 5, 5, 5};
  absl::StatusOr<StepPrediction> lopsided = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_TRUE(lopsided.ok());
  EXPECT_FALSE(lopsided->layers_auto_balanced);
  EXPECT_THAT(lopsided->layers_per_ipu, ElementsAre(9, 5, 5, 5));
  EXPECT_LT(p->beat_s, lopsided->beat_s);
}

TEST(ModelLayerBalanceTest, DecoderHeadPushesLayersOffIpuZero) {
  Workload w = *WorkloadPreset("gpt2-small");
  w.seq_len = 1024;
  w.grad_accum = 64;
  w.ipus_per_replica = 4;
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("pod16"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LT(p->layers_per_ipu[0], p->layers_per_ipu[3]);
}

TEST(ModelLayerBalanceTest, ConvNetHeadGoesToTheLastIpu) {
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 8;
  w.grad_accum = 32;
  w.ipus_per_replica = 2;
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->layers_per_ipu[0] + p->layers_per_ipu[1], 16u);
  EXPECT_THAT(p->stages[0].extras, ElementsAre("stem"));
  EXPECT_THAT(p->stages[1].extras, ElementsAre("pool+fc"));
}

}  // namespace
}  // namespace vipu::model
