// Directions the model must get right whatever the constants.
#include <cmath>

#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

Workload BertLarge() {
  Workload w = *WorkloadPreset("bert-large");
  w.micro_batch = 8;
  w.grad_accum = 64;
  w.replicas = 4;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = {3, 7, 7, 7};
  return w;
}

StepPrediction Predict(const Workload& w, const char* system) {
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset(system));
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : StepPrediction{};
}

TEST(ModelSanityTest, MoreReplicasGiveMoreThroughput) {
  Workload w = BertLarge();
  double previous = 0;
  for (uint32_t replicas : {1u, 2u, 4u, 8u, 16u, 32u, 64u}) {
    w.replicas = replicas;
    const StepPrediction p = Predict(w, "bow-pod256");
    EXPECT_GT(p.samples_per_sec, previous) << replicas << " replicas";
    previous = p.samples_per_sec;
  }
}

TEST(ModelSanityTest, ScalingIsSublinearAcrossIlds) {
  Workload w = BertLarge();
  w.replicas = 16;
  const StepPrediction one_ild = Predict(w, "bow-pod256");
  w.replicas = 64;
  const StepPrediction four_ilds = Predict(w, "bow-pod256");
  EXPECT_EQ(one_ild.ilds_spanned, 1u);
  EXPECT_EQ(four_ilds.ilds_spanned, 4u);
  EXPECT_EQ(one_ild.gw_link_collectives_s, 0);
  EXPECT_GT(four_ilds.gw_link_collectives_s, 0);
  EXPECT_LT(four_ilds.samples_per_sec, 4 * one_ild.samples_per_sec);
  EXPECT_GT(four_ilds.samples_per_sec, 3 * one_ild.samples_per_sec);
}

TEST(ModelSanityTest, MoreGradientAccumulationShrinksCommunication) {
  Workload w = BertLarge();
  double previous = 1;
  for (uint32_t ga : {8u, 32u, 128u, 512u}) {
    w.grad_accum = ga;
    const StepPrediction p = Predict(w, "bow-pod16");
    EXPECT_LT(p.communication_fraction, previous) << "grad_accum " << ga;
    previous = p.communication_fraction;
  }
}

TEST(ModelSanityTest, BowIsFasterThanM2000ByAtMostTheClockRatio) {
  const Workload w = BertLarge();
  const StepPrediction m2000 = Predict(w, "pod16");
  const StepPrediction bow = Predict(w, "bow-pod16");
  EXPECT_GT(bow.samples_per_sec, m2000.samples_per_sec);
  EXPECT_LE(bow.samples_per_sec / m2000.samples_per_sec, 1.85 / 1.325 + 1e-9);
}

TEST(ModelSanityTest, PackingScalesSequencesNotSamples) {
  Workload w = BertLarge();
  const StepPrediction plain = Predict(w, "bow-pod16");
  w.packing = 2.5;
  const StepPrediction packed = Predict(w, "bow-pod16");
  EXPECT_DOUBLE_EQ(packed.samples_per_sec, plain.samples_per_sec);
  EXPECT_DOUBLE_EQ(packed.sequences_per_sec, 2.5 * plain.sequences_per_sec);
}

TEST(ModelSanityTest, ShardingAndOnChipStateShortenTheWeightUpdate) {
  Workload w = BertLarge();
  w.optimizer_state_offchip = true;
  const double offchip = Predict(w, "bow-pod16").weight_update_s;
  w.replicated_tensor_sharding = true;
  const double sharded = Predict(w, "bow-pod16").weight_update_s;
  w.optimizer_state_offchip = false;
  const double onchip = Predict(w, "bow-pod16").weight_update_s;
  EXPECT_LT(sharded, offchip);
  EXPECT_LT(onchip, sharded);
  w.optimizer = Optimizer::kSgd;
  EXPECT_LT(Predict(w, "bow-pod16").weight_update_s, onchip);
}

TEST(ModelSanityTest, RecomputationCostsAboutAQuarterOfTheLayers) {
  Workload w = BertLarge();
  const StepPrediction with = Predict(w, "bow-pod16");
  w.recompute = false;
  const StepPrediction without = Predict(w, "bow-pod16");
  const double ratio =
      with.stages[1].micro_batch_compute_s / without.stages[1].micro_batch_compute_s;
  // One more forward pass: a third more work, give or take how the
  // backward pass's products (planned on their own shapes) compare with
  // twice the forward ones.
  EXPECT_NEAR(ratio, 4.0 / 3.0, 0.01);
}

TEST(ModelSanityTest, PipelineFillAndDrainAreCounted) {
  Workload w = BertLarge();
  const StepPrediction p = Predict(w, "bow-pod16");
  // Embedding, three encoder IPUs, heads back on IPU 0: five stages.
  EXPECT_EQ(p.pipeline_stages, 5u);
  EXPECT_EQ(p.beats_per_iteration, w.grad_accum + 8);
  w.ipus_per_replica = 1;
  w.layers_per_ipu.clear();
  w.micro_batch = 1;
  const StepPrediction flat = Predict(w, "bow-pod16");
  EXPECT_EQ(flat.beats_per_iteration, w.grad_accum);
  EXPECT_EQ(flat.stages[0].micro_batch_exchange_s, 0);
}

TEST(ModelSanityTest, StagesAddUpToTheStep) {
  const StepPrediction p = Predict(BertLarge(), "bow-pod64");
  ASSERT_EQ(p.stages.size(), 4u);
  for (const StageTime& s : p.stages) {
    const double sum =
        s.compute_s + s.exchange_s + s.collectives_s + s.weight_update_s + s.host_s + s.idle_s;
    EXPECT_NEAR(sum, p.step_time_s, 1e-9 * p.step_time_s) << "IPU " << s.ipu;
    EXPECT_GT(s.compute_s, 0);
    EXPECT_GT(s.exchange_s, 0);
    EXPECT_GT(s.host_s, 0);
  }
  EXPECT_GT(p.stages[1].collectives_s, 0);
}

TEST(ModelSanityTest, HostLoaderCanBindTheStep) {
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 16;
  w.grad_accum = 16;
  w.replicas = 4;
  const StepPrediction free_running = Predict(w, "bow-pod4");
  EXPECT_FALSE(free_running.host_bound);
  w.host_loader_samples_per_s = free_running.samples_per_sec / 2;
  const StepPrediction bound = Predict(w, "bow-pod4");
  EXPECT_TRUE(bound.host_bound);
  EXPECT_LT(bound.samples_per_sec, w.host_loader_samples_per_s);
}

TEST(ModelSanityTest, DeviceIterationsAmortiseTheHostCall) {
  Workload w = BertLarge();
  w.grad_accum = 8;
  const StepPrediction one = Predict(w, "bow-pod16");
  w.device_iterations = 4;
  const StepPrediction four = Predict(w, "bow-pod16");
  EXPECT_EQ(four.samples_per_step, 4 * one.samples_per_step);
  EXPECT_GT(four.samples_per_sec, one.samples_per_sec);
}

TEST(ModelSanityTest, LongerSequencesCostMorePerSample) {
  Workload w = BertLarge();
  const double short_seq = Predict(w, "bow-pod16").samples_per_sec;
  w.seq_len = 512;
  // Four times the tokens plus quadratic attention, minus fixed per-op costs.
  const double long_seq = Predict(w, "bow-pod16").samples_per_sec;
  EXPECT_LT(long_seq, short_seq / 3);
  EXPECT_GT(long_seq, short_seq / 6);
}

TEST(ModelSanityTest, DecoderHeadScoresEveryPosition) {
  Workload gpt = *WorkloadPreset("gpt2-small");
  Workload bert = *WorkloadPreset("bert-base");
  for (Workload* w : {&gpt, &bert}) {
    w->micro_batch = 4;
    w->grad_accum = 16;
    w->ipus_per_replica = 4;
  }
  const StepPrediction g = Predict(gpt, "bow-pod16");
  const StepPrediction b = Predict(bert, "bow-pod16");
  EXPECT_GT(g.model_flops_per_sample, 1.3 * b.model_flops_per_sample);
}

TEST(ModelSanityTest, PopTorchLoadsTheNextBatchBetweenCalls) {
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 16;
  w.grad_accum = 16;
  w.replicas = 4;
  const StepPrediction free_running = Predict(w, "bow-pod4");
  // A loader half as fast as the IPUs: TF's infeed hides the IPUs' time
  // behind it, poptorch.DataLoader's default mode adds the two.
  w.host_loader_samples_per_s = 2 * free_running.samples_per_sec;
  w.framework = Framework::kTf2;
  const StepPrediction tf2 = Predict(w, "bow-pod4");
  w.framework = Framework::kPopTorch;
  const StepPrediction poptorch = Predict(w, "bow-pod4");
  EXPECT_NEAR(tf2.step_time_s,
              free_running.step_time_s - free_running.host_overhead_s + tf2.host_overhead_s, 1e-9);
  EXPECT_GT(poptorch.step_time_s, 1.4 * tf2.step_time_s);
  EXPECT_FALSE(tf2.host_bound);
}

TEST(ModelSanityTest, HostCallsCostTheirRoundTripsAndTheFrameworkTime) {
  Workload w = BertLarge();
  w.framework = Framework::kTf1;
  const StepPrediction tf1 = Predict(w, "bow-pod16");
  w.framework = Framework::kPopTorch;
  const StepPrediction poptorch = Predict(w, "bow-pod16");
  // Two round trips against four (outputs read back, optimizer written).
  EXPECT_NEAR(poptorch.host_round_trips_s, 2 * tf1.host_round_trips_s, 1e-12);
  w.host_call_s = 0.005;
  const StepPrediction slow = Predict(w, "bow-pod16");
  EXPECT_NEAR(slow.step_time_s - poptorch.step_time_s, 0.005, 1e-9);
  EXPECT_NEAR(slow.host_overhead_s, poptorch.host_round_trips_s + 0.005, 1e-12);
  // Across ILDs the run's start and end syncs cross GW-Links.
  w.host_call_s = 0;
  w.replicas = 64;
  EXPECT_GT(Predict(w, "bow-pod256").host_round_trips_s, poptorch.host_round_trips_s);
}

TEST(ModelSanityTest, BroadcastInputsStreamOnceAMachine) {
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 16;
  w.grad_accum = 4;
  w.replicas = 16;
  const double replicated = Predict(w, "bow-pod16").host_io_s;
  w.replicated_input_streams = false;
  EXPECT_NEAR(Predict(w, "bow-pod16").host_io_s, replicated / 4, 1e-12);
}

}  // namespace
}  // namespace vipu::model
