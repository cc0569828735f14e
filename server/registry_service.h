// vipuagent.AgentRegistry: agents register (address, machine, what they
// hold) and heartbeat. Registration triggers reconciliation of that agent.
#ifndef VIPU_SERVER_REGISTRY_SERVICE_H_
#define VIPU_SERVER_REGISTRY_SERVICE_H_

#include <functional>

#include "server/agent_registry.h"
#include "server/inventory.h"
#include "server/partition_controller.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

class RegistryService final : public vipuagent::AgentRegistry::Service {
 public:
  RegistryService(Inventory* inventory, AgentRegistry* registry, PartitionController* controller,
                  bool auto_add_agents)
      : inventory_(inventory),
        registry_(registry),
        controller_(controller),
        auto_add_agents_(auto_add_agents) {}

  grpc::Status Register(grpc::ServerContext*, const vipuagent::RegisterRequest*,
                        vipuagent::RegisterReply*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const vipuagent::HeartbeatRequest*,
                         vipuagent::HeartbeatReply*) override;

 private:
  Inventory* inventory_;
  AgentRegistry* registry_;
  PartitionController* controller_;
  const bool auto_add_agents_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_REGISTRY_SERVICE_H_
