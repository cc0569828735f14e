// The audited method list against the services' descriptors, and the object id of requests.
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "server/api/audit_interceptor.h"
#include "server/api/audited_methods.h"
#include "vipu_admin.pb.h"
#include "vipuuser.pb.h"

namespace vipu::server {
namespace {

TEST(AuditedMethodsTest, EveryMethodOfTheServedServicesIsClassifiedOnce) {
  std::set<std::string> mutating(MutatingMethods().begin(), MutatingMethods().end());
  std::set<std::string> reads(ReadMethods().begin(), ReadMethods().end());
  ASSERT_EQ(mutating.size(), MutatingMethods().size()) << "a method is listed twice";
  std::set<std::string> seen;
  for (const google::protobuf::ServiceDescriptor* service :
       {virmgrpc::ListPartitionsRequest::descriptor()->file()->FindServiceByName("UserService"),
        vipuadmin::CreateUserRequest::descriptor()->file()->FindServiceByName("AdminService"),
        vipuadmin::CreateUserRequest::descriptor()->file()->FindServiceByName("UserAdminService"),
        vipuadmin::CreateUserRequest::descriptor()->file()->FindServiceByName(
            "AllocationService")}) {
    ASSERT_NE(service, nullptr);
    for (int i = 0; i < service->method_count(); ++i) {
      const std::string name = "/" + service->full_name() + "/" + service->method(i)->name();
      seen.insert(name);
      EXPECT_NE(mutating.count(name) + reads.count(name), 0u)
          << name << " is neither mutating nor a read: classify it in audited_methods.cc";
      EXPECT_FALSE(mutating.count(name) > 0 && reads.count(name) > 0) << name;
    }
  }
  for (const std::string& m : mutating) EXPECT_TRUE(seen.count(m)) << m << " is no method";
  for (const std::string& m : reads) EXPECT_TRUE(seen.count(m)) << m << " is no method";
  EXPECT_TRUE(IsMutatingMethod("/vipuadmin.UserAdminService/UpdateUser"));
  EXPECT_FALSE(IsMutatingMethod("/vipuadmin.UserAdminService/ListUsers"));
  EXPECT_FALSE(IsMutatingMethod("/vipuagent.AgentRegistry/Heartbeat"));
}

TEST(AuditedMethodsTest, ObjectIsTheIdTheRequestNames) {
  virmgrpc::CreatePartitionRequest create;
  create.mutable_requirements()->set_id("p1");
  create.mutable_requirements()->set_allocation_id("a1");
  EXPECT_EQ(AuditObject(create), "p1");
  virmgrpc::RemovePartitionRequest remove;
  remove.set_partition_id("p2");
  EXPECT_EQ(AuditObject(remove), "p2");
  vipuadmin::UpdateUserRequest update;
  update.set_user_id("alice");
  update.add_allocations("a1");
  EXPECT_EQ(AuditObject(update), "alice");
  vipuadmin::CreateAllocationRequest allocation;
  allocation.set_allocation_id("a1");
  allocation.set_cluster_id("c1");
  EXPECT_EQ(AuditObject(allocation), "a1");
  vipuadmin::CreateClusterRequest cluster;
  cluster.mutable_cluster()->set_id("c2");
  EXPECT_EQ(AuditObject(cluster), "c2");
  vipuadmin::BackupRequest backup;
  backup.set_path("/tmp/copy.db");
  EXPECT_EQ(AuditObject(backup), "/tmp/copy.db");
  EXPECT_EQ(AuditObject(vipuadmin::ListUsersRequest()), "");
  EXPECT_EQ(AuditObject(virmgrpc::CreatePartitionRequest()), "");
}

}  // namespace
}  // namespace vipu::server
