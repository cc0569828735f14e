// The mutating and the read-only RPCs of the user, admin and user-admin services.
#include "server/api/audited_methods.h"

#include <algorithm>

namespace vipu::server {

const std::vector<std::string_view>& MutatingMethods() {
  static const auto* methods = new std::vector<std::string_view>{
      "/virmgrpc.UserService/CreatePartition",    "/virmgrpc.UserService/RemovePartition",
      "/virmgrpc.UserService/ResetPartition",     "/vipuadmin.AdminService/CreateAgent",
      "/vipuadmin.AdminService/RemoveAgent",      "/vipuadmin.AdminService/CreateCluster",
      "/vipuadmin.AdminService/RemoveCluster",    "/vipuadmin.AdminService/CreateAllocation",
      "/vipuadmin.AdminService/RemoveAllocation", "/vipuadmin.AdminService/InjectFault",
      "/vipuadmin.AdminService/TestCluster",      "/vipuadmin.AdminService/Backup",
      "/vipuadmin.UserAdminService/CreateUser",   "/vipuadmin.UserAdminService/UpdateUser",
      "/vipuadmin.UserAdminService/RemoveUser",   "/vipuadmin.AdminService/MoveLeadership",
  };
  return *methods;
}

const std::vector<std::string_view>& ReadMethods() {
  static const auto* methods = new std::vector<std::string_view>{
      "/virmgrpc.UserService/ListPartitions",
      "/virmgrpc.UserService/ListIPUAttributes",
      "/virmgrpc.UserService/GetPartitionIpuofConfig",
      "/virmgrpc.UserService/GetPartitionStatus",
      "/vipuadmin.AdminService/ListAgents",
      "/vipuadmin.AdminService/GetAgent",
      "/vipuadmin.AdminService/ListClusters",
      "/vipuadmin.UserAdminService/ListUsers",
      "/vipuadmin.AllocationService/ListAllocations",
  };
  return *methods;
}

bool IsMutatingMethod(std::string_view full_method) {
  const auto& m = MutatingMethods();
  return std::find(m.begin(), m.end(), full_method) != m.end();
}

}  // namespace vipu::server
