#include "fabric/topology.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace vipu::fabric {

absl::StatusOr<ClusterLayout> ClusterLayout::Build(const Cluster& cluster) {
  const size_t agents = cluster.agent_ids.size();
  if (cluster.num_ilds == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster ", cluster.id, ": num_ilds must be at least 1"));
  }
  if (agents == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster ", cluster.id, ": agents: must list at least one agent"));
  }
  if (agents % cluster.num_ilds != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cluster ", cluster.id, ": num_ilds: ", agents,
                                                   " agents cannot be split into ",
                                                   cluster.num_ilds, " equal ILDs"));
  }
  const uint32_t machines_per_ild = static_cast<uint32_t>(agents / cluster.num_ilds);
  if (machines_per_ild * kIpusPerMachine > kMaxIpusPerIld) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster ", cluster.id, ": num_ilds: an ILD holds at most ", kMaxIpusPerIld,
                     " IPUs (", kMaxIpusPerIld / kIpusPerMachine, " machines), got ",
                     machines_per_ild, " machines per ILD; use more ILDs"));
  }
  ClusterLayout layout;
  for (size_t i = 0; i < agents; ++i) {
    const std::string& id = cluster.agent_ids[i];
    if (!layout.agent_index_.emplace(id, static_cast<uint32_t>(i)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster ", cluster.id, ": agents: agent ", id, " is listed twice"));
    }
  }
  layout.cluster_ = cluster;
  layout.machines_per_ild_ = machines_per_ild;
  return layout;
}

IpuRef ClusterLayout::IpuAt(uint32_t ild, uint32_t topology_id) const {
  if (ild >= num_ilds() || topology_id >= ipus_per_ild()) return IpuRef{};
  const uint32_t machine = topology_id / kIpusPerMachine;
  const uint32_t slot = topology_id % kIpusPerMachine;
  return IpuRef{cluster_.agent_ids[ild * machines_per_ild_ + machine], kIpusPerMachine - 1 - slot};
}

std::optional<std::pair<uint32_t, uint32_t>> ClusterLayout::PositionOf(const IpuRef& ipu) const {
  if (ipu.ipu >= kIpusPerMachine) return std::nullopt;
  auto it = agent_index_.find(ipu.agent_id);
  if (it == agent_index_.end()) return std::nullopt;
  const uint32_t ild = it->second / machines_per_ild_;
  const uint32_t machine = it->second % machines_per_ild_;
  return std::make_pair(ild, machine * kIpusPerMachine + (kIpusPerMachine - 1 - ipu.ipu));
}

}  // namespace vipu::fabric
