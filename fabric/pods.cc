// The preset pods (pod4 .. pod256 and bow- variants): shapes, specs and their clusters.
#include "fabric/pods.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vipu::fabric {
namespace {

struct PodShape {
  const char* name;
  uint32_t num_machines;
  uint32_t num_ilds;
  IldTopology topology;
};

// One ILD is at most one POD64 rack; bigger pods join racks over GW-Links.
constexpr PodShape kShapes[] = {
    {"pod4", 1, 1, IldTopology::kMesh},     {"pod16", 4, 1, IldTopology::kMesh},
    {"pod64", 16, 1, IldTopology::kTorus},  {"pod128", 32, 2, IldTopology::kTorus},
    {"pod256", 64, 4, IldTopology::kTorus},
};

PodSpec SpecFor(const PodShape& shape, MachineType machine_type) {
  PodSpec spec;
  const bool bow = machine_type == MachineType::kBow;
  spec.name = absl::StrCat(bow ? "bow-" : "", shape.name);
  spec.machine_type = machine_type;
  spec.num_machines = shape.num_machines;
  spec.num_ilds = shape.num_ilds;
  spec.topology = shape.topology;
  // Bow Pod256 joins its four Pod64s through GW-Link switches; every other
  // multi-rack pod cross-connects its racks directly (looped).
  spec.cluster_topology =
      (bow && shape.num_machines == 64) ? ClusterTopology::kSwitched : ClusterTopology::kLooped;
  return spec;
}

}  // namespace

std::vector<std::string> PodPresetNames() {
  std::vector<std::string> names;
  for (MachineType type : {MachineType::kM2000, MachineType::kBow}) {
    for (const PodShape& shape : kShapes) names.push_back(SpecFor(shape, type).name);
  }
  return names;
}

absl::StatusOr<PodSpec> PodPreset(std::string_view name) {
  const std::string key = absl::AsciiStrToLower(std::string(name));
  for (MachineType type : {MachineType::kM2000, MachineType::kBow}) {
    for (const PodShape& shape : kShapes) {
      PodSpec spec = SpecFor(shape, type);
      if (spec.name == key) return spec;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("pod: unknown preset \"", std::string(name),
                   "\"; known: ", absl::StrJoin(PodPresetNames(), ", ")));
}

Cluster PodCluster(const PodSpec& pod, std::string cluster_id, std::string_view agent_id_prefix) {
  Cluster cluster;
  cluster.id = std::move(cluster_id);
  for (uint32_t i = 1; i <= pod.num_machines; ++i) {
    cluster.agent_ids.push_back(absl::StrCat(std::string(agent_id_prefix), i));
  }
  cluster.num_ilds = pod.num_ilds;
  cluster.topology = pod.topology;
  cluster.cluster_topology = pod.cluster_topology;
  return cluster;
}

}  // namespace vipu::fabric
