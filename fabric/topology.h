// Where each IPU of a cluster sits: ILDs of consecutive machines in the
// cluster's agent order, IPU topology ids 4*m+slot inside an ILD.
#ifndef VIPU_FABRIC_TOPOLOGY_H_
#define VIPU_FABRIC_TOPOLOGY_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"

namespace vipu::fabric {

// Owns a copy of the cluster. Immutable once built, so any number of threads
// may read one at once.
class ClusterLayout {
 public:
  // INVALID_ARGUMENT when the agents cannot be split into num_ilds equal ILDs
  // of at most kMaxIpusPerIld IPUs, or an agent id is listed twice.
  static absl::StatusOr<ClusterLayout> Build(const Cluster& cluster);

  const Cluster& cluster() const { return cluster_; }
  uint32_t num_ilds() const { return cluster_.num_ilds; }
  uint32_t machines_per_ild() const { return machines_per_ild_; }
  uint32_t ipus_per_ild() const { return machines_per_ild_ * kIpusPerMachine; }
  uint32_t num_ipus() const { return ipus_per_ild() * num_ilds(); }

  // Physical IPU at (ild, topology_id). The slot-to-IPU# mapping is reversed
  // as on real machines (device 0 is IPU# 3). An empty IpuRef when the
  // position is outside the cluster.
  IpuRef IpuAt(uint32_t ild, uint32_t topology_id) const;
  // Inverse of IpuAt; nullopt for an IPU outside the cluster.
  std::optional<std::pair<uint32_t, uint32_t>> PositionOf(const IpuRef& ipu) const;
  // Position of the agent in cluster().agent_ids (machine m of ILD i is
  // i * machines_per_ild() + m); nullopt for an agent outside the cluster.
  std::optional<uint32_t> MachineIndex(const std::string& agent_id) const;
  // PositionOf IPU# `ipu` (< kIpusPerMachine) of the machine at
  // `machine_index` (< agent count): no lookup.
  std::pair<uint32_t, uint32_t> PositionAt(uint32_t machine_index, uint32_t ipu) const;
  // Machine indexes ordered by agent id (std::string order): what
  // SortedAgentCursor walks.
  const std::vector<uint32_t>& by_agent_id() const { return by_agent_id_; }

 private:
  Cluster cluster_;
  uint32_t machines_per_ild_ = 0;
  // Position in cluster_.agent_ids. Hashed: a cluster has up to 16,384
  // machines.
  std::unordered_map<std::string, uint32_t> agent_index_;
  std::vector<uint32_t> by_agent_id_;
};

// MachineIndex for agent ids visited in increasing order, such as the agents
// of a std::set<IpuRef> or of a std::map by id: each lookup gallops forward
// from the previous one, so a sweep over a sorted list of the cluster's
// 16,384 machines costs a few string comparisons per machine instead of a
// hash lookup each. An id smaller than the previous one starts
// again from the beginning: still right, only slower. Borrows the layout,
// which must outlive it. Not thread-safe: one sweep per cursor.
class SortedAgentCursor {
 public:
  explicit SortedAgentCursor(const ClusterLayout& layout) : layout_(layout) {}
  std::optional<uint32_t> Find(const std::string& agent_id);

 private:
  const std::string& IdAt(size_t rank) const;

  const ClusterLayout& layout_;
  size_t rank_ = 0;  // rank in by_agent_id() of the first id >= the last one found
};

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_TOPOLOGY_H_
