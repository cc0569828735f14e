// The admin and agent-registry APIs through generated clients: every field's
// invalid values are refused with the right code, naming the field, and
// change nothing.
#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/shared_server_suite.h"
#include "tests/integration/state_snapshot.h"
#include "vipu_admin.grpc.pb.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

class AdminApiTest : public SharedServerSuite {
 protected:
  void SetUp() override {
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    admin_ = vipuadmin::AdminService::NewStub(channel);
    registry_ = vipuagent::AgentRegistry::NewStub(channel);
  }

  // Everything the APIs list, to prove a refusal changed nothing.
  std::string Snapshot() {
    absl::StatusOr<std::string> state = ListedState(*server_);
    EXPECT_TRUE(state.ok()) << state.status();
    return state.value_or("");
  }

  template <typename Call>
  void ExpectRefused(Call call, grpc::StatusCode code, const std::string& field) {
    std::string before = Snapshot();
    grpc::ClientContext ctx;
    grpc::Status s = call(&ctx);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(field));
    EXPECT_EQ(Snapshot(), before) << "a refused call changed state";
  }

  grpc::Status CreateAgent(grpc::ClientContext* ctx, const std::string& id, const std::string& host,
                           uint32_t port) {
    vipuadmin::CreateAgentRequest req;
    req.set_agent_id(id);
    req.set_host(host);
    req.set_port(port);
    vipuadmin::CreateAgentReply reply;
    return admin_->CreateAgent(ctx, req, &reply);
  }

  grpc::Status CreateCluster(grpc::ClientContext* ctx, const vipuadmin::Cluster& c) {
    vipuadmin::CreateClusterRequest req;
    *req.mutable_cluster() = c;
    vipuadmin::CreateClusterReply reply;
    return admin_->CreateCluster(ctx, req, &reply);
  }

  grpc::Status CreateAllocation(grpc::ClientContext* ctx, const std::string& id,
                                const std::string& cluster, std::vector<std::string> agents) {
    vipuadmin::CreateAllocationRequest req;
    req.set_allocation_id(id);
    req.set_cluster_id(cluster);
    for (auto& a : agents) req.add_agent_ids(a);
    vipuadmin::CreateAllocationReply reply;
    return admin_->CreateAllocation(ctx, req, &reply);
  }

  std::unique_ptr<vipuadmin::AdminService::Stub> admin_;
  std::unique_ptr<vipuagent::AgentRegistry::Stub> registry_;
};

TEST_F(AdminApiTest, CreateAgentRefusesInvalidFields) {
  using C = grpc::ClientContext*;
  ExpectRefused([&](C c) { return CreateAgent(c, "", "h", 8080); },
                grpc::StatusCode::INVALID_ARGUMENT, "agent id");
  ExpectRefused([&](C c) { return CreateAgent(c, "-x", "h", 8080); },
                grpc::StatusCode::INVALID_ARGUMENT, "agent id");
  ExpectRefused([&](C c) { return CreateAgent(c, "x", "", 8080); },
                grpc::StatusCode::INVALID_ARGUMENT, "host");
  ExpectRefused([&](C c) { return CreateAgent(c, "x", "a b", 8080); },
                grpc::StatusCode::INVALID_ARGUMENT, "host");
  ExpectRefused([&](C c) { return CreateAgent(c, "x", "h", 0); },
                grpc::StatusCode::INVALID_ARGUMENT, "port");
  ExpectRefused([&](C c) { return CreateAgent(c, "x", "h", 70000); },
                grpc::StatusCode::INVALID_ARGUMENT, "port");
  ExpectRefused([&](C c) { return CreateAgent(c, "ag1", "h", 8080); },
                grpc::StatusCode::ALREADY_EXISTS, "ag1");
}

TEST_F(AdminApiTest, CreateClusterRefusesInvalidFields) {
  using C = grpc::ClientContext*;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(CreateAgent(&ctx, "free1", "127.0.0.1", 9).ok());
    grpc::ClientContext ctx2;
    ASSERT_TRUE(CreateAgent(&ctx2, "free2", "127.0.0.1", 9).ok());
  }
  auto cluster = [](std::string id, std::vector<std::string> agents) {
    vipuadmin::Cluster c;
    c.set_id(id);
    for (auto& a : agents) c.add_agent_ids(a);
    return c;
  };
  ExpectRefused([&](C c) { return CreateCluster(c, cluster("", {"free1"})); },
                grpc::StatusCode::INVALID_ARGUMENT, "cluster id");
  ExpectRefused([&](C c) { return CreateCluster(c, cluster("c", {})); },
                grpc::StatusCode::INVALID_ARGUMENT, "agents");
  ExpectRefused(
      [&](C c) {
        return CreateCluster(c, cluster("c", {"free1", "free1"}));
      },
      grpc::StatusCode::INVALID_ARGUMENT, "agents");
  ExpectRefused([&](C c) { return CreateCluster(c, cluster("c", {"nobody"})); },
                grpc::StatusCode::NOT_FOUND, "nobody");
  ExpectRefused(
      [&](C c) {
        return CreateCluster(c, cluster("c", {"free1", "ag1"}));
      },
      grpc::StatusCode::FAILED_PRECONDITION, "ag1");
  ExpectRefused([&](C c) { return CreateCluster(c, cluster("pod16", {"free1"})); },
                grpc::StatusCode::ALREADY_EXISTS, "pod16");
  auto bad_topology = cluster("c", {"free1"});
  bad_topology.set_topology(static_cast<vipuadmin::IpuLinkTopology>(9));
  ExpectRefused([&](C c) { return CreateCluster(c, bad_topology); },
                grpc::StatusCode::INVALID_ARGUMENT, "topology");
  auto bad_gw = cluster("c", {"free1"});
  bad_gw.set_cluster_topology(static_cast<vipuadmin::GwLinkTopology>(5));
  ExpectRefused([&](C c) { return CreateCluster(c, bad_gw); }, grpc::StatusCode::INVALID_ARGUMENT,
                "cluster_topology");
  auto bad_ilds = cluster("c", {"free1", "free2"});
  bad_ilds.set_num_ipulink_domains(3);
  ExpectRefused([&](C c) { return CreateCluster(c, bad_ilds); }, grpc::StatusCode::INVALID_ARGUMENT,
                "");
}

TEST_F(AdminApiTest, AllocationsAndRemovalsRefuseInvalidFields) {
  using C = grpc::ClientContext*;
  ExpectRefused([&](C c) { return CreateAllocation(c, "", "pod16", {}); },
                grpc::StatusCode::INVALID_ARGUMENT, "allocation id");
  ExpectRefused([&](C c) { return CreateAllocation(c, "a", "", {}); },
                grpc::StatusCode::INVALID_ARGUMENT, "cluster id");
  ExpectRefused([&](C c) { return CreateAllocation(c, "a", "nope", {}); },
                grpc::StatusCode::NOT_FOUND, "nope");
  ExpectRefused([&](C c) { return CreateAllocation(c, "a", "pod16", {"ag1"}); },
                grpc::StatusCode::FAILED_PRECONDITION, "default");
  ExpectRefused([&](C c) { return CreateAllocation(c, "default", "pod16", {}); },
                grpc::StatusCode::ALREADY_EXISTS, "default");
  ExpectRefused([&](C c) { return CreateAllocation(c, "a", "pod16", {"ag9"}); },
                grpc::StatusCode::INVALID_ARGUMENT, "ag9");
  ExpectRefused(
      [&](C c) {
        return CreateAllocation(c, "a", "pod16", {"ag1", "ag1"});
      },
      grpc::StatusCode::INVALID_ARGUMENT, "ag1");

  ExpectRefused(
      [&](C c) {
        vipuadmin::RemoveAgentRequest r;
        r.set_agent_id("ag1");
        vipuadmin::RemoveAgentReply reply;
        return admin_->RemoveAgent(c, r, &reply);
      },
      grpc::StatusCode::FAILED_PRECONDITION, "cluster");
  ExpectRefused(
      [&](C c) {
        vipuadmin::RemoveAgentRequest r;
        r.set_agent_id("ghost");
        vipuadmin::RemoveAgentReply reply;
        return admin_->RemoveAgent(c, r, &reply);
      },
      grpc::StatusCode::NOT_FOUND, "ghost");
  ExpectRefused(
      [&](C c) {
        vipuadmin::RemoveClusterRequest r;
        r.set_cluster_id("pod16");
        vipuadmin::RemoveClusterReply reply;
        return admin_->RemoveCluster(c, r, &reply);
      },
      grpc::StatusCode::FAILED_PRECONDITION, "allocation");
  ExpectRefused(
      [&](C c) {
        vipuadmin::RemoveClusterRequest r;
        r.set_cluster_id("bad id");
        vipuadmin::RemoveClusterReply reply;
        return admin_->RemoveCluster(c, r, &reply);
      },
      grpc::StatusCode::INVALID_ARGUMENT, "cluster_id");
  ExpectRefused(
      [&](C c) {
        vipuadmin::RemoveAllocationRequest r;
        r.set_allocation_id("ghost");
        vipuadmin::RemoveAllocationReply reply;
        return admin_->RemoveAllocation(c, r, &reply);
      },
      grpc::StatusCode::NOT_FOUND, "ghost");
  ExpectRefused(
      [&](C c) {
        vipuadmin::GetAgentRequest r;
        r.set_agent_id("ghost");
        vipuadmin::GetAgentReply reply;
        return admin_->GetAgent(c, r, &reply);
      },
      grpc::StatusCode::NOT_FOUND, "ghost");
}

// A server on SQLite has no other member: moving its leadership is refused
// as impossible here, and a malformed member as malformed.
TEST_F(AdminApiTest, MoveLeadershipIsRefusedByAServerThatIsNoMember) {
  auto move = [&](const std::string& to) {
    return [this, to](grpc::ClientContext* c) {
      vipuadmin::MoveLeadershipRequest req;
      req.set_to(to);
      vipuadmin::MoveLeadershipReply reply;
      return admin_->MoveLeadership(c, req, &reply);
    };
  };
  ExpectRefused(move(""), grpc::StatusCode::FAILED_PRECONDITION,
                "not a member of a highly available control plane");
  ExpectRefused(move("127.0.0.1:9"), grpc::StatusCode::FAILED_PRECONDITION,
                "no other member to hand the leadership to");
  ExpectRefused(move("nohost"), grpc::StatusCode::INVALID_ARGUMENT, "to: ");
  CommandResult cli = server_->VipuAdmin({"move", "leadership"});
  EXPECT_EQ(cli.exit_code, 1) << cli.out << cli.err;
  EXPECT_THAT(cli.err, HasSubstr("not a member of a highly available control plane"));
}

TEST_F(AdminApiTest, RegistryRefusesBadRegistrations) {
  using C = grpc::ClientContext*;
  auto reg = [&](C c, const std::string& id, const std::string& type, uint32_t port, int ipus) {
    vipuagent::RegisterRequest r;
    r.set_agent_id(id);
    r.set_host("127.0.0.1");
    r.set_port(port);
    r.mutable_machine()->set_agent_id(id);
    r.mutable_machine()->set_machine_type(type);
    for (int i = 0; i < ipus; ++i) r.mutable_machine()->add_ipus()->set_index(i);
    vipuagent::RegisterReply reply;
    return registry_->Register(c, r, &reply);
  };
  ExpectRefused([&](C c) { return reg(c, "new1", "c2-card", 9, 4); },
                grpc::StatusCode::INVALID_ARGUMENT, "machine_type");
  ExpectRefused([&](C c) { return reg(c, "new1", "m2000", 9, 5); },
                grpc::StatusCode::INVALID_ARGUMENT, "ipus");
  ExpectRefused([&](C c) { return reg(c, "bad id", "m2000", 9, 4); },
                grpc::StatusCode::INVALID_ARGUMENT, "agent id");
  ExpectRefused([&](C c) { return reg(c, "new1", "m2000", 0, 4); },
                grpc::StatusCode::INVALID_ARGUMENT, "port");

  grpc::ClientContext ctx;
  vipuagent::HeartbeatRequest hb;
  hb.set_agent_id("never-registered");
  vipuagent::HeartbeatReply reply;
  ASSERT_TRUE(registry_->Heartbeat(&ctx, hb, &reply).ok());
  EXPECT_TRUE(reply.reregister());
}

}  // namespace
}  // namespace vipu::testing
