// vipuagent.AgentRegistry: agents register (address, machine, what they hold)
// and heartbeat. Registration triggers reconciliation of that agent. The batch
// calls carry many machines of one agent process, so that a large fleet costs a
// few RPCs per heartbeat period: a batch is validated whole before anything is
// recorded.
#ifndef VIPU_SERVER_API_REGISTRY_SERVICE_H_
#define VIPU_SERVER_API_REGISTRY_SERVICE_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "server/control/inventory.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_registry.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

// Most agents in one RegisterBatch or HeartbeatBatch call: keeps a batch of
// full reports well under gRPC's 4 MB message limit.
inline constexpr size_t kMaxAgentsPerBatch = 1024;

// Borrows the inventory, registry and controller, which must outlive it.
// Thread-safe: gRPC runs its RPCs at once and it keeps no state of
// its own.
class RegistryService final : public vipuagent::AgentRegistry::Service {
 public:
  // `require_certificates` (secure mode): every call must come from a
  // certificate that names the agent it is about (SAN DNS:<agent-id>,
  // docs/security.md); otherwise PERMISSION_DENIED "agent certificate is for
  // X, not Y" and nothing is recorded.
  RegistryService(Inventory* inventory, AgentRegistry* registry, PartitionController* controller,
                  bool auto_add_agents, bool require_certificates)
      : inventory_(inventory),
        registry_(registry),
        controller_(controller),
        auto_add_agents_(auto_add_agents),
        require_certificates_(require_certificates) {}

  grpc::Status Register(grpc::ServerContext*, const vipuagent::RegisterRequest*,
                        vipuagent::RegisterReply*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const vipuagent::HeartbeatRequest*,
                         vipuagent::HeartbeatReply*) override;
  // INVALID_ARGUMENT naming the field for an empty or oversized batch, an
  // invalid or repeated agent id, or an invalid machine; then one
  // transaction records every agent. Agents the inventory refuses (unknown
  // without --auto-add-agents) are listed in the reply; the rest register.
  grpc::Status RegisterBatch(grpc::ServerContext*, const vipuagent::RegisterBatchRequest*,
                             vipuagent::RegisterBatchReply*) override;
  // INVALID_ARGUMENT for an empty or oversized batch or an invalid or
  // repeated agent id; unknown agents are listed for re-registration.
  grpc::Status HeartbeatBatch(grpc::ServerContext*, const vipuagent::HeartbeatBatchRequest*,
                              vipuagent::HeartbeatBatchReply*) override;

 private:
  Inventory* inventory_;
  AgentRegistry* registry_;
  PartitionController* controller_;
  // PERMISSION_DENIED unless the caller's certificate names every one of
  // `agent_ids`.
  grpc::Status CheckCaller(const grpc::ServerContext* context,
                           const std::vector<std::string>& agent_ids) const;

  const bool auto_add_agents_;
  const bool require_certificates_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_REGISTRY_SERVICE_H_
