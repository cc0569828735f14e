// What SetTopology tells an agent: its place in the cluster and its ports,
// and a fingerprint that tells two such requests apart.
#ifndef VIPU_SERVER_TOPOLOGY_REQUEST_H_
#define VIPU_SERVER_TOPOLOGY_REQUEST_H_

#include <string>

#include "server/cluster_links.h"
#include "vipu_agent.pb.h"

namespace vipu::server {

// What SetTopology tells `agent_id` (which must be in the cluster).
vipuagent::SetTopologyRequest TopologyRequest(const ClusterLinks& links,
                                              const std::string& agent_id);
// Changes whenever the request would (cluster, position or ports).
std::string TopologyFingerprint(const vipuagent::SetTopologyRequest& request);

}  // namespace vipu::server

#endif  // VIPU_SERVER_TOPOLOGY_REQUEST_H_
