// Telling an agent its place in the cluster and its ports (SetTopology),
// once per registration and whenever the cluster changes: the registry
// remembers what each agent was told.
#ifndef VIPU_SERVER_TOPOLOGY_PUSH_H_
#define VIPU_SERVER_TOPOLOGY_PUSH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/agent_driver.h"
#include "server/agent_registry.h"
#include "server/cluster_links.h"

namespace vipu::server {

// OK when the agent already knows this topology or took it now;
// UNAVAILABLE when it is not registered or did not answer within `deadline`.
absl::Status EnsureTopology(AgentDriver* driver, AgentRegistry* registry, const ClusterLinks& links,
                            const std::string& agent_id, absl::Duration deadline);

}  // namespace vipu::server

#endif  // VIPU_SERVER_TOPOLOGY_PUSH_H_
