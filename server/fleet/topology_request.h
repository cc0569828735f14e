// What SetTopology tells an agent: its place in the cluster and its ports,
// and a fingerprint that tells two such topologies apart.
#ifndef VIPU_SERVER_FLEET_TOPOLOGY_REQUEST_H_
#define VIPU_SERVER_FLEET_TOPOLOGY_REQUEST_H_

#include <string>

#include "server/fleet/agent_client.h"
#include "server/fleet/cluster_links.h"

namespace vipu::server {

// What SetTopology tells `agent_id` (which must be in the cluster).
AgentTopology TopologyFor(const ClusterLinks& links, const std::string& agent_id);
// Every field of `topology` in one string: equal exactly when the
// topologies are.
std::string TopologyFingerprint(const AgentTopology& topology);

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_TOPOLOGY_REQUEST_H_
