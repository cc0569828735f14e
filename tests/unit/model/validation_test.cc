// Every impossible workload is INVALID_ARGUMENT naming the field and rule.
#include <cmath>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

struct InvalidCase {
  std::string name;
  std::function<void(Workload&)> mutate;
  std::string field;  // the message starts with "<field>:"
  std::string rule;   // and contains this
};

Workload ValidBert() {
  Workload w = *WorkloadPreset("bert-base");
  w.micro_batch = 4;
  w.grad_accum = 16;
  w.replicas = 2;
  w.ipus_per_replica = 4;
  return w;
}

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

class ModelValidationTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ModelValidationTest, IsInvalidArgument) {
  Workload w = ValidBert();
  GetParam().mutate(w);
  absl::StatusOr<StepPrediction> p = PredictStep(w, *SystemSpecForPreset("bow-pod16"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), StartsWith(GetParam().field + ":"));
  EXPECT_THAT(std::string(p.status().message()), HasSubstr(GetParam().rule));
  EXPECT_EQ(ValidateWorkload(w, *SystemSpecForPreset("bow-pod16")).code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ModelValidationTest,
    ::testing::ValuesIn(std::vector<InvalidCase>{
        {"ZeroMicroBatch", [](Workload& w) { w.micro_batch = 0; }, "micro_batch", "at least 1"},
        {"ZeroGradAccum", [](Workload& w) { w.grad_accum = 0; }, "grad_accum", "at least 1"},
        {"ZeroDeviceIterations", [](Workload& w) { w.device_iterations = 0; }, "device_iterations",
         "at least 1"},
        {"ZeroReplicas", [](Workload& w) { w.replicas = 0; }, "replicas", "at least 1"},
        {"ZeroIpusPerReplica", [](Workload& w) { w.ipus_per_replica = 0; }, "ipus_per_replica",
         "power of two"},
        {"ThreeIpusPerReplica", [](Workload& w) { w.ipus_per_replica = 3; }, "ipus_per_replica",
         "power of two, got 3"},
        {"TooManyIpus", [](Workload& w) { w.replicas = 5; }, "replicas", "exceed the 16"},
        {"ReplicaWiderThanSystem",
         [](Workload& w) {
           w.replicas = 1;
           w.ipus_per_replica = 32;
         },
         "replicas", "exceed"},
        {"SplitTooShort",
         [](Workload& w) {
           w.layers_per_ipu = {6, 6};
         },
         "layers_per_ipu", "one entry per IPU"},
        {"SplitSumWrong",
         [](Workload& w) {
           w.layers_per_ipu = {0, 4, 4, 3};
         },
         "layers_per_ipu", "add up to the model's 12 layers, got 11"},
        {"PackingBelowOne", [](Workload& w) { w.packing = 0.5; }, "packing", ">= 1"},
        {"PackingNan", [](Workload& w) { w.packing = std::nan(""); }, "packing", ">= 1"},
        {"NegativeLoaderRate", [](Workload& w) { w.host_loader_samples_per_s = -1; },
         "host_loader_rate", ">= 0"},
        {"ZeroHidden", [](Workload& w) { w.transformer.hidden = 0; }, "hidden", "at least 1"},
        {"ZeroLayers", [](Workload& w) { w.transformer.layers = 0; }, "layers", "at least 1"},
        {"ZeroHeads", [](Workload& w) { w.transformer.heads = 0; }, "heads", "at least 1"},
        {"HeadsNotDividingHidden", [](Workload& w) { w.transformer.heads = 7; }, "heads",
         "must divide hidden"},
        {"ZeroVocab", [](Workload& w) { w.transformer.vocab = 0; }, "vocab", "at least 1"},
        {"ZeroSeqLen", [](Workload& w) { w.seq_len = 0; }, "seq_len", "at least 1"},
        {"SeqLenBeyondPositions", [](Workload& w) { w.seq_len = 1024; }, "seq_len",
         "must not exceed the model's 512 positions"},
        {"TooManyMaskedTokens", [](Workload& w) { w.transformer.masked_tokens = 200; },
         "masked_tokens", "must not exceed seq_len"},
        {"ConvNetDepth",
         [](Workload& w) {
           w = *WorkloadPreset("resnet50");
           w.convnet.depth = 34;
         },
         "depth", "50, 101 or 152"},
        {"ConvNetImageSize",
         [](Workload& w) {
           w = *WorkloadPreset("resnet50");
           w.convnet.image_size = 8;
         },
         "image_size", "at least 32"},
        {"ConvNetClasses",
         [](Workload& w) {
           w = *WorkloadPreset("resnet50");
           w.convnet.classes = 0;
         },
         "classes", "at least 1"},
        {"ConvNetSplitSum",
         [](Workload& w) {
           w = *WorkloadPreset("resnet50");
           w.ipus_per_replica = 2;
           w.layers_per_ipu = {8, 9};
         },
         "layers_per_ipu", "16 layers, got 17"},
    }),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return info.param.name; });

TEST(ModelWorkloadTest, PresetsAndOptimizers) {
  for (const std::string& name : WorkloadPresetNames()) {
    EXPECT_TRUE(WorkloadPreset(name).ok()) << name;
  }
  EXPECT_EQ(WorkloadPreset("bert-large")->transformer.hidden, 1024u);
  EXPECT_TRUE(WorkloadPreset("gpt2-small")->transformer.decoder);
  EXPECT_EQ(PipelineUnits(*WorkloadPreset("resnet50")), 16u);
  EXPECT_EQ(PipelineUnits(*WorkloadPreset("resnet101")), 33u);
  absl::StatusOr<Workload> unknown = WorkloadPreset("vgg16");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()), StartsWith("model: unknown model"));
  EXPECT_EQ(*ParseOptimizer("LAMB"), Optimizer::kLamb);
  EXPECT_EQ(OptimizerName(Optimizer::kSgdMomentum), "sgd-momentum");
  absl::StatusOr<Optimizer> bad = ParseOptimizer("rmsprop");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), StartsWith("optimizer: must be one of"));
}

TEST(ModelWorkloadTest, UnknownSystemPreset) {
  EXPECT_FALSE(SystemSpecForPreset("pod32").ok());
  EXPECT_TRUE(SystemSpecForPreset("BOW-POD64").ok());
}

}  // namespace
}  // namespace vipu::model
