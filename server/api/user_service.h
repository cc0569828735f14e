// virmgrpc.UserService and virmgrpc.VersionService: Graphcore's published
// user API. Thin: translate, call the controller, map errors.
#ifndef VIPU_SERVER_API_USER_SERVICE_H_
#define VIPU_SERVER_API_USER_SERVICE_H_

#include "server/api/admission.h"
#include "server/control/inventory.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_registry.h"
#include "server/security/access_control.h"
#include "version.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::server {

// Borrows the controller, registry and what the setters give, which must
// outlive it. Thread-safe: gRPC runs its RPCs at once and it keeps no state of
// its own; the setters must come before it serves.
class UserService final : public virmgrpc::UserService::Service {
 public:
  UserService(PartitionController* controller, const AgentRegistry* registry)
      : controller_(controller), registry_(registry) {}

  // Mutating RPCs are refused (UNAVAILABLE + retry-after-ms) until ready;
  // unset: always admitted.
  void set_readiness(const Readiness* readiness) { readiness_ = readiness; }
  // Authentication, authorization and rate limit of every RPC; unset:
  // everyone is the unrestricted system caller.
  void set_access_control(security::AccessControl* access) { access_ = access; }
  // Where ListIPUAttributes finds the agents of a restricted caller's
  // allocations; unset: such callers get INTERNAL (never everything).
  void set_inventory(Inventory* inventory) { inventory_ = inventory; }

  grpc::Status ListPartitions(grpc::ServerContext*, const virmgrpc::ListPartitionsRequest*,
                              virmgrpc::ListPartitionsReply*) override;
  grpc::Status ListIPUAttributes(grpc::ServerContext*, const virmgrpc::ListIPUAttributesRequest*,
                                 virmgrpc::ListIPUAttributesReply*) override;
  grpc::Status CreatePartition(grpc::ServerContext*, const virmgrpc::CreatePartitionRequest*,
                               virmgrpc::CreatePartitionReply*) override;
  grpc::Status RemovePartition(grpc::ServerContext*, const virmgrpc::RemovePartitionRequest*,
                               virmgrpc::RemovePartitionReply*) override;
  grpc::Status ResetPartition(grpc::ServerContext*, const virmgrpc::ResetPartitionRequest*,
                              virmgrpc::ResetPartitionReply*) override;
  grpc::Status GetPartitionIpuofConfig(grpc::ServerContext*,
                                       const virmgrpc::GetPartitionIpuofConfigRequest*,
                                       virmgrpc::GetPartitionIpuofConfigReply*) override;
  grpc::Status GetPartitionStatus(grpc::ServerContext*, const virmgrpc::GetPartitionStatusRequest*,
                                  virmgrpc::GetPartitionStatusReply*) override;

 private:
  PartitionController* controller_;
  const AgentRegistry* registry_;
  const Readiness* readiness_ = nullptr;
  security::AccessControl* access_ = nullptr;
  Inventory* inventory_ = nullptr;
};

// Stateless, so thread-safe.
class VersionService final : public virmgrpc::VersionService::Service {
 public:
  grpc::Status GetVersion(grpc::ServerContext*, const virmgrpc::VersionRequest*,
                          virmgrpc::VersionReply* reply) override {
    reply->set_version(VIPU_VERSION);
    return grpc::Status::OK;
  }
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_USER_SERVICE_H_
