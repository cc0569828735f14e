// Data-plane arithmetic: a RunWorkload request becomes a model workload and its step times.
#include "agents/workload_runner.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "fabric/pods.h"
#include "model/ipu_memory.h"
#include "model/prediction_format.h"
#include "model/step_predictor.h"

namespace vipu::agents {

model::SystemSpec PartitionSystem(const PartitionShape& shape) {
  fabric::PodSpec pod;
  pod.name = absl::StrCat("partition of ", shape.size, " IPUs");
  pod.machine_type = shape.machine_type;
  pod.num_machines =
      std::max<uint32_t>(1, (shape.size + fabric::kIpusPerMachine - 1) / fabric::kIpusPerMachine);
  pod.num_ilds = shape.ilds != 0 ? shape.ilds
                                 : std::max<uint32_t>(1, (shape.size + fabric::kMaxIpusPerIld - 1) /
                                                             fabric::kMaxIpusPerIld);
  pod.topology = shape.torus ? fabric::IldTopology::kTorus : fabric::IldTopology::kMesh;
  model::SystemSpec spec = model::SystemSpecFromPod(pod);
  // A partition of 1 or 2 IPUs is part of one machine.
  spec.num_ipus = shape.size;
  // A partition over several ILDs has one equal segment in each; its
  // collectives cross the GW-Links between them.
  spec.ipus_per_ild = std::min(shape.size / pod.num_ilds, fabric::kMaxIpusPerIld);
  return spec;
}

namespace {

// The request's batching, layout and options over `w`; INVALID_ARGUMENT
// naming the field.
absl::StatusOr<model::Workload> Customise(const WorkloadRequest& request, uint32_t partition_size,
                                          model::Workload w);

// A network given layer by layer starts from what a PyTorch program
// usually is: plain SGD, no recomputation, one IPU per replica, one sample.
absl::StatusOr<model::Workload> LayersWorkload(const WorkloadRequest& request) {
  if (request.layers.empty() || request.layers.size() > kMaxTracedLayers) {
    return absl::InvalidArgumentError(absl::StrCat("workload.layers: must hold 1..",
                                                   kMaxTracedLayers, " layers, got ",
                                                   request.layers.size()));
  }
  model::Workload w;
  w.name = request.network_name.empty() ? kLayersModel : request.network_name;
  w.family = model::ModelFamily::kLayers;
  w.layers = request.layers;
  w.layers_input_bytes_per_sample = request.input_bytes_per_sample;
  w.optimizer = model::Optimizer::kSgd;
  w.recompute = false;
  w.seq_len = 1;
  return w;
}

}  // namespace

absl::StatusOr<model::Workload> BuildWorkload(const WorkloadRequest& request,
                                              uint32_t partition_size) {
  if (request.model == kLayersModel) {
    ASSIGN_OR_RETURN(model::Workload layered, LayersWorkload(request));
    return Customise(request, partition_size, std::move(layered));
  }
  if (!request.layers.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.layers: only with model \"", kLayersModel, "\""));
  }
  if (request.model.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.model: must name a preset (",
                     absl::StrJoin(model::WorkloadPresetNames(), ", "), ")"));
  }
  absl::StatusOr<model::Workload> preset = model::WorkloadPreset(request.model);
  if (!preset.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("workload.model: ", preset.status().message()));
  }
  return Customise(request, partition_size, *preset);
}

namespace {

absl::StatusOr<model::Workload> Customise(const WorkloadRequest& request, uint32_t partition_size,
                                          model::Workload w) {
  w.training = !request.inference;
  if (request.micro_batch != 0) w.micro_batch = request.micro_batch;
  if (request.grad_accum != 0) w.grad_accum = request.grad_accum;
  if (request.device_iterations != 0) w.device_iterations = request.device_iterations;
  if (request.seq_len != 0) w.seq_len = request.seq_len;
  if (!request.layers_per_ipu.empty()) w.layers_per_ipu = request.layers_per_ipu;
  if (request.ipus_per_replica != 0) {
    w.ipus_per_replica = request.ipus_per_replica;
  } else if (!request.layers_per_ipu.empty()) {
    w.ipus_per_replica = static_cast<uint32_t>(request.layers_per_ipu.size());
  }
  if (!request.optimizer.empty()) {
    absl::StatusOr<model::Optimizer> o = model::ParseOptimizer(request.optimizer);
    if (!o.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("workload.optimizer: ", o.status().message()));
    }
    w.optimizer = *o;
  }
  if (request.optimizer_state_offchip) w.optimizer_state_offchip = *request.optimizer_state_offchip;
  if (request.replicated_tensor_sharding) {
    w.replicated_tensor_sharding = *request.replicated_tensor_sharding;
  }
  if (request.recompute) w.recompute = *request.recompute;
  if (request.packing != 0) {
    if (!std::isfinite(request.packing) || request.packing < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload.packing: must be 0 (the preset's) or a finite number >= 1, got ",
                       request.packing));
    }
    w.packing = request.packing;
  }
  if (!std::isfinite(request.host_loader_samples_per_s) || request.host_loader_samples_per_s < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload.host_loader_samples_per_s: must be 0 (not limiting) or a finite number > 0, "
        "got ",
        request.host_loader_samples_per_s));
  }
  w.host_loader_samples_per_s = request.host_loader_samples_per_s;
  if (w.ipus_per_replica == 0) {
    return absl::InvalidArgumentError("workload.ipus_per_replica: must be at least 1");
  }
  if (w.ipus_per_replica > partition_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.ipus_per_replica: ", w.ipus_per_replica,
                     " IPUs per replica do not fit the partition's ", partition_size, " IPUs"));
  }
  w.replicas = request.replicas != 0 ? request.replicas : partition_size / w.ipus_per_replica;
  return w;
}

}  // namespace

absl::StatusOr<WorkloadRun> PredictRun(const WorkloadRequest& request, const PartitionShape& shape,
                                       uint32_t steps) {
  if (steps == 0 || steps > kMaxWorkloadSteps) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps: must be 1..", kMaxWorkloadSteps, ", got ", steps));
  }
  if (shape.size == 0) return absl::InvalidArgumentError("partition size: unknown (0)");
  ASSIGN_OR_RETURN(model::Workload workload, BuildWorkload(request, shape.size));
  const model::SystemSpec system = PartitionSystem(shape);
  absl::StatusOr<model::StepPrediction> prediction = model::PredictStep(workload, system);
  if (!prediction.ok()) {
    // The model names the workload field ("replicas: ..."); say where it came from.
    return absl::InvalidArgumentError(absl::StrCat("workload.", prediction.status().message()));
  }
  // No step time for a layout the IPUs could not load; refused in the
  // words of `ipu-model predict`.
  RETURN_IF_ERROR(model::CheckMemoryFits(model::EstimateMemory(workload, system, *prediction)));
  WorkloadRun run;
  // The model is deterministic: every step of a steady run takes the same time.
  run.step_time_s.assign(steps, prediction->step_time_s);
  run.samples_per_sec = prediction->samples_per_sec;
  return run;
}

}  // namespace vipu::agents
