// The published results of the reference material, replayed through PredictStep.
#include "model/validation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"

namespace vipu::fabric::model {
namespace {

Workload BertPretraining(const char* preset, uint32_t micro_batch, uint32_t grad_accum,
                         uint32_t replicas, std::vector<uint32_t> split, Framework framework) {
  Workload w = *WorkloadPreset(preset);
  w.seq_len = 128;
  w.micro_batch = micro_batch;
  w.grad_accum = grad_accum;
  w.replicas = replicas;
  w.ipus_per_replica = static_cast<uint32_t>(split.size());
  w.layers_per_ipu = std::move(split);
  w.optimizer = Optimizer::kLamb;
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  w.recompute = true;
  w.framework = framework;
  return w;
}

// graphcore/examples vision/cnns/pytorch/train/configs.yml, `resnet50`:
// micro-batch 18, gradient accumulation 57, SGD with momentum, FP16
// partials, recomputation from checkpoints, one IPU per replica.
Workload ResNet50Benchmark(uint32_t replicas, uint32_t grad_accum) {
  Workload w = *WorkloadPreset("resnet50");
  w.micro_batch = 18;
  w.grad_accum = grad_accum;
  w.replicas = replicas;
  w.optimizer = Optimizer::kSgdMomentum;
  w.recompute = true;
  w.framework = Framework::kPopTorch;
  return w;
}

PublishedResult Row(std::string name, std::string system, std::string source,
                    std::string configuration, double published, Workload w) {
  PublishedResult r;
  r.name = std::move(name);
  r.system = std::move(system);
  r.source = std::move(source);
  r.configuration = std::move(configuration);
  r.published = published;
  r.workload = std::move(w);
  return r;
}

}  // namespace

std::vector<PublishedResult> PublishedResults() {
  std::vector<PublishedResult> rows;
  PublishedResult base =
      Row("BERT-Base pretrain_base_128_pod4 (PyTorch, SDK 3.3)", "bow-pod4",
          "EPCCed/eidf-docs, docs/services/graphcore/training/L2_multiple_IPU.md (EIDF, seed run)",
          "1 x 4 IPUs, mb 32, GA 2048, [0,4,4,4], LAMB off-chip", 4035.0,
          BertPretraining("bert-base", 32, 2048, 1, {0, 4, 4, 4}, Framework::kPopTorch));
  base.calibration = true;
  rows.push_back(base);
  PublishedResult large =
      Row("BERT-Large pretrain_large_128_POD64 (PyTorch, SDK 3.3)", "bow-pod64",
          "EPCCed/eidf-docs, docs/services/graphcore/training/L2_multiple_IPU.md (EIDF, seed run)",
          "16 x 4 IPUs, mb 8, GA 512, [3,7,7,7], LAMB off-chip, RTS", 17692.1,
          BertPretraining("bert-large", 8, 512, 16, {3, 7, 7, 7}, Framework::kPopTorch));
  large.calibration = true;
  rows.push_back(large);
  rows.push_back(Row("BERT-Large SL128 phase 1, unpacked (TF2, SDK 3.3)", "bow-pod16",
                     "Graphcore's published performance results table",
                     "4 x 4 IPUs, mb 8, GA 2040 (TF2 config), [3,7,7,7]", 4527,
                     BertPretraining("bert-large", 8, 2040, 4, {3, 7, 7, 7}, Framework::kTf2)));
  rows.push_back(Row("BERT-Large SL128 phase 1, unpacked (TF2, SDK 3.0)", "bow-pod64",
                     "Graphcore's published performance results table",
                     "16 x 4 IPUs, mb 8, GA 510 (assumed: 65280 / 128), [3,7,7,7]", 18199,
                     BertPretraining("bert-large", 8, 510, 16, {3, 7, 7, 7}, Framework::kTf2)));
  // BERT-Base phase 1 on a Bow Pod16 in three frameworks: the seed's
  // 4-IPU pipeline, replicated 4 times (global batch 65,536, or 65,280 for
  // TF2's GA of 510).
  const struct {
    const char* name;
    Framework framework;
    uint32_t grad_accum;
    double published;
  } base_pod16[] = {
      {"BERT-Base SL128 phase 1 (PyTorch, SDK 3.3)", Framework::kPopTorch, 512, 15911},
      {"BERT-Base SL128 phase 1 (PopART, SDK 3.1)", Framework::kPopArt, 512, 16391},
      {"BERT-Base SL128 phase 1 (TF2, SDK 3.3)", Framework::kTf2, 510, 15173},
  };
  for (const auto& b : base_pod16) {
    rows.push_back(Row(
        b.name, "bow-pod16", "Graphcore's published performance results table",
        "4 x 4 IPUs, mb 32, GA " + std::to_string(b.grad_accum) +
            " (assumed: the global batch / 128), [0,4,4,4]",
        b.published, BertPretraining("bert-base", 32, b.grad_accum, 4, {0, 4, 4, 4}, b.framework)));
  }
  rows.push_back(Row("ResNet-50 v1.5 (PyTorch, SDK 3.0)", "bow-pod16",
                     "Graphcore's published performance results table",
                     "16 x 1 IPU, mb 18, GA 57 (examples configs.yml `resnet50`), recompute", 37061,
                     ResNet50Benchmark(16, 57)));
  // Graphcore's earlier Bow table (pre-SDK 2.5). ResNet-50 in TensorFlow 1
  // with the MLPerf configurations of the same time (mlcommons
  // training_results_v1.1, Graphcore resnet configs.yml: micro-batch 20,
  // recomputation, the global batches the table gives).
  const struct {
    const char* system;
    uint32_t replicas, grad_accum;
    const char* config;
    double published;
  } resnet_tf1[] = {
      {"bow-pod16", 16, 6, "`mk2_resnet50_mlperf_pod16_bs20`, momentum", 42029},
      {"bow-pod64", 64, 2, "`mk2_resnet50_mlperf_pod64_bs20`, momentum", 145287},
      {"bow-pod256", 256, 2, "`mk2_resnet50_mlperf_pod256_lars`, LARS timed as momentum", 425514},
  };
  for (const auto& r : resnet_tf1) {
    Workload w = ResNet50Benchmark(r.replicas, r.grad_accum);
    w.micro_batch = 20;
    w.framework = Framework::kTf1;
    rows.push_back(Row(absl::StrCat("ResNet-50 v1.5, ", r.replicas, " IPUs (TF1, pre-SDK 2.5)"),
                       r.system,
                       "Graphcore's published performance results table (Bow, pre-SDK 2.5)",
                       absl::StrCat(r.replicas, " x 1 IPU, mb 20, GA ", r.grad_accum, " (",
                                    r.config, "), recompute"),
                       r.published, w));
  }
  // BERT-Large phase 1 from the same table: the usual 4-IPU pipeline; the
  // micro-batch and GA are assumed from the global batch.
  const struct {
    const char* name;
    const char* system;
    uint32_t replicas, grad_accum;
    Framework framework;
    double published;
  } large_early[] = {
      {"BERT-Large SL128 phase 1 (PopART, pre-SDK 2.5)", "bow-pod16", 4, 2048, Framework::kPopArt,
       5179},
      {"BERT-Large SL128 phase 1 (TF1, pre-SDK 2.5)", "bow-pod16", 4, 2050, Framework::kTf1, 5125},
      {"BERT-Large SL128 phase 1 (PopART, pre-SDK 2.5)", "bow-pod64", 16, 512, Framework::kPopArt,
       19353},
  };
  for (const auto& b : large_early) {
    rows.push_back(
        Row(b.name, b.system, "Graphcore's published performance results table (Bow, pre-SDK 2.5)",
            absl::StrCat(b.replicas, " x 4 IPUs, mb 8, GA ", b.grad_accum,
                         " (assumed: the global batch / 8 / replicas), [3,7,7,7]"),
            b.published,
            BertPretraining("bert-large", 8, b.grad_accum, b.replicas, {3, 7, 7, 7}, b.framework)));
  }
  PublishedResult alcf =
      Row("ResNet-50 resnet50-pod4, epoch 2, real data (PyTorch, SDK 3.1)", "bow-pod64",
          "argonne-lcf/user-guides, docs/ai-testbed/graphcore/example-programs.md (ALCF)",
          "4 x 1 IPU, global batch 16416: mb 18 x GA 228", 4476.7, ResNet50Benchmark(4, 228));
  alcf.host_input_unpublished = true;
  rows.push_back(alcf);
  const std::pair<uint32_t, double> scaling[] = {
      {1, 3079}, {2, 2120}, {4, 3421}, {8, 3541}, {16, 3261}};
  for (const auto& [ipus, rate] : scaling) {
    PublishedResult r = Row(
        "ResNet-50, real data, " + std::to_string(ipus) + " IPU" + (ipus == 1 ? "" : "s") +
            " (PyTorch, examples_utils)",
        "bow-pod64", "argonne-lcf/ai-testbed-userdocs, docs/graphcore/Scaling-ResNet50.md (ALCF)",
        std::to_string(ipus) + " x 1 IPU, mb 18, GA 57 per replica (assumed: configs.yml)", rate,
        ResNet50Benchmark(ipus, 57));
    r.host_input_unpublished = true;
    rows.push_back(r);
  }
  Workload tiny = *WorkloadPreset("bert-base");
  tiny.name = "transformer";
  tiny.transformer.hidden = 64;
  tiny.transformer.layers = 3;
  // graphcore/examples nlp/bert/pytorch/configs_pretraining.yml,
  // `demo_tiny_128`: real data read by one loader worker.
  tiny.transformer.heads = 8;
  tiny.seq_len = 128;
  tiny.micro_batch = 1;
  tiny.grad_accum = 16;
  tiny.ipus_per_replica = 4;
  tiny.layers_per_ipu = {0, 1, 1, 1};
  tiny.optimizer = Optimizer::kAdam;
  tiny.optimizer_state_offchip = true;
  tiny.framework = Framework::kPopTorch;
  PublishedResult demo =
      Row("BERT demo_tiny_128, 3 layers, hidden 64 (PyTorch, SDK 3.3)", "bow-pod16",
          "a public Bow Pod16 BERT tutorial (demo_tiny_128, SDK 3.3)",
          "1 x 4 IPUs, mb 1, GA 16, [0,1,1,1], AdamW off-chip, one loader "
          "worker (configs_pretraining.yml)",
          749.6, tiny);
  demo.host_input_unpublished = true;
  rows.push_back(demo);
  return rows;
}

absl::StatusOr<std::vector<ValidationRow>> RunValidation(const Calibration& calibration) {
  std::vector<ValidationRow> out;
  for (PublishedResult& r : PublishedResults()) {
    absl::StatusOr<SystemSpec> system = SystemSpecForPreset(r.system);
    if (!system.ok()) return system.status();
    absl::StatusOr<StepPrediction> p = PredictStep(r.workload, *system, calibration);
    if (!p.ok()) return p.status();
    ValidationRow row;
    row.predicted = p->sequences_per_sec;
    row.error = row.predicted / r.published - 1;
    row.result = std::move(r);
    out.push_back(std::move(row));
  }
  return out;
}

ValidationSummary SummariseValidation(const std::vector<ValidationRow>& rows,
                                      bool with_unpublished_host_input) {
  ValidationSummary s;
  std::vector<double> errors;
  for (const ValidationRow& r : rows) {
    if (r.result.calibration) continue;
    if (r.result.host_input_unpublished && !with_unpublished_host_input) continue;
    const double e = std::abs(r.error);
    errors.push_back(e);
    if (e >= s.worst_abs_error) {
      s.worst_abs_error = e;
      s.worst = r.result.name;
    }
  }
  s.rows = errors.size();
  if (errors.empty()) return s;
  std::sort(errors.begin(), errors.end());
  const size_t n = errors.size();
  s.median_abs_error = n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
  return s;
}

}  // namespace vipu::fabric::model
