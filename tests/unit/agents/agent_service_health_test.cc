// The Agent service's issue-3 RPCs in-process, through a real channel:
// every invalid value of the new fields is refused naming the field.
#include <memory>
#include <string>

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

class HealthServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = vipuagent::Agent::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                                          grpc::InsecureChannelCredentials()));
    vipuagent::ConfigurePartitionRequest c;
    c.set_agent_id("ag1");
    c.set_partition_id("p");
    c.set_generation(3);
    for (uint32_t i : {3u, 2u, 1u, 0u}) c.add_ipus(i);
    c.set_partition_size(4);
    c.add_link_ports(0);
    grpc::ClientContext ctx;
    vipuagent::ConfigurePartitionReply r;
    ASSERT_TRUE(stub_->ConfigurePartition(&ctx, c, &r).ok());
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  static void ExpectInvalid(const grpc::Status& s, const std::string& message) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(message));
  }

  grpc::Status Run(vipuagent::RunWorkloadRequest req, vipuagent::RunWorkloadReply* reply) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    return stub_->RunWorkload(&ctx, req, reply);
  }

  vipuagent::RunWorkloadRequest GoodRun() {
    vipuagent::RunWorkloadRequest r;
    r.set_agent_id("ag1");
    r.set_partition_id("p");
    r.mutable_workload()->set_model("resnet50");
    r.set_steps(2);
    return r;
  }

  SimulatedMachine machine_{"ag1", fabric::MachineType::kM2000};
  bool crashed_ = false;
  AgentService service_{&machine_, PeerPolicy::PlaintextAdmittingEveryone(),
                        [this] { crashed_ = true; }};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<vipuagent::Agent::Stub> stub_;
};

TEST_F(HealthServiceTest, RunWorkloadOnASingleMachineAndItsRefusals) {
  vipuagent::RunWorkloadReply reply;
  ASSERT_TRUE(Run(GoodRun(), &reply).ok());
  EXPECT_EQ(reply.step_time_s_size(), 2);
  EXPECT_EQ(reply.generation(), 3u);
  auto anonymous = GoodRun();
  anonymous.clear_agent_id();  // the data plane addresses machines by endpoint
  EXPECT_TRUE(Run(anonymous, &reply).ok());

  auto r = GoodRun();
  r.set_partition_id("");
  ExpectInvalid(Run(r, &reply), "partition_id: must not be empty");
  r = GoodRun();
  r.clear_workload();
  ExpectInvalid(Run(r, &reply), "workload: is required");
  r = GoodRun();
  r.set_steps(0);
  ExpectInvalid(Run(r, &reply), "steps:");
  r = GoodRun();
  r.mutable_workload()->set_micro_batch(0);
  r.mutable_workload()->set_model("nope");
  ExpectInvalid(Run(r, &reply), "workload.model:");
  r = GoodRun();
  r.set_agent_id("ag2");
  EXPECT_EQ(Run(r, &reply).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  r = GoodRun();
  r.set_generation(2);
  grpc::Status stale = Run(r, &reply);
  EXPECT_EQ(stale.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(stale.error_message(), HasSubstr("generation: partition p is at generation 3"));
  r = GoodRun();
  r.set_partition_id("q");
  EXPECT_EQ(Run(r, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(HealthServiceTest, RunWorkloadNamesAnUnreachableMember) {
  {
    grpc::ClientContext ctx;
    vipuagent::ReleasePartitionRequest release;
    release.set_agent_id("ag1");
    release.set_partition_id("p");
    release.set_generation(3);
    vipuagent::ReleasePartitionReply r;
    ASSERT_TRUE(stub_->ReleasePartition(&ctx, release, &r).ok());
  }
  vipuagent::ConfigurePartitionRequest c;
  c.set_agent_id("ag1");
  c.set_partition_id("wide");
  c.set_generation(4);
  c.add_ipus(0);
  c.set_partition_size(8);
  auto* self = c.add_members();
  self->set_agent_id("ag1");
  self->set_host("127.0.0.1");
  self->set_port(port_);
  auto* gone = c.add_members();
  gone->set_agent_id("ag2");
  gone->set_host("127.0.0.1");
  gone->set_port(1);  // nothing listens there
  {
    grpc::ClientContext ctx;
    vipuagent::ConfigurePartitionReply r;
    ASSERT_TRUE(stub_->ConfigurePartition(&ctx, c, &r).ok());
  }
  auto r = GoodRun();
  r.set_partition_id("wide");
  vipuagent::RunWorkloadReply reply;
  grpc::Status s = Run(r, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("agent ag2: unreachable"));
}

TEST_F(HealthServiceTest, InjectFaultRefusesInvalidFieldsAndAnswersWhileHung) {
  auto inject = [&](vipuagent::InjectFaultRequest req) {
    grpc::ClientContext ctx;
    vipuagent::InjectFaultReply reply;
    return stub_->InjectFault(&ctx, req, &reply);
  };
  vipuagent::InjectFaultRequest req;
  req.set_agent_id("ag1");
  req.set_kind(static_cast<vipuagent::FaultKind>(77));
  ExpectInvalid(inject(req), "kind: unknown value 77");
  req.set_kind(vipuagent::FAULT_KIND_UNDEFINED);
  ExpectInvalid(inject(req), "kind: must be one of");
  req.set_kind(vipuagent::FAULT_IPU_ERROR);
  ExpectInvalid(inject(req), "ipu: is required");
  req.set_ipu(9);
  ExpectInvalid(inject(req), "ipu: must be 0..3");
  req.set_kind(vipuagent::FAULT_LINK_DOWN);
  req.clear_ipu();
  req.set_link(1);
  // No topology yet: the machine does not know its links.
  EXPECT_EQ(inject(req).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  req.set_agent_id("ag7");
  EXPECT_EQ(inject(req).error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  vipuagent::InjectFaultRequest hang;
  hang.set_agent_id("ag1");
  hang.set_kind(vipuagent::FAULT_AGENT_HANG);
  ASSERT_TRUE(inject(hang).ok());
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    vipuagent::GetInfoRequest info;
    info.set_agent_id("ag1");
    vipuagent::GetInfoReply reply;
    EXPECT_EQ(stub_->GetInfo(&ctx, info, &reply).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  vipuagent::InjectFaultRequest clear;
  clear.set_agent_id("ag1");
  clear.set_kind(vipuagent::FAULT_CLEAR);
  ASSERT_TRUE(inject(clear).ok());
  vipuagent::RunWorkloadReply reply;
  EXPECT_TRUE(Run(GoodRun(), &reply).ok());

  vipuagent::InjectFaultRequest crash;
  crash.set_agent_id("ag1");
  crash.set_kind(vipuagent::FAULT_AGENT_CRASH);
  ASSERT_TRUE(inject(crash).ok());
  EXPECT_TRUE(crashed_);
  EXPECT_EQ(Run(GoodRun(), &reply).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(HealthServiceTest, TopologyAndLinkTestsRefuseInvalidValues) {
  vipuagent::TestLinksRequest test;
  test.set_agent_id("ag1");
  test.set_kind(vipuagent::LINK_TEST_TRAINING);
  {
    grpc::ClientContext ctx;
    vipuagent::TestLinksReply reply;
    EXPECT_EQ(stub_->TestLinks(&ctx, test, &reply).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);  // no topology yet
  }
  vipuagent::SetTopologyRequest topo;
  topo.set_agent_id("ag1");
  topo.set_num_ilds(1);
  topo.set_machines_per_ild(1);
  auto* p = topo.add_ports();
  p->set_port(0);
  p->set_kind(vipuagent::LINK_KIND_IPU);
  p->set_name("ag1.ipu3-ag1.ipu2");
  p->set_internal(true);
  auto set = [&](const vipuagent::SetTopologyRequest& t) {
    grpc::ClientContext ctx;
    vipuagent::SetTopologyReply reply;
    return stub_->SetTopology(&ctx, t, &reply);
  };
  auto bad = topo;
  bad.mutable_ports(0)->set_kind(static_cast<vipuagent::LinkKind>(9));
  ExpectInvalid(set(bad), "ports.kind:");
  bad = topo;
  bad.mutable_ports(0)->set_kind(vipuagent::LINK_KIND_UNDEFINED);
  ExpectInvalid(set(bad), "ports.kind:");
  bad = topo;
  bad.set_machine_index(1);
  ExpectInvalid(set(bad), "machine_index:");
  bad = topo;
  bad.mutable_ports(0)->set_port(20);
  ExpectInvalid(set(bad), "ports.port:");
  ASSERT_TRUE(set(topo).ok());

  for (int kind : {0, 6, -1}) {
    auto t = test;
    t.set_kind(static_cast<vipuagent::LinkTestKind>(kind));
    grpc::ClientContext ctx;
    vipuagent::TestLinksReply reply;
    ExpectInvalid(stub_->TestLinks(&ctx, t, &reply), "kind:");
  }
  grpc::ClientContext ctx;
  vipuagent::TestLinksReply reply;
  ASSERT_TRUE(stub_->TestLinks(&ctx, test, &reply).ok());
  ASSERT_EQ(reply.links_size(), 1);
  EXPECT_EQ(reply.links(0).state(), vipuagent::LINK_STATE_TRAINED);
  EXPECT_EQ(reply.ipus_size(), 4);
}

}  // namespace
}  // namespace vipu::agents
