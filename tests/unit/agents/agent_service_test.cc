// The Agent service in-process, on a loopback port, through a real channel.
#include "agents/agent_service.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AgentServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    machine_.set_ipuof_port(static_cast<uint32_t>(port));
    stub_ = vipuagent::Agent::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  grpc::Status Configure(const std::string& agent_id, const std::string& partition,
                         uint64_t generation, std::vector<uint32_t> ipus) {
    vipuagent::ConfigurePartitionRequest request;
    request.set_agent_id(agent_id);
    request.set_partition_id(partition);
    request.set_generation(generation);
    for (uint32_t ipu : ipus) request.add_ipus(ipu);
    request.set_ipulink_routing_type(virmgrpc::IRT_DNC);
    request.set_sync_type(virmgrpc::ST_POD_NATIVE_DEFAULT);
    request.set_partition_size(static_cast<uint32_t>(ipus.size()));
    return Call(request);
  }
  grpc::Status Call(const vipuagent::ConfigurePartitionRequest& request) {
    grpc::ClientContext context;
    vipuagent::ConfigurePartitionReply reply;
    return stub_->ConfigurePartition(&context, request, &reply);
  }
  grpc::Status Reset(const std::string& agent_id, const std::string& partition,
                     uint64_t generation) {
    vipuagent::ResetPartitionRequest request;
    request.set_agent_id(agent_id);
    request.set_partition_id(partition);
    request.set_generation(generation);
    grpc::ClientContext context;
    vipuagent::ResetPartitionReply reply;
    return stub_->ResetPartition(&context, request, &reply);
  }
  grpc::Status Release(const std::string& agent_id, const std::string& partition,
                       uint64_t generation) {
    vipuagent::ReleasePartitionRequest request;
    request.set_agent_id(agent_id);
    request.set_partition_id(partition);
    request.set_generation(generation);
    grpc::ClientContext context;
    vipuagent::ReleasePartitionReply reply;
    return stub_->ReleasePartition(&context, request, &reply);
  }
  grpc::Status GetInfo(const std::string& agent_id, vipuagent::GetInfoReply* reply) {
    vipuagent::GetInfoRequest request;
    request.set_agent_id(agent_id);
    grpc::ClientContext context;
    return stub_->GetInfo(&context, request, reply);
  }

  SimulatedMachine machine_{"ag1", fabric::MachineType::kBow};
  AgentService service_{&machine_, PeerPolicy::PlaintextAdmittingEveryone()};
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<vipuagent::Agent::Stub> stub_;
};

TEST_F(AgentServiceTest, RequestForAnotherAgentIsRefusedByEveryMethod) {
  vipuagent::GetInfoReply info;
  for (const grpc::Status& status :
       {GetInfo("ag2", &info), Configure("ag2", "p1", 1, {0}), Reset("ag2", "p1", 1),
        Release("ag2", "p1", 1), GetInfo("", &info)}) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), HasSubstr("reached agent 'ag1'"));
  }
  EXPECT_THAT(Configure("ag2", "p1", 1, {0}).error_message(),
              HasSubstr("request for agent 'ag2' reached agent 'ag1'"));
  EXPECT_TRUE(machine_.Held().empty());
}

TEST_F(AgentServiceTest, GetInfoDescribesTheMachine) {
  vipuagent::GetInfoReply reply;
  ASSERT_TRUE(GetInfo("ag1", &reply).ok());
  const vipuagent::Machine& m = reply.machine();
  EXPECT_EQ(m.agent_id(), "ag1");
  EXPECT_EQ(m.machine_type(), "bow");
  EXPECT_EQ(m.ipuof_port(), machine_.ipuof_port());
  ASSERT_EQ(m.ipus_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(m.ipus(i).index(), static_cast<uint32_t>(i));
    ASSERT_EQ(m.ipus(i).attributes_size(), static_cast<int>(machine_.ipus()[i].attributes.size()));
    // Order kept on the wire.
    for (int a = 0; a < m.ipus(i).attributes_size(); ++a) {
      EXPECT_EQ(m.ipus(i).attributes(a).name(), machine_.ipus()[i].attributes[a].name);
      EXPECT_EQ(m.ipus(i).attributes(a).value(), machine_.ipus()[i].attributes[a].value);
    }
  }
  ASSERT_EQ(m.details_size(), 12);
  EXPECT_EQ(m.details(0).name(), "Platform");
  EXPECT_EQ(m.details(11).name(), "Num of IPUs");
  EXPECT_EQ(m.details(11).value(), "4");
  EXPECT_EQ(reply.held_size(), 0);
}

TEST_F(AgentServiceTest, ConfigureThenGetInfoShowsHeld) {
  ASSERT_TRUE(Configure("ag1", "p1", 3, {1, 0}).ok());
  ASSERT_TRUE(Configure("ag1", "p2", 1, {2}).ok());
  vipuagent::GetInfoReply reply;
  ASSERT_TRUE(GetInfo("ag1", &reply).ok());
  ASSERT_EQ(reply.held_size(), 2);
  EXPECT_EQ(reply.held(0).partition_id(), "p1");
  EXPECT_EQ(reply.held(0).generation(), 3u);
  EXPECT_THAT(reply.held(0).ipus(), ElementsAre(0u, 1u));
  EXPECT_EQ(reply.held(1).partition_id(), "p2");
  EXPECT_THAT(reply.held(1).ipus(), ElementsAre(2u));

  ASSERT_TRUE(Release("ag1", "p1", 3).ok());
  vipuagent::GetInfoReply after;
  ASSERT_TRUE(GetInfo("ag1", &after).ok());
  ASSERT_EQ(after.held_size(), 1);
  EXPECT_EQ(after.held(0).partition_id(), "p2");
}

TEST_F(AgentServiceTest, ConfigureCarriesRoutingToTheMachine) {
  vipuagent::ConfigurePartitionRequest request;
  request.set_agent_id("ag1");
  request.set_partition_id("p1");
  request.set_generation(2);
  for (uint32_t ipu : {0u, 1u, 2u, 3u}) request.add_ipus(ipu);
  request.set_ipulink_routing_type(virmgrpc::IRT_RINGSWNC);
  request.set_gw_routing_type(virmgrpc::GRT_SWRING);
  request.set_sync_type(virmgrpc::ST_GS2_DEFAULT);
  request.set_partition_size(128);
  request.set_num_ilds(2);
  ASSERT_TRUE(Call(request).ok());
  absl::StatusOr<PartitionConfig> config = machine_.Config("p1");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->num_ilds, 2u);
  EXPECT_EQ(config->routing, fabric::RoutingType::kRingSwnc);
  EXPECT_EQ(config->gw_routing, fabric::GwRoutingType::kSwRing);
  EXPECT_EQ(config->sync_type, fabric::SyncType::kGs2Default);
  EXPECT_EQ(config->partition_size, 128u);
}

TEST_F(AgentServiceTest, NumIldsMustBeAPowerOfTwoDividingTheSize) {
  for (uint32_t ilds : {3u, 256u}) {
    vipuagent::ConfigurePartitionRequest request;
    request.set_agent_id("ag1");
    request.set_partition_id("p1");
    request.set_generation(2);
    request.add_ipus(0);
    request.set_partition_size(128);
    request.set_num_ilds(ilds);
    grpc::Status s = Call(request);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << ilds;
    EXPECT_THAT(s.error_message(), ::testing::HasSubstr("num_ilds: must be a power of two"));
    EXPECT_FALSE(machine_.Config("p1").ok());
  }
}

TEST_F(AgentServiceTest, UnknownEnumValuesAreInvalid) {
  vipuagent::ConfigurePartitionRequest base;
  base.set_agent_id("ag1");
  base.set_partition_id("p1");
  base.set_generation(1);
  base.add_ipus(0);

  vipuagent::ConfigurePartitionRequest routing = base;
  routing.set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(9));
  grpc::Status status = Call(routing);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("ipulink_routing_type: unknown value 9"));

  vipuagent::ConfigurePartitionRequest gw = base;
  gw.set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(1));  // a gap in the enum
  status = Call(gw);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("gw_routing_type: unknown value 1"));

  vipuagent::ConfigurePartitionRequest sync = base;
  sync.set_sync_type(static_cast<virmgrpc::SyncType>(-1));
  status = Call(sync);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("sync_type: unknown value -1"));
  EXPECT_TRUE(machine_.Held().empty());
}

TEST_F(AgentServiceTest, MachineErrorsKeepTheirCodeAndMessage) {
  grpc::Status bad_ipu = Configure("ag1", "p1", 1, {7});
  EXPECT_EQ(bad_ipu.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad_ipu.error_message(), HasSubstr("ipus: IPU index must be 0..3, got 7"));

  ASSERT_TRUE(Configure("ag1", "p1", 5, {0}).ok());
  grpc::Status stale = Configure("ag1", "p1", 4, {0});
  EXPECT_EQ(stale.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(stale.error_message(), HasSubstr("stale generation 4 < 5"));
  EXPECT_EQ(Reset("ag1", "p1", 4).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Release("ag1", "p1", 4).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(Reset("ag1", "nope", 1).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Release("ag1", "nope", 1).ok());
  EXPECT_TRUE(Reset("ag1", "p1", 5).ok());
  EXPECT_EQ(machine_.ResetCountForTesting("p1"), 1u);
}

}  // namespace
}  // namespace vipu::agents
