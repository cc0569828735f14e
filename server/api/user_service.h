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

// Borrows everything it is given, which must outlive it. Thread-safe: gRPC
// runs its RPCs at once and it keeps no state of its own. Everything it needs
// comes in through the constructor, so it serves as built.
class UserService final : public virmgrpc::UserService::Service {
 public:
  // `inventory`: where ListIPUAttributes finds the agents of a restricted
  // caller's allocations. `readiness`: mutating RPCs are refused
  // (UNAVAILABLE + retry-after-ms) until it says ready. `access`: the
  // authentication, authorization and rate limit of every RPC.
  UserService(PartitionController* controller, const AgentRegistry* registry, Inventory* inventory,
              const Readiness& readiness, AccessControl& access)
      : controller_(controller),
        registry_(registry),
        readiness_(readiness),
        access_(access),
        inventory_(inventory) {}

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
  const Readiness& readiness_;
  AccessControl& access_;
  Inventory* inventory_;
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
