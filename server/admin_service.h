// vipuadmin.AdminService (agents, clusters, allocations) and
// vipuadmin.AllocationService (the user's view of allocations).
#ifndef VIPU_SERVER_ADMIN_SERVICE_H_
#define VIPU_SERVER_ADMIN_SERVICE_H_

#include "server/agent_registry.h"
#include "server/inventory.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::server {

class AdminService final : public vipuadmin::AdminService::Service {
 public:
  AdminService(Inventory* inventory, const AgentRegistry* registry)
      : inventory_(inventory), registry_(registry) {}

  grpc::Status CreateAgent(grpc::ServerContext*, const vipuadmin::CreateAgentRequest*,
                           vipuadmin::CreateAgentReply*) override;
  grpc::Status ListAgents(grpc::ServerContext*, const vipuadmin::ListAgentsRequest*,
                          vipuadmin::ListAgentsReply*) override;
  grpc::Status GetAgent(grpc::ServerContext*, const vipuadmin::GetAgentRequest*,
                        vipuadmin::GetAgentReply*) override;
  grpc::Status RemoveAgent(grpc::ServerContext*, const vipuadmin::RemoveAgentRequest*,
                           vipuadmin::RemoveAgentReply*) override;
  grpc::Status CreateCluster(grpc::ServerContext*, const vipuadmin::CreateClusterRequest*,
                             vipuadmin::CreateClusterReply*) override;
  grpc::Status ListClusters(grpc::ServerContext*, const vipuadmin::ListClustersRequest*,
                            vipuadmin::ListClustersReply*) override;
  grpc::Status RemoveCluster(grpc::ServerContext*, const vipuadmin::RemoveClusterRequest*,
                             vipuadmin::RemoveClusterReply*) override;
  grpc::Status CreateAllocation(grpc::ServerContext*, const vipuadmin::CreateAllocationRequest*,
                                vipuadmin::CreateAllocationReply*) override;
  grpc::Status RemoveAllocation(grpc::ServerContext*, const vipuadmin::RemoveAllocationRequest*,
                                vipuadmin::RemoveAllocationReply*) override;

 private:
  void Describe(const fabric::Agent& agent, const std::string& cluster, vipuadmin::Agent* out);

  Inventory* inventory_;
  const AgentRegistry* registry_;
};

class AllocationService final : public vipuadmin::AllocationService::Service {
 public:
  explicit AllocationService(Inventory* inventory) : inventory_(inventory) {}
  grpc::Status ListAllocations(grpc::ServerContext*, const vipuadmin::ListAllocationsRequest*,
                               vipuadmin::ListAllocationsReply*) override;

 private:
  Inventory* inventory_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_ADMIN_SERVICE_H_
