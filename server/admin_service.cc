#include "server/admin_service.h"

#include "absl/strings/str_cat.h"
#include "fabric/validation.h"
#include "google/protobuf/util/time_util.h"
#include "server/grpc_status.h"
#include "server/wire.h"

namespace vipu::server {

void AdminService::Describe(const fabric::Agent& agent, const std::string& cluster,
                            vipuadmin::Agent* out) {
  out->set_id(agent.id);
  out->set_host(agent.host);
  out->set_port(agent.port);
  out->set_cluster_id(cluster);
  const absl::Time now = absl::Now();
  out->set_status(registry_->IsUp(agent.id, now) ? vipuadmin::AGENT_UP : vipuadmin::AGENT_DOWN);
  if (std::optional<LiveAgent> live = registry_->Get(agent.id)) {
    out->set_num_ipus(static_cast<uint32_t>(live->ipus.size()));
    *out->mutable_last_heartbeat() = google::protobuf::util::TimeUtil::MillisecondsToTimestamp(
        absl::ToUnixMillis(live->last_heartbeat));
    for (const auto& [name, value] : live->details) {
      auto* d = out->add_details();
      d->set_name(name);
      d->set_value(value);
    }
  } else {
    out->set_num_ipus(fabric::kIpusPerMachine);
  }
}

grpc::Status AdminService::CreateAgent(grpc::ServerContext*,
                                       const vipuadmin::CreateAgentRequest* request,
                                       vipuadmin::CreateAgentReply*) {
  fabric::Agent agent;
  agent.id = request->agent_id();
  agent.host = request->host();
  agent.port = request->port();
  return ToGrpc(inventory_->CreateAgent(agent));
}

grpc::Status AdminService::ListAgents(grpc::ServerContext*, const vipuadmin::ListAgentsRequest*,
                                      vipuadmin::ListAgentsReply* reply) {
  auto agents = inventory_->ListAgents();
  if (!agents.ok()) return ToGrpc(agents.status());
  std::vector<std::string> ids;
  for (const fabric::Agent& a : *agents) ids.push_back(a.id);
  auto clusters = inventory_->ClustersOf(ids);
  if (!clusters.ok()) return ToGrpc(clusters.status());
  for (size_t i = 0; i < agents->size(); ++i) {
    Describe((*agents)[i], (*clusters)[i], reply->add_agents());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetAgent(grpc::ServerContext*, const vipuadmin::GetAgentRequest* request,
                                    vipuadmin::GetAgentReply* reply) {
  if (absl::Status s = fabric::ValidateId("agent_id", request->agent_id()); !s.ok()) {
    return ToGrpc(s);
  }
  auto agent = inventory_->GetAgent(request->agent_id());
  if (!agent.ok()) return ToGrpc(agent.status());
  auto clusters = inventory_->ClustersOf({agent->id});
  if (!clusters.ok()) return ToGrpc(clusters.status());
  Describe(*agent, clusters->front(), reply->mutable_agent());
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveAgent(grpc::ServerContext*,
                                       const vipuadmin::RemoveAgentRequest* request,
                                       vipuadmin::RemoveAgentReply*) {
  if (absl::Status s = fabric::ValidateId("agent_id", request->agent_id()); !s.ok()) {
    return ToGrpc(s);
  }
  return ToGrpc(inventory_->RemoveAgent(request->agent_id()));
}

grpc::Status AdminService::CreateCluster(grpc::ServerContext*,
                                         const vipuadmin::CreateClusterRequest* request,
                                         vipuadmin::CreateClusterReply*) {
  auto cluster = FromWire(request->cluster());
  if (!cluster.ok()) return ToGrpc(cluster.status());
  return ToGrpc(inventory_->CreateCluster(*cluster));
}

grpc::Status AdminService::ListClusters(grpc::ServerContext*, const vipuadmin::ListClustersRequest*,
                                        vipuadmin::ListClustersReply* reply) {
  auto clusters = inventory_->ListClusters();
  if (!clusters.ok()) return ToGrpc(clusters.status());
  for (const fabric::Cluster& c : *clusters) ToWire(c, reply->add_clusters());
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveCluster(grpc::ServerContext*,
                                         const vipuadmin::RemoveClusterRequest* request,
                                         vipuadmin::RemoveClusterReply*) {
  if (absl::Status s = fabric::ValidateId("cluster_id", request->cluster_id()); !s.ok()) {
    return ToGrpc(s);
  }
  return ToGrpc(inventory_->RemoveCluster(request->cluster_id()));
}

grpc::Status AdminService::CreateAllocation(grpc::ServerContext*,
                                            const vipuadmin::CreateAllocationRequest* request,
                                            vipuadmin::CreateAllocationReply*) {
  fabric::Allocation a;
  a.id = request->allocation_id();
  a.cluster_id = request->cluster_id();
  a.agent_ids.assign(request->agent_ids().begin(), request->agent_ids().end());
  return ToGrpc(inventory_->CreateAllocation(a));
}

grpc::Status AdminService::RemoveAllocation(grpc::ServerContext*,
                                            const vipuadmin::RemoveAllocationRequest* request,
                                            vipuadmin::RemoveAllocationReply*) {
  if (absl::Status s = fabric::ValidateId("allocation_id", request->allocation_id()); !s.ok()) {
    return ToGrpc(s);
  }
  return ToGrpc(inventory_->RemoveAllocation(request->allocation_id()));
}

grpc::Status AllocationService::ListAllocations(grpc::ServerContext*,
                                                const vipuadmin::ListAllocationsRequest*,
                                                vipuadmin::ListAllocationsReply* reply) {
  auto allocations = inventory_->ListAllocations();
  if (!allocations.ok()) return ToGrpc(allocations.status());
  for (const fabric::Allocation& a : *allocations) ToWire(a, reply->add_allocations());
  return grpc::Status::OK;
}

}  // namespace vipu::server
