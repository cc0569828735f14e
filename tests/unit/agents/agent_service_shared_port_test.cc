// AgentService::SharedPort: three machines behind one loopback port,
// requests dispatched by agent_id; a wrong or missing id is refused.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent_service.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using ::testing::HasSubstr;

class SharedPortServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<SimulatedMachine*> machines;
    for (const char* id : {"m0", "m1", "m2"}) {
      machines_.push_back(std::make_unique<SimulatedMachine>(id, fabric::MachineType::kM2000));
      machines.push_back(machines_.back().get());
    }
    service_ = AgentService::SharedPort(machines, PeerPolicy::PlaintextAdmittingEveryone());
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    for (auto& m : machines_) m->set_ipuof_port(static_cast<uint32_t>(port));
    stub_ = vipuagent::Agent::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                          grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  grpc::Status GetInfo(const std::string& agent_id, vipuagent::GetInfoReply* reply) {
    grpc::ClientContext context;
    vipuagent::GetInfoRequest request;
    request.set_agent_id(agent_id);
    return stub_->GetInfo(&context, request, reply);
  }
  grpc::Status Configure(const std::string& agent_id, const std::string& partition) {
    grpc::ClientContext context;
    vipuagent::ConfigurePartitionRequest request;
    request.set_agent_id(agent_id);
    request.set_partition_id(partition);
    request.set_generation(3);
    request.add_ipus(0);
    request.set_ipulink_routing_type(virmgrpc::IRT_DNC);
    request.set_sync_type(virmgrpc::ST_POD_NATIVE_DEFAULT);
    request.set_partition_size(1);
    vipuagent::ConfigurePartitionReply reply;
    return stub_->ConfigurePartition(&context, request, &reply);
  }
  grpc::Status RunWorkload(const std::string& agent_id, const std::string& partition) {
    grpc::ClientContext context;
    vipuagent::RunWorkloadRequest request;
    request.set_agent_id(agent_id);
    request.set_partition_id(partition);
    request.mutable_workload()->set_model("resnet50");
    request.set_steps(2);
    vipuagent::RunWorkloadReply reply;
    return stub_->RunWorkload(&context, request, &reply);
  }

  std::vector<std::unique_ptr<SimulatedMachine>> machines_;
  std::unique_ptr<AgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<vipuagent::Agent::Stub> stub_;
};

TEST_F(SharedPortServiceTest, EachRequestReachesTheMachineItNames) {
  for (const char* id : {"m0", "m1", "m2"}) {
    vipuagent::GetInfoReply reply;
    ASSERT_TRUE(GetInfo(id, &reply).ok());
    EXPECT_EQ(reply.machine().agent_id(), id);
  }
  ASSERT_TRUE(Configure("m1", "p").ok());
  EXPECT_TRUE(machines_[1]->Config("p").ok());
  EXPECT_FALSE(machines_[0]->Config("p").ok());
  EXPECT_FALSE(machines_[2]->Config("p").ok());
}

TEST_F(SharedPortServiceTest, UnknownAgentIdIsRefusedAndChangesNothing) {
  vipuagent::GetInfoReply reply;
  grpc::Status s = GetInfo("m3", &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("agent_id: request for agent 'm3' reached a port"));
  s = Configure("m3", "p");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  for (auto& m : machines_) EXPECT_FALSE(m->Config("p").ok());
}

TEST_F(SharedPortServiceTest, EveryRpcRoutesByAgentId) {
  std::vector<std::pair<const char*, grpc::Status>> calls;
  auto call = [&](const char* name, auto rpc, auto request, auto reply) {
    for (const char* id : {"m9", ""}) {
      grpc::ClientContext context;
      request.set_agent_id(id);
      calls.emplace_back(name, (stub_.get()->*rpc)(&context, request, &reply));
    }
  };
  call("GetInfo", &vipuagent::Agent::Stub::GetInfo, vipuagent::GetInfoRequest(),
       vipuagent::GetInfoReply());
  call("ConfigurePartition", &vipuagent::Agent::Stub::ConfigurePartition,
       vipuagent::ConfigurePartitionRequest(), vipuagent::ConfigurePartitionReply());
  call("ResetPartition", &vipuagent::Agent::Stub::ResetPartition,
       vipuagent::ResetPartitionRequest(), vipuagent::ResetPartitionReply());
  call("ReleasePartition", &vipuagent::Agent::Stub::ReleasePartition,
       vipuagent::ReleasePartitionRequest(), vipuagent::ReleasePartitionReply());
  call("SetTopology", &vipuagent::Agent::Stub::SetTopology, vipuagent::SetTopologyRequest(),
       vipuagent::SetTopologyReply());
  call("InjectFault", &vipuagent::Agent::Stub::InjectFault, vipuagent::InjectFaultRequest(),
       vipuagent::InjectFaultReply());
  call("TestLinks", &vipuagent::Agent::Stub::TestLinks, vipuagent::TestLinksRequest(),
       vipuagent::TestLinksReply());
  call("CheckPartition", &vipuagent::Agent::Stub::CheckPartition,
       vipuagent::CheckPartitionRequest(), vipuagent::CheckPartitionReply());
  ASSERT_EQ(calls.size(), 16u);
  for (size_t i = 0; i < calls.size(); i += 2) {
    const auto& [name, unknown] = calls[i];
    EXPECT_EQ(unknown.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << name;
    EXPECT_THAT(unknown.error_message(), HasSubstr("'m9' reached a port that does not serve it"))
        << name;
    const auto& [same_name, empty] = calls[i + 1];
    EXPECT_EQ(empty.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << same_name;
    EXPECT_THAT(empty.error_message(), HasSubstr("agent_id: must name the machine")) << same_name;
  }
}

TEST_F(SharedPortServiceTest, EmptyAgentIdIsRefused) {
  vipuagent::GetInfoReply reply;
  grpc::Status s = GetInfo("", &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("agent_id: must name the machine"));
  EXPECT_EQ(Configure("", "p").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(SharedPortServiceTest, RunWorkloadWithoutAgentIdGoesToAHolder) {
  grpc::Status s = RunWorkload("", "p");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("partition_id: no machine on this port holds"));
  EXPECT_EQ(RunWorkload("", "").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(RunWorkload("m9", "p").error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(Configure("m2", "p").ok());
  s = RunWorkload("", "p");
  EXPECT_TRUE(s.ok()) << s.error_message();
}

TEST_F(SharedPortServiceTest, CrashedMachineRefusesWhileTheOthersServe) {
  machines_[0]->MarkCrashed();
  vipuagent::GetInfoReply reply;
  EXPECT_EQ(GetInfo("m0", &reply).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(GetInfo("m1", &reply).ok());
}

}  // namespace
}  // namespace vipu::agents
