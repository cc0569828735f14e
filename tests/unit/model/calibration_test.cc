// The two runs the constants were tuned on (docs/model.md), and the published figures they
// were not, replayed through the library.
#include <cmath>

#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

Workload Bert(const char* preset, uint32_t micro_batch, uint32_t grad_accum, uint32_t replicas,
              std::vector<uint32_t> split) {
  Workload w = *WorkloadPreset(preset);
  w.seq_len = 128;
  w.micro_batch = micro_batch;
  w.grad_accum = grad_accum;
  w.replicas = replicas;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = std::move(split);
  w.optimizer = Optimizer::kLamb;
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  w.recompute = true;
  return w;
}

double RelativeError(double predicted, double measured) { return predicted / measured - 1; }

TEST(ModelCalibrationTest, BertBasePod4SeedWithinFivePercent) {
  // pretrain_base_128_pod4 on a Bow Pod: 4035.0 samples/s.
  const Workload w = Bert("bert-base", 32, 2048, 1, {0, 4, 4, 4});
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod4"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->samples_per_step, 65536u);
  EXPECT_LT(std::abs(RelativeError(p->samples_per_sec, 4035.0)), 0.05) << p->samples_per_sec;
  EXPECT_LT(std::abs(RelativeError(p->step_time_s, 16.245)), 0.05) << p->step_time_s;
}

TEST(ModelCalibrationTest, BertLargePod64SeedWithinFivePercent) {
  // pretrain_large_128_POD64: 16 replicas x 4 IPUs, 17692.1 samples/s.
  const Workload w = Bert("bert-large", 8, 512, 16, {3, 7, 7, 7});
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod64"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->samples_per_step, 65536u);
  EXPECT_LT(std::abs(RelativeError(p->samples_per_sec, 17692.1)), 0.05) << p->samples_per_sec;
}

TEST(ModelCalibrationTest, UnseenBertLargePod16StaysClose) {
  // Published TF2 figure, not used for tuning: 4527 sequences/s.
  const Workload w = Bert("bert-large", 8, 2040, 4, {3, 7, 7, 7});
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LT(std::abs(RelativeError(p->sequences_per_sec, 4527)), 0.10) << p->sequences_per_sec;
}

TEST(ModelCalibrationTest, UnseenResNet50BowPod16StaysClose) {
  // Published 37,061 images/s, 16 replicas x 1 IPU, replayed with the
  // benchmark's own configuration (graphcore/examples configs.yml
  // `resnet50`): micro-batch 18, GA 57, recomputation from checkpoints.
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 18;
  w.grad_accum = 57;
  w.replicas = 16;
  w.recompute = true;
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LT(std::abs(RelativeError(p->samples_per_sec, 37061)), 0.15) << p->samples_per_sec;
}

TEST(ModelCalibrationTest, ChipPeaksFollowTheClock) {
  const SystemSpec m2000 = *SystemSpecForPreset("pod64");
  const SystemSpec bow = *SystemSpecForPreset("bow-pod64");
  EXPECT_NEAR(m2000.peak_fp16_flops, 249.7e12, 0.5e12);
  EXPECT_NEAR(bow.peak_fp16_flops, 348.6e12, 0.5e12);
  EXPECT_NEAR(m2000.sram_bandwidth_bps, 47.5e12, 0.1e12);
  EXPECT_EQ(bow.num_ipus, 64u);
  EXPECT_EQ(SystemSpecForPreset("pod256")->num_ilds, 4u);
}

}  // namespace
}  // namespace vipu::model
