// The data plane's arithmetic: a workload description from an application
// attached to a partition becomes a model workload on a system of the
// partition's size, and the compute and link model (model/) gives its
// step time. No gRPC and no machine state here: the service checks the
// partition's health first.
#ifndef VIPU_AGENTS_WORKLOAD_RUNNER_H_
#define VIPU_AGENTS_WORKLOAD_RUNNER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::agents {

inline constexpr uint32_t kMaxWorkloadSteps = 100000;

// Mirrors vipuagent.WorkloadSpec; 0 / empty: the preset's value.
struct WorkloadRequest {
  std::string model;
  uint32_t micro_batch = 0;
  uint32_t grad_accum = 0;
  uint32_t device_iterations = 0;
  uint32_t replicas = 0;          // 0: fill the partition
  uint32_t ipus_per_replica = 0;  // 0: layers_per_ipu.size(), else the preset's
  uint32_t seq_len = 0;
  std::vector<uint32_t> layers_per_ipu;
  std::string optimizer;
  // Unset: the preset's value.
  std::optional<bool> optimizer_state_offchip;
  std::optional<bool> replicated_tensor_sharding;
  std::optional<bool> recompute;
  double packing = 0;                    // 0: the preset's; else finite and >= 1
  double host_loader_samples_per_s = 0;  // 0: not limiting; else finite and > 0
  // model kLayersModel: the network layer by layer.
  std::vector<model::TracedLayer> layers;
  double input_bytes_per_sample = 0;
  std::string network_name;
  bool inference = false;
};

// The model name of a network given layer by layer.
inline constexpr char kLayersModel[] = "layers";
inline constexpr size_t kMaxTracedLayers = 4096;

struct PartitionShape {
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  uint32_t size = 0;  // IPUs
  bool torus = false;
  uint32_t ilds = 0;  // ILDs it spans, over GW-Links; 0: as few as the size needs
};

struct WorkloadRun {
  std::vector<double> step_time_s;
  double samples_per_sec = 0;
};

// The model's view of a partition: its IPUs, in ILDs of at most 64.
model::SystemSpec PartitionSystem(const PartitionShape& shape);

// INVALID_ARGUMENT naming the field ("workload.model: ...", "steps: ...")
// when the request is incomplete or the workload does not fit the partition.
absl::StatusOr<model::Workload> BuildWorkload(const WorkloadRequest& request,
                                              uint32_t partition_size);

// The step times of `steps` steps of the request on a partition of
// `shape`. INVALID_ARGUMENT as BuildWorkload's, for a workload the model
// refuses, and for a layout whose fullest IPU cannot hold its weights,
// gradients, optimizer state and activations (model::CheckMemoryFits).
absl::StatusOr<WorkloadRun> PredictRun(const WorkloadRequest& request, const PartitionShape& shape,
                                       uint32_t steps);

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_WORKLOAD_RUNNER_H_
