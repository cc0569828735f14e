// vipuadmin.AdminService (agents, clusters, allocations) and
// vipuadmin.AllocationService (the user's view of allocations).
#ifndef VIPU_SERVER_API_ADMIN_SERVICE_H_
#define VIPU_SERVER_API_ADMIN_SERVICE_H_

#include <functional>
#include <string>
#include <utility>

#include "server/api/admission.h"
#include "server/control/inventory.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/cluster_tester.h"
#include "server/fleet/fault_injector.h"
#include "server/security/access_control.h"
#include "storage/store.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::server {

// Who hands the leadership to whom (user addresses), as a member of a
// highly available control plane moves it.
struct LeadershipMove {
  std::string from, to;
};
// Starts handing this leader's leadership to the member `to` names (one of
// its addresses), or to the standby next in line when `to` is empty, and
// says to whom; the handover itself follows once the call is answered.
// INVALID_ARGUMENT when `to` is this member, NOT_FOUND when no standing
// member has that address, FAILED_PRECONDITION when no other member stands
// or a move is already under way.
using LeadershipMover = std::function<absl::StatusOr<LeadershipMove>(const std::string& to)>;

// Borrows everything it is given, which must outlive it. Thread-safe: gRPC
// runs its RPCs at once and it keeps no state of its own.
class AdminService final : public vipuadmin::AdminService::Service {
 public:
  // What the RPCs beyond the inventory work on; each left null makes its
  // RPCs UNIMPLEMENTED.
  struct Operations {
    // Backup writes online copies of `backup_store`, whose file is
    // `db_path` (never a backup target).
    storage::Store* backup_store = nullptr;
    std::string db_path;
    // Fault injection and cluster tests (admin_service_health.cc).
    FaultInjector* faults = nullptr;
    ClusterTester* tester = nullptr;
    // MoveLeadership; null on a server that is not a member of a highly
    // available control plane, which refuses it saying so.
    LeadershipMover move_leadership;
  };

  // Everything passed in is the caller's and must outlive this. A removed
  // cluster's layout and links are dropped from `cluster_links`. Mutating
  // RPCs are refused (UNAVAILABLE + retry-after-ms) until `readiness` says
  // ready; `access` admits every RPC (an admin user with --secure).
  AdminService(Inventory* inventory, const AgentRegistry* registry,
               ClusterLinksCache* cluster_links, const Readiness& readiness, AccessControl& access,
               Operations operations)
      : inventory_(inventory),
        registry_(registry),
        cluster_links_(cluster_links),
        readiness_(readiness),
        access_(access),
        operations_(std::move(operations)) {}

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

  grpc::Status InjectFault(grpc::ServerContext*, const vipuadmin::InjectFaultRequest*,
                           vipuadmin::InjectFaultReply*) override;
  grpc::Status TestCluster(grpc::ServerContext*, const vipuadmin::TestClusterRequest*,
                           vipuadmin::TestClusterReply*) override;
  // An online copy of the database to `path` on the server's machine.
  grpc::Status Backup(grpc::ServerContext*, const vipuadmin::BackupRequest*,
                      vipuadmin::BackupReply*) override;
  // Hands the leadership over (Operations::move_leadership).
  grpc::Status MoveLeadership(grpc::ServerContext*, const vipuadmin::MoveLeadershipRequest*,
                              vipuadmin::MoveLeadershipReply*) override;

 private:
  void Describe(const fabric::Agent& agent, const std::string& cluster, vipuadmin::Agent* out);

  Inventory* inventory_;
  const AgentRegistry* registry_;
  ClusterLinksCache* cluster_links_;
  const Readiness& readiness_;
  AccessControl& access_;
  const Operations operations_;
};

// Borrows `inventory` and the access gate, which must outlive it.
// Thread-safe: gRPC runs its RPCs at once and it keeps no state of its own.
class AllocationService final : public vipuadmin::AllocationService::Service {
 public:
  // Restricted users see only the allocations `access` grants them.
  AllocationService(Inventory* inventory, AccessControl& access)
      : inventory_(inventory), access_(access) {}
  grpc::Status ListAllocations(grpc::ServerContext*, const vipuadmin::ListAllocationsRequest*,
                               vipuadmin::ListAllocationsReply*) override;

 private:
  Inventory* inventory_;
  AccessControl& access_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_ADMIN_SERVICE_H_
