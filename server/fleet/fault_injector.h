// `vipu-admin inject fault`: checks a fault request against the database
// (the agent exists, is connected, has a link on the port in its cluster)
// and forwards it to the agent, which injects it. The server then learns
// the fault like any other: from the agent's heartbeats (or their absence).
#ifndef VIPU_SERVER_FLEET_FAULT_INJECTOR_H_
#define VIPU_SERVER_FLEET_FAULT_INJECTOR_H_

#include <string>

#include "absl/status/statusor.h"
#include "fabric/fault_request.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"

namespace vipu::server {

// Borrows the store, links cache, registry and agent client. Thread-safe: it
// keeps no state of its own, so gRPC threads may inject at once.
class FaultInjector {
 public:
  // Everything passed in is the caller's and must outlive this.
  FaultInjector(storage::Store* store, ClusterLinksCache* cluster_links, AgentRegistry* registry,
                AgentClient* agents)
      : store_(store), cluster_links_(cluster_links), registry_(registry), agents_(agents) {}

  // The agent's description of what it did ("agent ag3: IPU 2 error").
  // INVALID_ARGUMENT (fabric::ValidateFaultRequest; a port with no link on
  // that machine), NOT_FOUND (unknown agent), FAILED_PRECONDITION (link-down
  // on an agent in no cluster), UNAVAILABLE (agent not connected or not
  // answering).
  absl::StatusOr<std::string> Inject(const fabric::FaultRequest& request);

 private:
  storage::Store* store_;
  ClusterLinksCache* cluster_links_;
  AgentRegistry* registry_;
  AgentClient* agents_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_FAULT_INJECTOR_H_
