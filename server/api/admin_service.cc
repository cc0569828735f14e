// vipuadmin.AdminService and AllocationService: agents, clusters, allocations and backup.
#include "server/api/admin_service.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "fabric/validation.h"
#include "google/protobuf/util/time_util.h"
#include "server/api/wire.h"
#include "spdlog/spdlog.h"
#include "wire/server_members.h"
#include "wire/status.h"

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
      d->set_name(std::string(name));
      d->set_value(std::string(value));
    }
  } else {
    out->set_num_ipus(fabric::kIpusPerMachine);
  }
}

grpc::Status AdminService::CreateAgent(grpc::ServerContext* context,
                                       const vipuadmin::CreateAgentRequest* request,
                                       vipuadmin::CreateAgentReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"create agent", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "create agent"); !admitted.ok()) {
    return admitted;
  }
  fabric::Agent agent;
  agent.id = request->agent_id();
  agent.host = request->host();
  agent.port = request->port();
  return wire::ToGrpc(inventory_->CreateAgent(agent));
}

grpc::Status AdminService::ListAgents(grpc::ServerContext* context,
                                      const vipuadmin::ListAgentsRequest*,
                                      vipuadmin::ListAgentsReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"list agents", /*admin=*/true, /*mutating=*/false}));
  GRPC_ASSIGN_OR_RETURN(auto agents, inventory_->ListAgents());
  std::vector<std::string> ids;
  for (const fabric::Agent& a : agents) ids.push_back(a.id);
  GRPC_ASSIGN_OR_RETURN(auto clusters, inventory_->ClustersOf(ids));
  for (size_t i = 0; i < agents.size(); ++i) {
    Describe(agents[i], clusters[i], reply->add_agents());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::GetAgent(grpc::ServerContext* context,
                                    const vipuadmin::GetAgentRequest* request,
                                    vipuadmin::GetAgentReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"get agent", /*admin=*/true, /*mutating=*/false}));
  GRPC_RETURN_IF_ERROR(fabric::ValidateId("agent_id", request->agent_id()));
  GRPC_ASSIGN_OR_RETURN(fabric::Agent agent, inventory_->GetAgent(request->agent_id()));
  GRPC_ASSIGN_OR_RETURN(auto clusters, inventory_->ClustersOf({agent.id}));
  Describe(agent, clusters.front(), reply->mutable_agent());
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveAgent(grpc::ServerContext* context,
                                       const vipuadmin::RemoveAgentRequest* request,
                                       vipuadmin::RemoveAgentReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"remove agent", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "remove agent"); !admitted.ok()) {
    return admitted;
  }
  GRPC_RETURN_IF_ERROR(fabric::ValidateId("agent_id", request->agent_id()));
  return wire::ToGrpc(inventory_->RemoveAgent(request->agent_id()));
}

grpc::Status AdminService::CreateCluster(grpc::ServerContext* context,
                                         const vipuadmin::CreateClusterRequest* request,
                                         vipuadmin::CreateClusterReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"create cluster", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "create cluster"); !admitted.ok()) {
    return admitted;
  }
  GRPC_ASSIGN_OR_RETURN(auto cluster, FromWire(request->cluster()));
  return wire::ToGrpc(inventory_->CreateCluster(cluster));
}

grpc::Status AdminService::ListClusters(grpc::ServerContext* context,
                                        const vipuadmin::ListClustersRequest*,
                                        vipuadmin::ListClustersReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"list clusters", /*admin=*/true, /*mutating=*/false}));
  GRPC_ASSIGN_OR_RETURN(auto clusters, inventory_->ListClusters());
  for (const fabric::Cluster& c : clusters) ToWire(c, reply->add_clusters());
  return grpc::Status::OK;
}

grpc::Status AdminService::RemoveCluster(grpc::ServerContext* context,
                                         const vipuadmin::RemoveClusterRequest* request,
                                         vipuadmin::RemoveClusterReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"remove cluster", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "remove cluster"); !admitted.ok()) {
    return admitted;
  }
  GRPC_RETURN_IF_ERROR(fabric::ValidateId("cluster_id", request->cluster_id()));
  absl::Status removed = inventory_->RemoveCluster(request->cluster_id());
  // The cache would notice a cluster created again under this id; dropping
  // it now frees a removed cluster's links, large for a big cluster.
  if (removed.ok()) cluster_links_->Invalidate(request->cluster_id());
  return wire::ToGrpc(removed);
}

grpc::Status AdminService::CreateAllocation(grpc::ServerContext* context,
                                            const vipuadmin::CreateAllocationRequest* request,
                                            vipuadmin::CreateAllocationReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"create allocation", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "create allocation"); !admitted.ok()) {
    return admitted;
  }
  fabric::Allocation a;
  a.id = request->allocation_id();
  a.cluster_id = request->cluster_id();
  a.agent_ids.assign(request->agent_ids().begin(), request->agent_ids().end());
  return wire::ToGrpc(inventory_->CreateAllocation(a));
}

grpc::Status AdminService::RemoveAllocation(grpc::ServerContext* context,
                                            const vipuadmin::RemoveAllocationRequest* request,
                                            vipuadmin::RemoveAllocationReply*) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"remove allocation", /*admin=*/true, /*mutating=*/true}));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "remove allocation"); !admitted.ok()) {
    return admitted;
  }
  GRPC_RETURN_IF_ERROR(fabric::ValidateId("allocation_id", request->allocation_id()));
  return wire::ToGrpc(inventory_->RemoveAllocation(request->allocation_id()));
}

grpc::Status AllocationService::ListAllocations(grpc::ServerContext* context,
                                                const vipuadmin::ListAllocationsRequest*,
                                                vipuadmin::ListAllocationsReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, {"list allocations"}));
  GRPC_ASSIGN_OR_RETURN(auto allocations, inventory_->ListAllocations());
  for (const fabric::Allocation& a : allocations) {
    if (caller.MayUseAllocation(a.id)) ToWire(a, reply->add_allocations());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::Backup(grpc::ServerContext* context,
                                  const vipuadmin::BackupRequest* request,
                                  vipuadmin::BackupReply* reply) {
  GRPC_RETURN_IF_ERROR(AdmitCall(access_, context, {"backup", /*admin=*/true, /*mutating=*/true}));
  if (operations_.backup_store == nullptr)
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "backup: disabled");
  namespace fs = std::filesystem;
  const std::string& path = request->path();
  auto invalid = [&](const std::string& rule) {
    return wire::ToGrpc(absl::InvalidArgumentError(absl::StrCat("path: ", rule)));
  };
  if (path.empty()) return invalid("must not be empty");
  const fs::path target(path);
  if (!target.is_absolute()) {
    return invalid(absl::StrCat(
        "must be absolute (a file on the server's machine, written by the server), got '", path,
        "'"));
  }
  if (!target.has_filename()) return invalid(absl::StrCat("must name a file, got '", path, "'"));
  std::error_code ec;
  const fs::path parent = target.parent_path();
  if (!fs::is_directory(parent, ec)) {
    return wire::ToGrpc(absl::FailedPreconditionError(
        absl::StrCat("path: directory ", parent.string(), " does not exist on the server")));
  }
  if (fs::is_directory(target, ec)) {
    return invalid(absl::StrCat("is a directory, expected a file name: '", path, "'"));
  }
  if (fs::exists(target, ec) && fs::equivalent(target, fs::path(operations_.db_path), ec)) {
    return invalid(
        absl::StrCat("is the live database ", operations_.db_path, "; choose another file"));
  }
  // Its journal, shared memory and lock file: a copy over the lock file
  // would let a second server start on the live database.
  for (const char* suffix : {"-wal", "-shm", ".lock"}) {
    const fs::path companion(operations_.db_path + suffix);
    if (fs::exists(target, ec) && fs::equivalent(target, companion, ec)) {
      return invalid(absl::StrCat("is ", companion.string(), ", a file of the live database ",
                                  operations_.db_path, "; choose another file"));
    }
  }
  if (absl::Status s = operations_.backup_store->Backup(path); !s.ok()) {
    spdlog::warn("backup to {} failed: {}", path, s.ToString());
    return wire::ToGrpc(s);
  }
  reply->set_path(path);
  reply->set_size_bytes(fs::file_size(target, ec));
  spdlog::info("backup of the database written to {} ({} bytes)", path, reply->size_bytes());
  return grpc::Status::OK;
}

grpc::Status AdminService::MoveLeadership(grpc::ServerContext* context,
                                          const vipuadmin::MoveLeadershipRequest* request,
                                          vipuadmin::MoveLeadershipReply* reply) {
  GRPC_RETURN_IF_ERROR(
      AdmitCall(access_, context, {"move leadership", /*admin=*/true, /*mutating=*/true}));
  std::string to;
  if (!request->to().empty()) {
    absl::StatusOr<wire::ServerMember> member = wire::ParseServerMember(request->to());
    if (!member.ok()) {
      return wire::ToGrpc(absl::InvalidArgumentError(absl::StrCat(
          "to: expected one member's address, HOST:PORT (or nothing for the next standby): ",
          member.status().message())));
    }
    to = member->Target();
  }
  if (!operations_.move_leadership) {
    return wire::ToGrpc(absl::FailedPreconditionError(
        "this vipu-server is not a member of a highly available control plane "
        "(--etcd-endpoints): there is no other member to hand the leadership to"));
  }
  absl::StatusOr<LeadershipMove> move = operations_.move_leadership(to);
  if (!move.ok()) return wire::ToGrpc(move.status());
  reply->set_from(move->from);
  reply->set_to(move->to);
  spdlog::info("moving the leadership from {} to {}, as asked", move->from, move->to);
  return grpc::Status::OK;
}

}  // namespace vipu::server
