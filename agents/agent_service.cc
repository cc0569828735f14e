#include "agents/agent_service.h"

#include "absl/strings/str_cat.h"
#include "agents/wire_translation.h"
#include "spdlog/spdlog.h"

namespace vipu::agents {

grpc::Status AgentService::CheckAgentId(const std::string& agent_id) const {
  if (agent_id == machine_->agent_id()) return grpc::Status::OK;
  spdlog::warn("agent {}: refused a request for agent '{}'", machine_->agent_id(), agent_id);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("agent_id: request for agent '", agent_id, "' reached agent '",
                                   machine_->agent_id(), "'"));
}

grpc::Status AgentService::GetInfo(grpc::ServerContext*, const vipuagent::GetInfoRequest* request,
                                   vipuagent::GetInfoReply* reply) {
  if (grpc::Status s = CheckAgentId(request->agent_id()); !s.ok()) return s;
  *reply->mutable_machine() = ToProto(*machine_);
  AppendHeld(machine_->Held(), reply->mutable_held());
  return grpc::Status::OK;
}

grpc::Status AgentService::ConfigurePartition(grpc::ServerContext*,
                                              const vipuagent::ConfigurePartitionRequest* request,
                                              vipuagent::ConfigurePartitionReply*) {
  if (grpc::Status s = CheckAgentId(request->agent_id()); !s.ok()) return s;
  absl::StatusOr<PartitionConfig> config = FromProto(*request);
  if (!config.ok()) return ToGrpcStatus(config.status());
  absl::Status status = machine_->Configure(*config);
  if (!status.ok()) {
    spdlog::warn("agent {}: configure partition {} generation {} refused: {}", machine_->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return ToGrpcStatus(status);
}

grpc::Status AgentService::ResetPartition(grpc::ServerContext*,
                                          const vipuagent::ResetPartitionRequest* request,
                                          vipuagent::ResetPartitionReply*) {
  if (grpc::Status s = CheckAgentId(request->agent_id()); !s.ok()) return s;
  absl::Status status = machine_->Reset(request->partition_id(), request->generation());
  if (!status.ok()) {
    spdlog::warn("agent {}: reset partition {} generation {} refused: {}", machine_->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return ToGrpcStatus(status);
}

grpc::Status AgentService::ReleasePartition(grpc::ServerContext*,
                                            const vipuagent::ReleasePartitionRequest* request,
                                            vipuagent::ReleasePartitionReply*) {
  if (grpc::Status s = CheckAgentId(request->agent_id()); !s.ok()) return s;
  absl::Status status = machine_->Release(request->partition_id(), request->generation());
  if (!status.ok()) {
    spdlog::warn("agent {}: release partition {} generation {} refused: {}", machine_->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return ToGrpcStatus(status);
}

}  // namespace vipu::agents
