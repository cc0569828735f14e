// The workload options of the calibration BERT configs (docs/model.md) over the wire: unset
// fields keep the preset's values, set ones (false included) apply, bad
// values are refused naming the field, and the Pod64 config predicts
// on a 64-IPU partition exactly what the model predicts in-process. A
// layout the IPUs cannot hold is refused in the words of `ipu-model
// predict`; popdist_sample_train's configurations are not.
#include "agents/workload_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agents/wire_translation.h"
#include "model/ipu_memory.h"
#include "model/prediction_format.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::agents {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// pretrain_large_128_POD64 as popdist_sample_train sends it.
vipuagent::WorkloadSpec SeedPod64() {
  vipuagent::WorkloadSpec s;
  s.set_model("bert-large");
  s.set_micro_batch(8);
  s.set_grad_accum(512);
  s.set_device_iterations(1);
  s.set_replicas(16);
  s.set_ipus_per_replica(4);
  s.set_seq_len(128);
  for (uint32_t l : {3, 7, 7, 7}) s.add_layers_per_ipu(l);
  s.set_optimizer("lamb");
  s.set_optimizer_state_offchip(true);
  s.set_replicated_tensor_sharding(true);
  s.set_recompute(true);
  s.set_packing(1);
  return s;
}

model::Workload SeedPod64InProcess() {
  model::Workload w = *model::WorkloadPreset("bert-large");
  w.seq_len = 128;
  w.micro_batch = 8;
  w.grad_accum = 512;
  w.replicas = 16;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = {3, 7, 7, 7};
  w.optimizer = model::Optimizer::kLamb;
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  return w;
}

TEST(WorkloadRunnerWireTest, SeedPod64OnAPartitionEqualsTheInProcessModel) {
  // poprun's 64-IPU partition of a Bow Pod64: one torus ILD (ring-swnc).
  const PartitionShape shape{fabric::MachineType::kBow, 64, true};
  auto run = PredictRun(FromProto(SeedPod64()), shape, 2);
  ASSERT_TRUE(run.ok()) << run.status();
  auto system = model::SystemSpecForPreset("bow-pod64");
  ASSERT_TRUE(system.ok());
  auto local = model::PredictStep(SeedPod64InProcess(), *system);
  ASSERT_TRUE(local.ok()) << local.status();
  ASSERT_EQ(run->step_time_s.size(), 2u);
  EXPECT_DOUBLE_EQ(run->step_time_s[0], local->step_time_s);
  EXPECT_DOUBLE_EQ(run->samples_per_sec, local->samples_per_sec);
  EXPECT_LT(std::abs(run->samples_per_sec / 17692.1 - 1), 0.05) << run->samples_per_sec;

  // Without the config's memory options the fields still reach the model:
  // LAMB's state on chip and whole does not fit, and unsharded state
  // streamed from Streaming Memory takes longer.
  vipuagent::WorkloadSpec plain = SeedPod64();
  plain.clear_optimizer_state_offchip();
  plain.clear_replicated_tensor_sharding();
  auto onchip = PredictRun(FromProto(plain), shape, 1);
  EXPECT_EQ(onchip.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(onchip.status().message()), StartsWith("memory: IPU 1 needs at least "));
  plain.set_optimizer_state_offchip(true);
  auto other = PredictRun(FromProto(plain), shape, 1);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->step_time_s[0], run->step_time_s[0]);
}

// What the in-process model needs on the fullest IPU of a replica of
// `request` on `shape`, in the refusal's words: "IPU 1 needs at least 1376.1 MB".
std::string Needs(const WorkloadRequest& request, const PartitionShape& shape) {
  auto w = BuildWorkload(request, shape.size);
  EXPECT_TRUE(w.ok()) << w.status();
  if (!w.ok()) return "";
  const model::SystemSpec system = PartitionSystem(shape);
  auto p = model::PredictStep(*w, system);
  EXPECT_TRUE(p.ok()) << p.status();
  if (!p.ok()) return "";
  const model::MemoryEstimate m = model::EstimateMemory(*w, system, *p);
  EXPECT_FALSE(m.fits);
  const model::IpuMemory& top = m.ipus[m.fullest];
  return absl::StrFormat("IPU %u needs at least %.1f MB", top.ipu, top.TotalBytes() / 1e6);
}

TEST(WorkloadRunnerWireTest, RefusesALayoutTheIpusCannotHoldAsIpuModelPredictDoes) {
  // BERT-Large's 340M parameters on one IPU per replica: weights,
  // gradients and LAMB's state alone are several times its 900 MB.
  vipuagent::WorkloadSpec whole;
  whole.set_model("bert-large");
  whole.set_ipus_per_replica(1);
  const PartitionShape four{fabric::MachineType::kBow, 4, false};
  auto run = PredictRun(FromProto(whole), four, 1);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(run.status().message());
  EXPECT_THAT(message, StartsWith("memory: " + Needs(FromProto(whole), four) +
                                  ", more than its 900.0 MB (weights 672.5, gradients 672.5, "
                                  "optimizer state "));

  // The Pod64 layout with 16 times its micro-batch: the activations kept
  // for the backward pass overflow IPU 1.
  vipuagent::WorkloadSpec big_batch = SeedPod64();
  big_batch.set_micro_batch(128);
  const PartitionShape pod64{fabric::MachineType::kBow, 64, true};
  run = PredictRun(FromProto(big_batch), pod64, 1);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(run.status().message()),
              StartsWith("memory: " + Needs(FromProto(big_batch), pod64) +
                         ", more than its 900.0 MB (weights "));
  EXPECT_THAT(std::string(run.status().message()), HasSubstr("optimizer state 0.0, activations "));

  // One message, the model's: the same text `ipu-model predict` prints.
  auto w = BuildWorkload(FromProto(big_batch), pod64.size);
  ASSERT_TRUE(w.ok()) << w.status();
  const model::SystemSpec system = PartitionSystem(pod64);
  auto p = model::PredictStep(*w, system);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(run.status(), model::CheckMemoryFits(model::EstimateMemory(*w, system, *p)));
}

// popdist_sample_train's configurations (popdist/sample_train.cc) as
// ToWorkloadSpec sends them, on the partitions poprun makes for them: all
// fit, as the runs they replay did.
TEST(WorkloadRunnerWireTest, SampleTrainConfigurationsFitTheirPartitions) {
  const struct {
    const char* name;
    const char* preset;
    uint32_t micro_batch, grad_accum, replicas;
    std::vector<uint32_t> split;
    PartitionShape shape;
  } configs[] = {
      {"pretrain_base_128_pod4",
       "bert-base",
       32,
       2048,
       1,
       {0, 4, 4, 4},
       {fabric::MachineType::kBow, 4, false}},
      {"pretrain_large_128_POD64",
       "bert-large",
       8,
       512,
       16,
       {3, 7, 7, 7},
       {fabric::MachineType::kBow, 64, true}},
      {"pretrain_large_128_pod16",
       "bert-large",
       8,
       2040,
       4,
       {3, 7, 7, 7},
       {fabric::MachineType::kBow, 16, false}},
  };
  for (const auto& c : configs) {
    SCOPED_TRACE(c.name);
    vipuagent::WorkloadSpec s;
    s.set_model(c.preset);
    s.set_micro_batch(c.micro_batch);
    s.set_grad_accum(c.grad_accum);
    s.set_device_iterations(1);
    s.set_replicas(c.replicas);
    s.set_ipus_per_replica(static_cast<uint32_t>(c.split.size()));
    s.set_seq_len(128);
    for (uint32_t l : c.split) s.add_layers_per_ipu(l);
    s.set_optimizer("lamb");
    s.set_optimizer_state_offchip(true);
    s.set_replicated_tensor_sharding(true);
    s.set_recompute(true);
    s.set_packing(1);
    auto run = PredictRun(FromProto(s), c.shape, 1);
    EXPECT_TRUE(run.ok()) << run.status();
    // poprun may give fewer replicas than the configuration names.
    s.set_replicas(1);
    run = PredictRun(FromProto(s), c.shape, 1);
    EXPECT_TRUE(run.ok()) << run.status();
  }
}

TEST(WorkloadRunnerWireTest, UnsetOptionsKeepThePresetsAndSetOnesApply) {
  vipuagent::WorkloadSpec spec;
  spec.set_model("resnet50");
  WorkloadRequest unset = FromProto(spec);
  EXPECT_FALSE(unset.optimizer_state_offchip.has_value());
  EXPECT_FALSE(unset.replicated_tensor_sharding.has_value());
  EXPECT_FALSE(unset.recompute.has_value());
  auto resnet = BuildWorkload(unset, 4);
  ASSERT_TRUE(resnet.ok()) << resnet.status();
  EXPECT_FALSE(resnet->recompute);  // the convnet preset's
  EXPECT_FALSE(resnet->optimizer_state_offchip);
  EXPECT_EQ(resnet->packing, 1.0);
  EXPECT_EQ(resnet->host_loader_samples_per_s, 0.0);

  spec.set_model("bert-base");
  auto bert = BuildWorkload(FromProto(spec), 4);
  ASSERT_TRUE(bert.ok()) << bert.status();
  EXPECT_TRUE(bert->recompute);  // the transformer preset's

  // Explicit false is not "unset".
  spec.set_recompute(false);
  spec.set_optimizer_state_offchip(true);
  spec.set_replicated_tensor_sharding(true);
  spec.set_packing(2.5);
  spec.set_host_loader_samples_per_s(1000);
  WorkloadRequest set = FromProto(spec);
  ASSERT_TRUE(set.recompute.has_value());
  auto custom = BuildWorkload(set, 4);
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_FALSE(custom->recompute);
  EXPECT_TRUE(custom->optimizer_state_offchip);
  EXPECT_TRUE(custom->replicated_tensor_sharding);
  EXPECT_EQ(custom->packing, 2.5);
  EXPECT_EQ(custom->host_loader_samples_per_s, 1000.0);
  spec.set_optimizer_state_offchip(false);
  auto onchip = BuildWorkload(FromProto(spec), 4);
  ASSERT_TRUE(onchip.ok());
  EXPECT_FALSE(onchip->optimizer_state_offchip);

  // A slow host loader limits the modelled throughput.
  spec.set_host_loader_samples_per_s(10);
  auto limited = PredictRun(FromProto(spec), {fabric::MachineType::kBow, 4, false}, 1);
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_LE(limited->samples_per_sec, 10.0 + 1e-9);
}

TEST(WorkloadRunnerWireTest, RefusesBadPackingAndHostLoaderRates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double packing : {0.5, -1.0, nan, inf, -inf, 1e-300}) {
    vipuagent::WorkloadSpec spec;
    spec.set_model("bert-base");
    spec.set_packing(packing);
    auto w = BuildWorkload(FromProto(spec), 4);
    ASSERT_FALSE(w.ok()) << packing;
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(w.status().message()),
                HasSubstr("workload.packing: must be 0 (the preset's) or a finite number >= 1"));
  }
  for (double rate : {-1.0, -1e-9, nan, inf, -inf}) {
    vipuagent::WorkloadSpec spec;
    spec.set_model("bert-base");
    spec.set_host_loader_samples_per_s(rate);
    auto run = PredictRun(FromProto(spec), {fabric::MachineType::kBow, 4, false}, 1);
    ASSERT_FALSE(run.ok()) << rate;
    EXPECT_EQ(run.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(run.status().message()),
                HasSubstr("workload.host_loader_samples_per_s: must be 0 (not limiting) or a "
                          "finite number > 0"));
  }
}

}  // namespace
}  // namespace vipu::agents
