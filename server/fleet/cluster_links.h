// The links of a cluster, as the server needs them: its layout (where each
// machine and IPU sits) and the links between its machines' ports, from
// which the ports each partition owns, what SetTopology tells each agent and
// the faults that touch a partition are derived.
#ifndef VIPU_SERVER_FLEET_CLUSTER_LINKS_H_
#define VIPU_SERVER_FLEET_CLUSTER_LINKS_H_

#include "fabric/link_topology.h"
#include "fabric/topology.h"

namespace vipu::server {

struct ClusterLinks {
  fabric::ClusterLayout layout;
  fabric::LinkTopology topology;
};

// The links of `layout`. Costs hundreds of milliseconds at 16,384 machines:
// the server asks a ClusterLinksCache (server/fleet/cluster_links_cache.h) instead.
ClusterLinks BuildClusterLinks(fabric::ClusterLayout layout);

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_CLUSTER_LINKS_H_
