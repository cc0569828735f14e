// Rules a request must satisfy before anything changes (invariant 4). Each
// error is INVALID_ARGUMENT with a message that names the field and the rule.
#ifndef VIPU_FABRIC_VALIDATION_H_
#define VIPU_FABRIC_VALIDATION_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fabric/topology.h"
#include "fabric/types.h"

namespace vipu::fabric {

// `field` names the id in the message, e.g. "partition id".
absl::Status ValidateId(std::string_view field, std::string_view id);
bool IsPowerOfTwo(uint32_t n);

// Checks that need no state: id, size (power of two, 1..65536), num_gcds
// (power of two dividing size), num_replicas (multiple of num_gcds, at most
// size: a replica needs an IPU), reconfigurable only with c2-compatible (or
// undefined) sync type, ST_GS2_INDEPENDENT_RAILS refused, num_ilds (power of
// two), explicit ipus require cluster_id and count == size. Messages name the
// wire field of virmgrpc.PartitionRequirements (num_ipulink_segments for
// num_ilds, ipulink_routing_type for routing, gw_routing_type, ...), as do
// those of ResolveDefaults.
absl::Status ValidatePartitionRequest(const PartitionRequest& request);

// Fills what the client left to us from the request and the cluster:
// num_gcds 1, num_replicas = num_gcds, sync type (c2-compatible when
// reconfigurable, else pod-native-default), num_ilds (the ILDs the explicit
// ipus span, else the smallest power of two with size/num_ilds <= ILD size,
// i.e. ceil(size/ILD size) on 64-IPU ILDs), routing (DNC for <= 4 IPUs,
// RINGSWNC when every segment is a whole torus ILD, SWNC otherwise), GW
// routing (undefined for one ILD, RING looped, SWRING switched). Runs
// ValidatePartitionRequest first. INVALID_ARGUMENT when an explicit choice
// does not fit (e.g. RINGSWNC on a block that is not a whole torus ILD, GW
// routing on a one-ILD partition, RING on a switched or SWRING on a looped
// cluster, segments larger than an ILD, more ILDs than the cluster has).
absl::StatusOr<PartitionRequest> ResolveDefaults(const PartitionRequest& request,
                                                 const ClusterLayout& layout);
// ResolveDefaults of a request ValidatePartitionRequest has already
// accepted, without validating it again: a create validates once and then
// resolves once per candidate allocation.
absl::StatusOr<PartitionRequest> ResolveValidatedDefaults(const PartitionRequest& request,
                                                          const ClusterLayout& layout);

// OK when `num_ilds` ILDs fit the cluster of `layout`; otherwise
// INVALID_ARGUMENT saying what is too many: the ILDs asked for, under
// `ilds_field`, when `asked`; else the size, which needs them.
absl::Status CheckIldCount(const ClusterLayout& layout, uint32_t size, uint32_t num_ilds,
                           bool asked, std::string_view ilds_field);

// The partition a resolved request (ResolveDefaults' result) describes, on
// `ipus`: its id and every setting the client chose or was given. Where it
// lives (cluster, allocation), who owns it, its state, generation and times
// are the caller's to set; they keep Partition's defaults.
Partition PartitionFromRequest(const PartitionRequest& resolved, std::vector<PartitionIpu> ipus);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_VALIDATION_H_
