// virmgrpc.UserService and VersionService: access check, translation, controller call, status.
#include "server/api/user_service.h"

#include <chrono>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fabric/validation.h"
#include "server/api/wire.h"
#include "wire/metadata_keys.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

// How long a status read of a pending partition waits for it to settle.
// Configuring the agents takes milliseconds; a partition pending longer
// (agents slow or away) is answered as pending after this, so a reader is
// never held for long and sees progress at this pace.
constexpr absl::Duration kPendingReadWait = absl::Milliseconds(250);

// The wait ends at half the time the caller has left, so that the answer
// reaches it before its own deadline.
absl::Time PendingReadDeadline(std::chrono::system_clock::time_point client_deadline) {
  const absl::Time now = absl::Now();
  const auto left = client_deadline - std::chrono::system_clock::now();
  if (left > absl::ToChronoNanoseconds(2 * kPendingReadWait)) return now + kPendingReadWait;
  if (left <= left.zero()) return now;
  return now + absl::FromChrono(left) / 2;
}

absl::Status CheckPartitionId(const std::string& id) {
  return fabric::ValidateId("partition_id", id);
}

// Access control of each RPC (server/security/access_control.h).
const Action kListPartitions{"list partitions"};
const Action kListIpus{"list ipu attributes"};
const Action kGetPartition{"get partition"};
const Action kCreatePartition{"create partition", false, /*mutating=*/true};
const Action kRemovePartition{"remove partition", false, /*mutating=*/true};
const Action kResetPartition{"reset partition", false, /*mutating=*/true};

}  // namespace

grpc::Status UserService::ListPartitions(grpc::ServerContext* context,
                                         const virmgrpc::ListPartitionsRequest* request,
                                         virmgrpc::ListPartitionsReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kListPartitions));
  if (!request->allocation_id().empty()) {
    GRPC_RETURN_IF_ERROR(fabric::ValidateId("allocation_id", request->allocation_id()));
  }
  GRPC_ASSIGN_OR_RETURN(auto list, controller_->List(request->allocation_id(), caller));
  reply->mutable_partitions()->Reserve(static_cast<int>(list.size()));
  for (const fabric::Partition& p : list) ToWire(p, reply->add_partitions());
  return grpc::Status::OK;
}

grpc::Status UserService::ListIPUAttributes(grpc::ServerContext* context,
                                            const virmgrpc::ListIPUAttributesRequest* request,
                                            virmgrpc::ListIPUAttributesReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kListIpus));
  for (const std::string& id : request->agents()) {
    GRPC_RETURN_IF_ERROR(fabric::ValidateId("agents", id));
  }
  // A restricted caller sees the agents of the allocations it may use and
  // nothing else: which machines exist beyond those is not its business.
  std::optional<std::set<std::string>> visible;
  if (!caller.Unrestricted()) {
    GRPC_ASSIGN_OR_RETURN(auto allocations, inventory_->ListAllocations());
    visible.emplace();
    for (const fabric::Allocation& a : allocations) {
      if (caller.MayUseAllocation(a.id)) visible->insert(a.agent_ids.begin(), a.agent_ids.end());
    }
  }
  auto may_see = [&](const std::string& id) { return !visible || visible->count(id) > 0; };
  std::vector<LiveAgent> agents;
  if (request->agents().empty()) {
    for (LiveAgent& a : registry_->All()) {
      if (may_see(a.id)) agents.push_back(std::move(a));
    }
  } else {
    for (const std::string& id : request->agents()) {
      std::optional<LiveAgent> a = may_see(id) ? registry_->Get(id) : std::nullopt;
      if (!a) {
        // One message for both cases, so that agent ids outside the
        // caller's allocations cannot be probed.
        return wire::ToGrpc(absl::NotFoundError(
            absl::StrCat("agents: agent '", id, "' is not connected",
                         visible ? " or not in an allocation granted to you" : "")));
      }
      agents.push_back(std::move(*a));
    }
  }
  for (const LiveAgent& a : agents) {
    auto* entry = reply->add_entries();
    entry->set_agent(a.id);
    for (size_t i = 0; i < a.ipus.size(); ++i) {
      auto& attrs = (*entry->mutable_ipu_attributes())[static_cast<uint32_t>(i)];
      for (const auto& [k, v] : a.ipus[i]) (*attrs.mutable_attributes())[std::string(k)] = v;
    }
  }
  return grpc::Status::OK;
}

grpc::Status UserService::CreatePartition(grpc::ServerContext* context,
                                          const virmgrpc::CreatePartitionRequest* request,
                                          virmgrpc::CreatePartitionReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kCreatePartition));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "create partition"); !admitted.ok()) {
    return admitted;
  }
  GRPC_ASSIGN_OR_RETURN(auto parsed, FromWire(*request));
  const bool shared = Metadata(*context, wire::kShareMetadata) == "true";
  GRPC_ASSIGN_OR_RETURN(auto created, controller_->Create(parsed, caller, shared));
  reply->set_partition_id(created.id);
  return grpc::Status::OK;
}

grpc::Status UserService::RemovePartition(grpc::ServerContext* context,
                                          const virmgrpc::RemovePartitionRequest* request,
                                          virmgrpc::RemovePartitionReply*) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kRemovePartition));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "remove partition"); !admitted.ok()) {
    return admitted;
  }
  GRPC_RETURN_IF_ERROR(CheckPartitionId(request->partition_id()));
  return wire::ToGrpc(controller_->Remove(request->partition_id(), request->force(), caller));
}

grpc::Status UserService::ResetPartition(grpc::ServerContext* context,
                                         const virmgrpc::ResetPartitionRequest* request,
                                         virmgrpc::ResetPartitionReply*) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kResetPartition));
  if (grpc::Status admitted = AdmitWhenReady(readiness_, "reset partition"); !admitted.ok()) {
    return admitted;
  }
  GRPC_RETURN_IF_ERROR(CheckPartitionId(request->partition_id()));
  return wire::ToGrpc(controller_->Reset(request->partition_id(), caller, request->relocatable()));
}

grpc::Status UserService::GetPartitionIpuofConfig(
    grpc::ServerContext* context, const virmgrpc::GetPartitionIpuofConfigRequest* request,
    virmgrpc::GetPartitionIpuofConfigReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kGetPartition));
  GRPC_RETURN_IF_ERROR(CheckPartitionId(request->partition_id()));
  std::optional<uint32_t> gcd;
  if (request->has_gcd_id()) gcd = request->gcd_id().id();
  GRPC_ASSIGN_OR_RETURN(auto partition, controller_->Get(request->partition_id(), caller));
  GRPC_ASSIGN_OR_RETURN(auto configs,
                        controller_->IpuofConfigs(request->partition_id(), gcd, caller));
  virmgrpc::PartitionConfig* out = reply->mutable_ipuof_config();
  out->set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(partition.routing));
  out->set_sync_type(static_cast<virmgrpc::SyncType>(partition.sync_type));
  out->set_reconfigurable(partition.reconfigurable);
  out->set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(partition.gw_routing));
  out->set_num_ipulink_segments(partition.num_ilds);
  out->set_ipuof_server_version(fabric::kIpuofServerVersion);
  for (const fabric::GcdConfig& g : configs) ToWire(g, out->add_gcd_configs());
  return grpc::Status::OK;
}

grpc::Status UserService::GetPartitionStatus(grpc::ServerContext* context,
                                             const virmgrpc::GetPartitionStatusRequest* request,
                                             virmgrpc::GetPartitionStatusReply* reply) {
  GRPC_ASSIGN_OR_RETURN(Caller caller, AdmitCall(access_, context, kGetPartition));
  GRPC_RETURN_IF_ERROR(CheckPartitionId(request->partition_id()));
  GRPC_ASSIGN_OR_RETURN(auto partition,
                        controller_->GetSettled(request->partition_id(),
                                                PendingReadDeadline(context->deadline()), caller));
  ToWire(partition, reply->mutable_status());
  return grpc::Status::OK;
}

}  // namespace vipu::server
