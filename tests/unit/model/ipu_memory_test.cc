// EstimateMemory: each IPU's weights, gradients, optimizer state and kept
// activations, counted from the shapes; the published configurations fit
// and a whole BERT-Large on one IPU does not.
#include "model/ipu_memory.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/validation.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

struct Counted {
  StepPrediction prediction;
  MemoryEstimate memory;
};

Counted Count(const Workload& w, const std::string& system) {
  const SystemSpec spec = *SystemSpecForPreset(system);
  absl::StatusOr<StepPrediction> p = PredictStep(w, spec);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return {};
  return {*p, EstimateMemory(w, spec, *p)};
}

// hidden 64, 2 layers of 2 heads (FFN 256), vocab 1000, 512 positions;
// 16 tokens, 4 of them masked; micro-batch 2, GA 8; 2 IPUs, one layer each.
Workload Small() {
  Workload w;
  w.name = "small";
  w.transformer.hidden = 64;
  w.transformer.layers = 2;
  w.transformer.heads = 2;
  w.transformer.vocab = 1000;
  w.transformer.masked_tokens = 4;
  w.seq_len = 16;
  w.micro_batch = 2;
  w.grad_accum = 8;
  w.ipus_per_replica = 2;
  w.layers_per_ipu = {1, 1};
  w.optimizer = Optimizer::kLamb;
  w.recompute = true;
  return w;
}

// The shapes of Small() worked by hand.
constexpr double kH = 64, kFfn = 256, kTokens = 32, kHeads = 2, kSeq = 16;
constexpr double kLayerParams = 4 * kH * kH + 2 * kH * kFfn + 9 * kH + kFfn;
constexpr double kEmbeddingParams = (1000 + 512 + 2) * kH + 2 * kH;
constexpr double kHeadParams = 2 * kH * kH + 6 * kH + 1000 + 2;
constexpr double kLayerInput = kTokens * kH * 2;
constexpr double kLayerSaved = kTokens * (6 * kH + kFfn + kHeads * kSeq) * 2;
constexpr double kHeadSaved = 2 * (2 * 4 + 2) * kH * 2;

TEST(ModelIpuMemoryTest, CountsWeightsGradientsStateAndStashedActivations) {
  const Counted c = Count(Small(), "pod16");
  ASSERT_EQ(c.memory.ipus.size(), 2u);
  EXPECT_EQ(c.memory.capacity_bytes, 900e6);
  // Three stages (the heads come back to IPU 0): IPU 0 holds 5 micro-batches
  // in flight, IPU 1 holds 3, the heads 1.
  ASSERT_EQ(c.prediction.pipeline_stages, 3u);
  const IpuMemory& first = c.memory.ipus[0];
  const double first_params = kEmbeddingParams + kLayerParams + kHeadParams;
  EXPECT_DOUBLE_EQ(first.weights_bytes, 2 * first_params);
  EXPECT_DOUBLE_EQ(first.gradients_bytes, 2 * first_params);
  EXPECT_DOUBLE_EQ(first.optimizer_bytes, 8 * first_params);
  EXPECT_DOUBLE_EQ(first.activations_bytes, 5 * kLayerInput + kLayerSaved + kHeadSaved);
  const IpuMemory& second = c.memory.ipus[1];
  EXPECT_DOUBLE_EQ(second.weights_bytes, 2 * kLayerParams);
  EXPECT_DOUBLE_EQ(second.optimizer_bytes, 8 * kLayerParams);
  EXPECT_DOUBLE_EQ(second.activations_bytes, 3 * kLayerInput + kLayerSaved);
  // The weights are the parameters the step time placed on each IPU.
  EXPECT_DOUBLE_EQ(first.weights_bytes, 2 * c.prediction.stages[0].params);
  EXPECT_EQ(c.memory.fullest, 0u);
  EXPECT_TRUE(c.memory.fits);
}

TEST(ModelIpuMemoryTest, WithoutRecomputationEveryMicroBatchInFlightKeepsItsActivations) {
  Workload w = Small();
  w.recompute = false;
  Counted c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[0].activations_bytes, 5 * kLayerSaved + kHeadSaved);
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].activations_bytes, 3 * kLayerSaved);
  // No more micro-batches are in flight than one iteration has.
  w.grad_accum = 2;
  c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[0].activations_bytes, 2 * kLayerSaved + kHeadSaved);
}

TEST(ModelIpuMemoryTest, OptimizerStateIsShardedByRtsAndLeavesWithOffChipState) {
  Workload w = Small();
  w.replicas = 4;
  w.replicated_tensor_sharding = true;
  Counted c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].optimizer_bytes, 8 * kLayerParams / 4);
  // Weights stay whole: the products read all of them.
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].weights_bytes, 2 * kLayerParams);
  w.optimizer_state_offchip = true;
  c = Count(w, "pod16");
  EXPECT_EQ(c.memory.ipus[1].optimizer_bytes, 0);
  w.optimizer = Optimizer::kSgdMomentum;
  w.optimizer_state_offchip = false;
  w.replicated_tensor_sharding = false;
  c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].optimizer_bytes, 4 * kLayerParams);
}

// The state's precision: FP16 halves LAMB's two moments; an FP16 first
// moment beside an FP32 second one keeps three quarters.
TEST(ModelIpuMemoryTest, OptimizerStatePrecisionSetsItsBytes) {
  Workload w = Small();
  w.optimizer_state_precision = StatePrecision::kFp16;
  Counted c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].optimizer_bytes, 4 * kLayerParams);
  w.optimizer_state_precision = StatePrecision::kFp16FirstMoment;
  c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].optimizer_bytes, 6 * kLayerParams);
  w.optimizer = Optimizer::kSgdMomentum;
  w.optimizer_state_precision = StatePrecision::kFp16;
  c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].optimizer_bytes, 2 * kLayerParams);
}

// Stashing only a stage's input: once per micro-batch in flight, then the
// inputs of its layers for the one micro-batch being rebuilt.
TEST(ModelIpuMemoryTest, StageInputStashHoldsOneInputPerMicroBatchInFlight) {
  Workload w = Small();
  w.transformer.layers = 3;
  w.layers_per_ipu = {1, 2};
  w.checkpoint_every_layer = false;
  Counted c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].activations_bytes,
                   3 * kLayerInput + 2 * kLayerInput + kLayerSaved);
  w.checkpoint_every_layer = true;
  c = Count(w, "pod16");
  EXPECT_DOUBLE_EQ(c.memory.ipus[1].activations_bytes, 3 * 2 * kLayerInput + kLayerSaved);
}

// Half layers: the attention and FFN units of a layer hold together what
// the whole layer does.
TEST(ModelIpuMemoryTest, HalfLayersAddUpToTheLayer) {
  Workload w = Small();
  w.half_layer_units = true;
  w.layers_per_ipu = {2, 2};
  const Counted halves = Count(w, "pod16");
  const Counted whole = Count(Small(), "pod16");
  for (int i = 0; i < 2; ++i) {
    EXPECT_NEAR(halves.memory.ipus[i].weights_bytes, whole.memory.ipus[i].weights_bytes, 1e-6);
    EXPECT_NEAR(halves.memory.ipus[i].optimizer_bytes, whole.memory.ipus[i].optimizer_bytes, 1e-6);
  }
  EXPECT_NEAR(halves.prediction.model_flops_per_sample, whole.prediction.model_flops_per_sample,
              1e-3);
  EXPECT_EQ(PipelineUnits(w), 4u);
}

// BERT-Large's 340M parameters need 680 MB of FP16 weights and as much
// again of gradients: one IPU cannot hold them.
TEST(ModelIpuMemoryTest, BertLargeOnOneIpuDoesNotFit) {
  const Counted c = Count(*WorkloadPreset("bert-large"), "pod64");
  ASSERT_EQ(c.memory.ipus.size(), 1u);
  EXPECT_FALSE(c.memory.fits);
  EXPECT_GT(c.memory.ipus[0].weights_bytes, 650e6);
  EXPECT_GT(c.memory.ipus[0].TotalBytes(), c.memory.capacity_bytes);
}

// Every configuration of docs/model.md's calibration table (the published
// runs) and the console's partition figure fit.
TEST(ModelIpuMemoryTest, PublishedConfigurationsFit) {
  auto bert = [](const char* preset, uint32_t mb, uint32_t ga, uint32_t replicas,
                 std::vector<uint32_t> split) {
    Workload w = *WorkloadPreset(preset);
    w.micro_batch = mb;
    w.grad_accum = ga;
    w.replicas = replicas;
    w.ipus_per_replica = 4;
    w.layers_per_ipu = split;
    w.optimizer = Optimizer::kLamb;
    w.optimizer_state_offchip = true;
    w.replicated_tensor_sharding = true;
    return w;
  };
  auto resnet = [](uint32_t replicas) {
    Workload w = *WorkloadPreset("resnet50");
    w.micro_batch = 16;
    w.grad_accum = 64;
    w.replicas = replicas;
    return w;
  };
  Workload tiny;
  tiny.name = "demo_tiny_128";
  tiny.transformer.hidden = 64;
  tiny.transformer.layers = 3;
  tiny.transformer.heads = 4;
  tiny.grad_accum = 16;
  tiny.ipus_per_replica = 4;
  tiny.layers_per_ipu = {0, 1, 1, 1};
  const struct {
    std::string what;
    Workload workload;
    std::string system;
  } cases[] = {
      {"bert-base pod4", bert("bert-base", 32, 2048, 1, {0, 4, 4, 4}), "bow-pod4"},
      {"bert-large pod64", bert("bert-large", 8, 512, 16, {3, 7, 7, 7}), "bow-pod64"},
      {"bert-large pod16", bert("bert-large", 8, 2040, 4, {3, 7, 7, 7}), "bow-pod16"},
      {"bert-large pod64 balanced", bert("bert-large", 8, 510, 16, {}), "bow-pod64"},
      {"console pod16", bert("bert-large", 8, 512, 4, {3, 7, 7, 7}), "pod16"},
      {"resnet50 pod16", resnet(16), "bow-pod16"},
      {"resnet50 4 replicas", resnet(4), "bow-pod64"},
      {"demo tiny", tiny, "bow-pod4"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const Counted counted = Count(c.workload, c.system);
    ASSERT_FALSE(counted.memory.ipus.empty());
    EXPECT_TRUE(counted.memory.fits)
        << counted.memory.ipus[counted.memory.fullest].TotalBytes() / 1e6 << " MB";
  }
  // And every run `ipu-model validate` replays, as it replays it.
  for (const PublishedResult& r : PublishedResults()) {
    SCOPED_TRACE(r.name);
    const Counted counted = Count(r.workload, r.system);
    ASSERT_FALSE(counted.memory.ipus.empty());
    EXPECT_TRUE(counted.memory.fits)
        << counted.memory.ipus[counted.memory.fullest].TotalBytes() / 1e6 << " MB";
  }
}

}  // namespace
}  // namespace vipu::model
