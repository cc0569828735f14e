// A network given layer by layer (ModelFamily::kLayers, what a PyTorch
// program's layers make): the model charges its products, bytes and
// parameters; more work takes longer; inference is forward only, with no
// reduction or update; bad sizes are refused naming the layer.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {
namespace {

using ::testing::HasSubstr;

Workload Mlp(double hidden, uint32_t replicas) {
  Workload w;
  w.name = "mlp";
  w.family = ModelFamily::kLayers;
  w.optimizer = Optimizer::kSgd;
  w.recompute = false;
  w.micro_batch = 16;
  w.replicas = replicas;
  for (int i = 0; i < 3; ++i) {
    TracedLayer l;
    l.name = "fc";
    l.products.push_back({1, hidden, hidden, 1});
    l.params = hidden * hidden + hidden;
    l.param_tensors = 2;
    l.elementwise_bytes = 4 * hidden;
    l.ops = 1;
    l.output_bytes = 2 * hidden;
    w.layers.push_back(l);
  }
  w.layers_input_bytes_per_sample = 4 * hidden;
  return w;
}

SystemSpec Pod(uint32_t ipus) {
  absl::StatusOr<SystemSpec> s = SystemSpecForPreset("pod16");
  EXPECT_TRUE(s.ok()) << s.status();
  s->num_ipus = ipus;
  return *s;
}

TEST(LayersWorkloadTest, MoreWorkTakesLonger) {
  absl::StatusOr<StepPrediction> small = PredictStep(Mlp(256, 4), Pod(4));
  absl::StatusOr<StepPrediction> large = PredictStep(Mlp(2048, 4), Pod(4));
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_GT(small->step_time_s, 0);
  EXPECT_GT(large->step_time_s, small->step_time_s);
  EXPECT_EQ(small->samples_per_step, 16u * 4);
  // Forward and backward of the three products, per sample.
  EXPECT_DOUBLE_EQ(small->model_flops_per_sample, 3 * 3 * 2.0 * 256 * 256);
}

TEST(LayersWorkloadTest, InferenceIsForwardOnlyWithoutReductionOrUpdate) {
  Workload training = Mlp(1024, 4);
  Workload inference = training;
  inference.training = false;
  absl::StatusOr<StepPrediction> t = PredictStep(training, Pod(4));
  absl::StatusOr<StepPrediction> i = PredictStep(inference, Pod(4));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_LT(i->step_time_s, t->step_time_s);
  EXPECT_EQ(i->collectives_s, 0);
  EXPECT_EQ(i->weight_update_s, 0);
  EXPECT_GT(t->collectives_s, 0);
  EXPECT_GT(t->weight_update_s, 0);
}

TEST(LayersWorkloadTest, BadSizesAreRefusedNamingTheLayer) {
  Workload w = Mlp(64, 1);
  w.layers[1].products[0].k = std::numeric_limits<double>::quiet_NaN();
  absl::StatusOr<StepPrediction> p = PredictStep(w, Pod(4));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("layers[1] (fc)"));
  w = Mlp(64, 1);
  w.layers[0].params = -1;
  EXPECT_FALSE(PredictStep(w, Pod(4)).ok());
  w = Mlp(64, 1);
  w.layers.clear();
  p = PredictStep(w, Pod(4));
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("needs a layer"));
}

}  // namespace
}  // namespace vipu::model
