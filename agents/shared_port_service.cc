// SharedPortService: routes agent API calls on one shared port to each machine's AgentService.
#include "agents/shared_port_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace vipu::agents {

SharedPortService::SharedPortService(const std::vector<Member>& members) {
  members_.reserve(members.size());
  for (const Member& m : members) {
    members_[m.machine->agent_id()] = m;
    ids_.push_back(m.machine->agent_id());
  }
  std::sort(ids_.begin(), ids_.end());
}

const SharedPortService::Member* SharedPortService::Find(const std::string& agent_id,
                                                         grpc::Status* refusal) const {
  if (agent_id.empty()) {
    *refusal = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "agent_id: must name the machine on a port shared by machines");
    return nullptr;
  }
  auto it = members_.find(agent_id);
  if (it != members_.end()) return &it->second;
  spdlog::warn("shared port: refused a request for agent '{}', not served here", agent_id);
  *refusal = grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      absl::StrCat("agent_id: request for agent '", agent_id,
                   "' reached a port that does not serve it (", members_.size(), " machines)"));
  return nullptr;
}

template <typename Request, typename Reply>
grpc::Status SharedPortService::Forward(
    grpc::Status (AgentService::*method)(grpc::ServerContext*, const Request*, Reply*),
    grpc::ServerContext* context, const Request* request, Reply* reply) const {
  grpc::Status refusal;
  const Member* member = Find(request->agent_id(), &refusal);
  if (member == nullptr) return refusal;
  return (member->service->*method)(context, request, reply);
}

grpc::Status SharedPortService::GetInfo(grpc::ServerContext* context,
                                        const vipuagent::GetInfoRequest* request,
                                        vipuagent::GetInfoReply* reply) {
  return Forward(&AgentService::GetInfo, context, request, reply);
}

grpc::Status SharedPortService::ConfigurePartition(
    grpc::ServerContext* context, const vipuagent::ConfigurePartitionRequest* request,
    vipuagent::ConfigurePartitionReply* reply) {
  return Forward(&AgentService::ConfigurePartition, context, request, reply);
}

grpc::Status SharedPortService::ResetPartition(grpc::ServerContext* context,
                                               const vipuagent::ResetPartitionRequest* request,
                                               vipuagent::ResetPartitionReply* reply) {
  return Forward(&AgentService::ResetPartition, context, request, reply);
}

grpc::Status SharedPortService::ReleasePartition(grpc::ServerContext* context,
                                                 const vipuagent::ReleasePartitionRequest* request,
                                                 vipuagent::ReleasePartitionReply* reply) {
  return Forward(&AgentService::ReleasePartition, context, request, reply);
}

grpc::Status SharedPortService::SetTopology(grpc::ServerContext* context,
                                            const vipuagent::SetTopologyRequest* request,
                                            vipuagent::SetTopologyReply* reply) {
  return Forward(&AgentService::SetTopology, context, request, reply);
}

grpc::Status SharedPortService::InjectFault(grpc::ServerContext* context,
                                            const vipuagent::InjectFaultRequest* request,
                                            vipuagent::InjectFaultReply* reply) {
  return Forward(&AgentService::InjectFault, context, request, reply);
}

grpc::Status SharedPortService::TestLinks(grpc::ServerContext* context,
                                          const vipuagent::TestLinksRequest* request,
                                          vipuagent::TestLinksReply* reply) {
  return Forward(&AgentService::TestLinks, context, request, reply);
}

grpc::Status SharedPortService::CheckPartition(grpc::ServerContext* context,
                                               const vipuagent::CheckPartitionRequest* request,
                                               vipuagent::CheckPartitionReply* reply) {
  return Forward(&AgentService::CheckPartition, context, request, reply);
}

grpc::Status SharedPortService::RunWorkload(grpc::ServerContext* context,
                                            const vipuagent::RunWorkloadRequest* request,
                                            vipuagent::RunWorkloadReply* reply) {
  if (!request->agent_id().empty()) {
    return Forward(&AgentService::RunWorkload, context, request, reply);
  }
  if (request->partition_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "partition_id: must not be empty");
  }
  for (const std::string& id : ids_) {
    const Member& member = members_.at(id);
    if (!member.machine->Config(request->partition_id()).ok()) continue;
    return member.service->RunWorkload(context, request, reply);
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("partition_id: no machine on this port holds partition '",
                                   request->partition_id(), "'"));
}

}  // namespace vipu::agents
