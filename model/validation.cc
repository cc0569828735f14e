// The published results of the reference material, replayed through PredictStep.
#include "model/validation.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/collectives.h"
#include "model/ipu_memory.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"

namespace vipu::model {
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

// Graphcore's MLPerf BERT (mlcommons training_results, Graphcore/benchmarks/
// bert/implementations/popart/configs/*-closed.json): phase 2 at sequence
// length 512 with an average of two sequences a pack, 76 masked tokens, a
// 30,912-word vocabulary, LAMB with replicated tensor sharding, and the
// attention and FFN blocks placed apart (`att_ffn_placement`, here as half
// layers per IPU, IPU 0's holding the last layer beside the embedding).
Workload MlperfBert(uint32_t replicas, uint32_t micro_batch, uint32_t grad_accum,
                    std::vector<uint32_t> halves, bool state_offchip, StatePrecision precision) {
  Workload w = *WorkloadPreset("bert-large");
  w.transformer.vocab = 30912;
  w.transformer.masked_tokens = 76;
  w.seq_len = 512;
  w.packing = 2;
  w.micro_batch = micro_batch;
  w.grad_accum = grad_accum;
  w.replicas = replicas;
  w.ipus_per_replica = static_cast<uint32_t>(halves.size());
  w.half_layer_units = true;
  w.layers_per_ipu = std::move(halves);
  w.optimizer = Optimizer::kLamb;
  w.optimizer_state_offchip = state_offchip;
  w.optimizer_state_precision = precision;
  w.replicated_tensor_sharding = true;
  w.recompute = true;
  // RecomputationType::Pipeline, no recompute_checkpoint_every_layer.
  w.checkpoint_every_layer = false;
  w.framework = Framework::kPopArt;
  return w;
}

// Graphcore's MLPerf ResNet-50 in TensorFlow 1 (Graphcore/benchmarks/resnet/
// implementations/tensorflow/configs.yml, `mk2_resnet50_mlperf_pod*_lars`):
// one IPU per replica, recomputation, LARS timed as momentum.
Workload MlperfResNet(uint32_t replicas, uint32_t micro_batch, uint32_t grad_accum) {
  Workload w = ResNet50Benchmark(replicas, grad_accum);
  w.micro_batch = micro_batch;
  w.framework = Framework::kTf1;
  return w;
}

// graphcore/examples nlp/bert/pytorch/configs_pretraining.yml,
// `demo_tiny_128`: a 3-layer BERT of hidden size 64 on a 4-IPU pipeline,
// real data read by one loader worker.
Workload BertDemoTiny128() {
  Workload w = *WorkloadPreset("bert-base");
  w.name = "transformer";
  w.transformer.hidden = 64;
  w.transformer.layers = 3;
  w.transformer.heads = 8;
  w.seq_len = 128;
  w.micro_batch = 1;
  w.grad_accum = 16;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = {0, 1, 1, 1};
  w.optimizer = Optimizer::kAdam;
  w.optimizer_state_offchip = true;
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

PublishedResult CrossIldCalibrationRun() {
  PublishedResult r =
      Row("ResNet-50 v1.5, 256 IPUs (TF1, pre-SDK 2.5)", "bow-pod256",
          "Graphcore's published performance results table (Bow, pre-SDK 2.5)",
          "256 x 1 IPU, mb 20, GA 2 (`mk2_resnet50_mlperf_pod256_lars`, LARS timed as momentum), "
          "4 ILDs, 4 hosts",
          425514, MlperfResNet(256, 20, 2));
  r.calibration = true;
  r.calibrates = "the gateway's effective GW-Link throughput";
  return r;
}

// A table, one row per published figure, kept in one piece so that it reads
// as the list it is (scripts/function_size.sh exempts it by name): what is
// logic, building a workload, belongs in the helpers above.
std::vector<PublishedResult> PublishedResults() {
  std::vector<PublishedResult> rows;
  PublishedResult base =
      Row("BERT-Base pretrain_base_128_pod4 (PyTorch, SDK 3.3)", "bow-pod4",
          "EPCCed/eidf-docs, docs/services/graphcore/training/L2_multiple_IPU.md (EIDF, seed run)",
          "1 x 4 IPUs, mb 32, GA 2048, [0,4,4,4], LAMB off-chip", 4035.0,
          BertPretraining("bert-base", 32, 2048, 1, {0, 4, 4, 4}, Framework::kPopTorch));
  base.calibration = true;
  base.calibrates = "E_amp and t_step";
  rows.push_back(base);
  PublishedResult large =
      Row("BERT-Large pretrain_large_128_POD64 (PyTorch, SDK 3.3)", "bow-pod64",
          "EPCCed/eidf-docs, docs/services/graphcore/training/L2_multiple_IPU.md (EIDF, seed run)",
          "16 x 4 IPUs, mb 8, GA 512, [3,7,7,7], LAMB off-chip, RTS", 17692.1,
          BertPretraining("bert-large", 8, 512, 16, {3, 7, 7, 7}, Framework::kPopTorch));
  large.calibration = true;
  large.calibrates = "E_amp and t_step";
  rows.push_back(large);
  rows.push_back(CrossIldCalibrationRun());
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
  // MLPerf Training v2.0 (Bow, SDK 2.5.1) and v1.1 (IPU-M2000, SDK 2.3):
  // the rate of each run's timed training epochs (ResNet-50) or blocks
  // (BERT, sequences), the first left out, median over the submitted runs
  // (mlcommons training_results_v2.0 and _v1.1, Graphcore/results/*/
  // result_*.txt). The hosts: one per 64 IPUs (Graphcore/systems/*.json).
  const char* kMlperf20 =
      "mlcommons/training_results_v2.0, Graphcore/results (median rate of the timed epochs)";
  const char* kMlperf11 =
      "mlcommons/training_results_v1.1, Graphcore/results (median rate of the timed epochs)";
  const struct {
    const char* system;
    uint32_t replicas, micro_batch, grad_accum;
    const char* sdk;
    const char* source;
    double published;
  } resnet_mlperf[] = {
      {"bow-pod16", 16, 22, 10, "MLPerf v2.0, SDK 2.5.1", kMlperf20, 43133},
      {"bow-pod64", 64, 20, 4, "MLPerf v2.0, SDK 2.5.1", kMlperf20, 145952},
      {"bow-pod128", 128, 20, 2, "MLPerf v2.0, SDK 2.5.1", kMlperf20, 231512},
      {"pod16", 16, 20, 10, "MLPerf v1.1, SDK 2.3", kMlperf11, 29465},
      {"pod64", 64, 20, 3, "MLPerf v1.1, SDK 2.3", kMlperf11, 108006},
      {"pod128", 128, 20, 2, "MLPerf v1.1, SDK 2.3", kMlperf11, 181484},
      {"pod256", 256, 20, 2, "MLPerf v1.1, SDK 2.3", kMlperf11, 335367},
  };
  for (const auto& r : resnet_mlperf) {
    rows.push_back(Row(
        absl::StrCat("ResNet-50 v1.5, ", r.replicas, " IPUs (TF1, ", r.sdk, ")"), r.system,
        r.source,
        absl::StrCat(r.replicas, " x 1 IPU, mb ", r.micro_batch, " GA ", r.grad_accum,
                     " (`mk2_resnet50_mlperf_pod", r.replicas, "_lars`, LARS timed as momentum)"),
        r.published, MlperfResNet(r.replicas, r.micro_batch, r.grad_accum)));
  }
  // BERT phase 2 in PopART (and, for v2.0, PaddlePaddle, whose IPU backend
  // drives PopART): 8 IPUs a replica, except v1.1's Pod16 with 4.
  const std::vector<uint32_t> v20_pod16 = {1, 6, 7, 6, 7, 7, 7, 7};
  const std::vector<uint32_t> v20_pod64 = {2, 6, 6, 6, 7, 7, 7, 7};
  const std::vector<uint32_t> v11_pod16 = {9, 13, 13, 13};
  const std::vector<uint32_t> v11_pod64 = {3, 4, 6, 7, 7, 7, 7, 7};
  const struct {
    const char* name;
    const char* system;
    uint32_t replicas, micro_batch, grad_accum;
    const std::vector<uint32_t>* halves;
    bool offchip;
    StatePrecision precision;
    const char* config;
    const char* source;
    double published;
  } bert_mlperf[] = {
      {"BERT-Large SL512 packed, 16 IPUs (PopART, MLPerf v2.0, SDK 2.5.1)", "bow-pod16", 2, 3, 256,
       &v20_pod16, false, StatePrecision::kFp16, "pod16-closed.json", kMlperf20, 2304},
      {"BERT-Large SL512 packed, 16 IPUs (PaddlePaddle, MLPerf v2.0, SDK 2.5.1)", "bow-pod16", 2, 3,
       256, &v20_pod16, false, StatePrecision::kFp16, "paddlepaddle run_mlperf_POD16.sh", kMlperf20,
       2309},
      {"BERT-Large SL512 packed, 64 IPUs (PopART, MLPerf v2.0, SDK 2.5.1)", "bow-pod64", 8, 3, 96,
       &v20_pod64, false, StatePrecision::kFp16, "pod64-closed.json", kMlperf20, 7411},
      {"BERT-Large SL512 packed, 64 IPUs (PaddlePaddle, MLPerf v2.0, SDK 2.5.1)", "bow-pod64", 8, 3,
       96, &v20_pod64, false, StatePrecision::kFp16, "paddlepaddle run_mlperf_POD64.sh", kMlperf20,
       7463},
      {"BERT-Large SL512 packed, 128 IPUs (PopART, MLPerf v2.0, SDK 2.5.1)", "bow-pod128", 16, 3,
       64, &v20_pod64, false, StatePrecision::kFp16, "pod128-closed.json", kMlperf20, 12676},
      {"BERT-Large SL512 packed, 256 IPUs (PopART, MLPerf v2.0, SDK 2.5.1)", "bow-pod256", 32, 3,
       36, &v20_pod64, false, StatePrecision::kFp16, "pod256-closed.json", kMlperf20, 19071},
      {"BERT-Large SL512 packed, 16 IPUs (PopART, MLPerf v1.1, SDK 2.3)", "pod16", 4, 2, 192,
       &v11_pod16, true, StatePrecision::kFp32, "mk2/pod16-closed.json", kMlperf11, 1524},
      {"BERT-Large SL512 packed, 64 IPUs (PopART, MLPerf v1.1, SDK 2.3)", "pod64", 8, 2, 96,
       &v11_pod64, false, StatePrecision::kFp32, "mk2/pod64-closed.json", kMlperf11, 4792},
      {"BERT-Large SL512 packed, 128 IPUs (PopART, MLPerf v1.1, SDK 2.3)", "pod128", 16, 2, 96,
       &v11_pod64, false, StatePrecision::kFp32, "mk2/pod128-closed.json", kMlperf11, 9028},
  };
  for (const auto& b : bert_mlperf) {
    const std::vector<uint32_t>& halves = *b.halves;
    rows.push_back(
        Row(b.name, b.system, b.source,
            absl::StrCat(b.replicas, " x ", halves.size(), " IPUs, mb ", b.micro_batch, ", GA ",
                         b.grad_accum, ", half layers per IPU [", absl::StrJoin(halves, ","), "] (",
                         b.config, ")"),
            b.published,
            MlperfBert(b.replicas, b.micro_batch, b.grad_accum, halves, b.offchip, b.precision)));
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
  PublishedResult demo =
      Row("BERT demo_tiny_128, 3 layers, hidden 64 (PyTorch, SDK 3.3)", "bow-pod16",
          "a public Bow Pod16 BERT tutorial (demo_tiny_128, SDK 3.3)",
          "1 x 4 IPUs, mb 1, GA 16, [0,1,1,1], AdamW off-chip, one loader "
          "worker (configs_pretraining.yml)",
          749.6, BertDemoTiny128());
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
    const MemoryEstimate memory = EstimateMemory(r.workload, *system, *p);
    row.fits = memory.fits;
    row.fullest_ipu = memory.fullest;
    row.fullest_bytes = memory.ipus.empty() ? 0 : memory.ipus[memory.fullest].TotalBytes();
    row.capacity_bytes = memory.capacity_bytes;
    row.predicted = p->sequences_per_sec;
    row.error = row.predicted / r.published - 1;
    row.result = std::move(r);
    out.push_back(std::move(row));
  }
  return out;
}

absl::StatusOr<CrossIldFit> SolveCrossIldThroughput(const Calibration& calibration) {
  const PublishedResult run = CrossIldCalibrationRun();
  absl::StatusOr<SystemSpec> system = SystemSpecForPreset(run.system);
  if (!system.ok()) return system.status();
  CrossIldFit fit;
  fit.run = run.name;
  fit.used_bps = calibration.gw_effective_bps_per_machine;
  fit.line_payload_bps = GwLinkPayloadBps(*system);
  // The prediction falls as the throughput falls: bisect on its logarithm
  // between 1 MB/s and the line's payload rate.
  auto predicted = [&](double bps) -> absl::StatusOr<double> {
    Calibration c = calibration;
    c.gw_effective_bps_per_machine = bps;
    absl::StatusOr<StepPrediction> p = PredictStep(run.workload, *system, c);
    if (!p.ok()) return p.status();
    return p->sequences_per_sec;
  };
  double lo = 1e6;
  double hi = fit.line_payload_bps;
  absl::StatusOr<double> at_lo = predicted(lo);
  absl::StatusOr<double> at_hi = predicted(hi);
  if (!at_lo.ok()) return at_lo.status();
  if (!at_hi.ok()) return at_hi.status();
  if (!(*at_lo <= run.published && run.published <= *at_hi)) {
    return absl::InternalError(
        absl::StrCat("cross-ILD calibration: no GW-Link throughput up to the line rate gives ",
                     run.published, " for ", run.name, " (", *at_lo, " to ", *at_hi, ")"));
  }
  for (int i = 0; i < 60; ++i) {
    const double mid = std::sqrt(lo * hi);
    absl::StatusOr<double> at = predicted(mid);
    if (!at.ok()) return at.status();
    (*at < run.published ? lo : hi) = mid;
  }
  fit.solved_bps = std::sqrt(lo * hi);
  fit.share_of_line = fit.used_bps / fit.line_payload_bps;
  fit.plausible = fit.used_bps > 0 && fit.used_bps <= fit.line_payload_bps;
  return fit;
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

}  // namespace vipu::model
