// Preset pods for `vipu-server --simulate` and the model: pod4 .. pod256 and
// their bow- variants.
#ifndef VIPU_FABRIC_PODS_H_
#define VIPU_FABRIC_PODS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"

namespace vipu::fabric {

struct PodSpec {
  std::string name;  // "pod16", "bow-pod64", ...
  MachineType machine_type = MachineType::kM2000;
  uint32_t num_machines = 0;
  uint32_t num_ilds = 1;
  IldTopology topology = IldTopology::kTorus;
  ClusterTopology cluster_topology = ClusterTopology::kLooped;
};

// INVALID_ARGUMENT listing the known names when `name` is not one.
absl::StatusOr<PodSpec> PodPreset(std::string_view name);
std::vector<std::string> PodPresetNames();

// The cluster of a preset pod: agents "<prefix>1" .. "<prefix>N" in ladder
// order (ag1, ag2, ... as on real pods), the pod's ILDs and topologies.
Cluster PodCluster(const PodSpec& pod, std::string cluster_id,
                   std::string_view agent_id_prefix = "ag");

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_PODS_H_
