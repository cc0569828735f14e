// ClusterLayout (where each IPU of a cluster sits) and SortedAgentCursor's galloping lookups.
#include "fabric/topology.h"

#include <algorithm>

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
  layout.agent_index_.reserve(agents);
  for (size_t i = 0; i < agents; ++i) {
    const std::string& id = cluster.agent_ids[i];
    if (!layout.agent_index_.emplace(id, static_cast<uint32_t>(i)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster ", cluster.id, ": agents: agent ", id, " is listed twice"));
    }
  }
  layout.cluster_ = cluster;
  layout.machines_per_ild_ = machines_per_ild;
  layout.by_agent_id_.resize(agents);
  for (size_t i = 0; i < agents; ++i) layout.by_agent_id_[i] = static_cast<uint32_t>(i);
  const std::vector<std::string>& ids = layout.cluster_.agent_ids;
  std::sort(layout.by_agent_id_.begin(), layout.by_agent_id_.end(),
            [&ids](uint32_t a, uint32_t b) { return ids[a] < ids[b]; });
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
  const std::optional<uint32_t> index = MachineIndex(ipu.agent_id);
  if (!index) return std::nullopt;
  return PositionAt(*index, ipu.ipu);
}

std::pair<uint32_t, uint32_t> ClusterLayout::PositionAt(uint32_t machine_index,
                                                        uint32_t ipu) const {
  const uint32_t ild = machine_index / machines_per_ild_;
  const uint32_t machine = machine_index % machines_per_ild_;
  return std::make_pair(ild, machine * kIpusPerMachine + (kIpusPerMachine - 1 - ipu));
}

std::optional<uint32_t> ClusterLayout::MachineIndex(const std::string& agent_id) const {
  auto it = agent_index_.find(agent_id);
  if (it == agent_index_.end()) return std::nullopt;
  return it->second;
}

const std::string& SortedAgentCursor::IdAt(size_t rank) const {
  return layout_.cluster().agent_ids[layout_.by_agent_id()[rank]];
}

std::optional<uint32_t> SortedAgentCursor::Find(const std::string& agent_id) {
  const size_t n = layout_.by_agent_id().size();
  // Every rank below rank_ must hold a smaller id; else start again.
  if (rank_ > 0 && !(IdAt(rank_ - 1) < agent_id)) rank_ = 0;
  // Gallop: the first rank >= agent_id lies in (lo, hi].
  size_t lo = rank_;
  size_t step = 1;
  size_t hi = rank_;
  while (hi < n && IdAt(hi) < agent_id) {
    lo = hi + 1;
    hi = rank_ + step;
    step *= 2;
  }
  if (hi > n) hi = n;
  while (lo < hi) {  // lower bound in [lo, hi)
    const size_t mid = lo + (hi - lo) / 2;
    if (IdAt(mid) < agent_id) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  rank_ = lo;
  if (rank_ < n && IdAt(rank_) == agent_id) return layout_.by_agent_id()[rank_];
  return std::nullopt;
}

}  // namespace vipu::fabric
