// Where each IPU of a cluster sits: ILDs of consecutive machines in the
// cluster's agent order, IPU topology ids 4*m+slot inside an ILD.
#ifndef VIPU_FABRIC_TOPOLOGY_H_
#define VIPU_FABRIC_TOPOLOGY_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"

namespace vipu::fabric {

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

 private:
  Cluster cluster_;
  uint32_t machines_per_ild_ = 0;
  std::map<std::string, uint32_t> agent_index_;  // position in cluster_.agent_ids
};

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_TOPOLOGY_H_
