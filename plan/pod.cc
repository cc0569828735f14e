// Pods of a replay: the server's presets, or ILDs x machines.
#include "plan/pod.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fabric/topology.h"

namespace vipu::plan {

absl::StatusOr<PlanPod> ParsePod(absl::string_view text) {
  const std::string key = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(text)));
  PlanPod pod;
  if (absl::StatusOr<fabric::PodSpec> preset = fabric::PodPreset(key); preset.ok()) {
    pod.spec = *preset;
  } else {
    absl::string_view shape = key;
    const bool bow = absl::ConsumePrefix(&shape, "bow-");
    std::vector<absl::string_view> parts = absl::StrSplit(shape, 'x');
    uint32_t ilds = 0, machines = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &ilds) ||
        !absl::SimpleAtoi(parts[1], &machines)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pod: \"", std::string(text), "\" is neither a preset (",
          absl::StrJoin(fabric::PodPresetNames(), ", "), ") nor ILDSxMACHINES such as 64x16"));
    }
    if (ilds < 1 || ilds > 4096 || machines < 1 ||
        machines * fabric::kIpusPerMachine > fabric::kMaxIpusPerIld) {
      return absl::InvalidArgumentError(
          absl::StrCat("pod: ", std::string(text), ": need 1..4096 ILDs of 1..",
                       fabric::kMaxIpusPerIld / fabric::kIpusPerMachine, " machines"));
    }
    pod.spec.name = std::string(key);
    pod.spec.machine_type = bow ? fabric::MachineType::kBow : fabric::MachineType::kM2000;
    pod.spec.num_machines = ilds * machines;
    pod.spec.num_ilds = ilds;
    pod.spec.topology = machines * fabric::kIpusPerMachine == fabric::kMaxIpusPerIld
                            ? fabric::IldTopology::kTorus
                            : fabric::IldTopology::kMesh;
    pod.spec.cluster_topology =
        ilds > 4 ? fabric::ClusterTopology::kSwitched : fabric::ClusterTopology::kLooped;
  }
  pod.cluster = fabric::PodCluster(pod.spec, pod.spec.name);
  if (absl::StatusOr<fabric::ClusterLayout> layout = fabric::ClusterLayout::Build(pod.cluster);
      !layout.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("pod: ", layout.status().message()));
  }
  return pod;
}

}  // namespace vipu::plan
