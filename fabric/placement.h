// Choosing IPUs for a partition: aligned power-of-two blocks inside one ILD
// (1, 2 or 4 IPUs inside a machine; 8..64 on consecutive machines), or an
// equal aligned segment in each of num_ilds ILDs for larger partitions.
#ifndef VIPU_FABRIC_PLACEMENT_H_
#define VIPU_FABRIC_PLACEMENT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/topology.h"
#include "fabric/types.h"

namespace vipu::fabric {

struct PlacementRequest {
  uint32_t size = 0;      // power of two
  uint32_t num_ilds = 0;  // 0: as few as possible
  // Explicit choice of (ild, topology_id); empty: choose.
  std::vector<PartitionIpu> explicit_ipus;
};

// Returns the partition's IPUs ordered by segment then routing id, with all
// PartitionIpu fields set. Only IPUs on `allowed_agents` and not in `used`
// are considered. Errors: RESOURCE_EXHAUSTED (no free block of that size),
// INVALID_ARGUMENT (size/num_ilds impossible on this cluster, explicit IPUs
// not an aligned block, outside the allocation, or duplicated),
// ALREADY_EXISTS is never returned; an explicit IPU that is used gives
// RESOURCE_EXHAUSTED naming it. A RESOURCE_EXHAUSTED message is a clause
// about the pod ("no ILD of cluster pod64 has a free aligned block of 16
// IPUs") with no field prefix: the caller knows what it asked for and which
// agents it allowed, and says so around it.
// Choice: best fit, buddy style (the block whose enclosing aligned 2x, 4x, ..
// blocks up to the ILD are the most used; ties: lowest ILD, lowest offset).
// Multi-ILD: consecutive ILDs, with the segment at the same aligned offset in
// each, so that the partition owns the GW-Links between its machines (a
// GW-Link joins a machine to the same machine of the next ILD).
// num_ilds 0 means the smallest power of two with size/num_ilds <= ILD size.
// Linear in the number of ILDs (one 64-bit mask per ILD) plus one lookup
// per allowed agent and a sorted sweep of the used IPUs (MasksOf).
absl::StatusOr<std::vector<PartitionIpu>> Place(const ClusterLayout& layout,
                                                const std::set<std::string>& allowed_agents,
                                                const std::set<IpuRef>& used,
                                                const PlacementRequest& request);

// What placement may use, as one 64-bit mask per ILD (bit t: topology id t):
// the IPUs on allowed machines and the IPUs held by partitions.
struct IldMasks {
  std::vector<uint64_t> allowed;  // num_ilds() entries
  std::vector<uint64_t> used;     // num_ilds() entries
};

// Masks of `layout` from the machines allowed by index (allowed_machines[i]
// for ClusterLayout::MachineIndex i; shorter than the cluster: the rest are
// not allowed) and the used IPUs (those outside the cluster are ignored;
// the set's order by agent makes this one SortedAgentCursor sweep).
IldMasks MasksOf(const ClusterLayout& layout, const std::vector<bool>& allowed_machines,
                 const std::set<IpuRef>& used);

// Place as above, from masks: no lookup per machine. The same result as the
// overload with sets whose allowed agents and used IPUs give these masks.
// What a server managing 16,384 machines calls on every create.
// INVALID_ARGUMENT ("masks: ...") unless both hold num_ilds() entries.
absl::StatusOr<std::vector<PartitionIpu>> Place(const ClusterLayout& layout, const IldMasks& masks,
                                                const PlacementRequest& request);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_PLACEMENT_H_
