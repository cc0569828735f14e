// The published user API through a client generated from proto/: every RPC,
// its success path and its invalid values. A refusal must change nothing.
#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/shared_server_suite.h"
#include "version.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

class UserApiTest : public SharedServerSuite {
 protected:
  void SetUp() override {
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = virmgrpc::UserService::NewStub(channel_);
  }
  void TearDown() override {
    // Leave the pod empty for the next test.
    const virmgrpc::ListPartitionsReply list = List();
    for (const auto& p : list.partitions()) {
      grpc::ClientContext ctx;
      virmgrpc::RemovePartitionRequest req;
      req.set_partition_id(p.id());
      req.set_force(true);
      virmgrpc::RemovePartitionReply reply;
      stub_->RemovePartition(&ctx, req, &reply);
    }
  }

  virmgrpc::ListPartitionsReply List(const std::string& allocation = "") {
    grpc::ClientContext ctx;
    virmgrpc::ListPartitionsRequest req;
    req.set_allocation_id(allocation);
    virmgrpc::ListPartitionsReply reply;
    EXPECT_TRUE(stub_->ListPartitions(&ctx, req, &reply).ok());
    return reply;
  }

  grpc::Status Create(const virmgrpc::PartitionRequirements& r) {
    grpc::ClientContext ctx;
    virmgrpc::CreatePartitionRequest req;
    *req.mutable_requirements() = r;
    virmgrpc::CreatePartitionReply reply;
    return stub_->CreatePartition(&ctx, req, &reply);
  }

  static virmgrpc::PartitionRequirements Req(const std::string& id, uint32_t size) {
    virmgrpc::PartitionRequirements r;
    r.set_id(id);
    r.set_size(size);
    return r;
  }

  virmgrpc::PartitionStatus Status(const std::string& id, grpc::Status* s = nullptr) {
    grpc::ClientContext ctx;
    virmgrpc::GetPartitionStatusRequest req;
    req.set_partition_id(id);
    virmgrpc::GetPartitionStatusReply reply;
    grpc::Status st = stub_->GetPartitionStatus(&ctx, req, &reply);
    if (s) *s = st;
    return reply.status();
  }

  bool WaitActive(const std::string& id) {
    return WaitFor([&] { return Status(id).ready_state() == virmgrpc::PS_ACTIVE; },
                   absl::Seconds(20));
  }

  // A refusal with `code` whose message names `field`, leaving the list as it was.
  void ExpectRefused(const virmgrpc::PartitionRequirements& r, grpc::StatusCode code,
                     const std::string& field) {
    auto before = List().SerializeAsString();
    grpc::Status s = Create(r);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(field));
    EXPECT_EQ(List().SerializeAsString(), before) << "a refused create changed state";
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<virmgrpc::UserService::Stub> stub_;
};

TEST_F(UserApiTest, VersionServiceAnswers) {
  auto stub = virmgrpc::VersionService::NewStub(channel_);
  grpc::ClientContext ctx;
  virmgrpc::VersionReply reply;
  ASSERT_TRUE(stub->GetVersion(&ctx, virmgrpc::VersionRequest(), &reply).ok());
  EXPECT_EQ(reply.version(), VIPU_VERSION);
}

TEST_F(UserApiTest, CreateGoesPendingThenActiveWithAlignedIpus) {
  ASSERT_TRUE(Create(Req("p4", 4)).ok());
  ASSERT_TRUE(WaitActive("p4"));
  virmgrpc::PartitionStatus st = Status("p4");
  EXPECT_EQ(st.operation_state(), virmgrpc::POS_IDLE);
  EXPECT_TRUE(st.errors().empty());
  auto list = List();
  ASSERT_EQ(list.partitions_size(), 1);
  const auto& p = list.partitions(0);
  EXPECT_EQ(p.id(), "p4");
  EXPECT_EQ(p.ready_state(), virmgrpc::PS_ACTIVE);
  EXPECT_EQ(p.spec().ipus_size(), 4);
  EXPECT_EQ(p.spec().num_gcds(), 1u);
  EXPECT_EQ(p.spec().num_replicas(), 1u);
  EXPECT_EQ(p.spec().allocation_id(), "default");
  EXPECT_EQ(p.spec().cluster_id(), "pod16");
  EXPECT_EQ(p.spec().ipulink_routing_type(), virmgrpc::IRT_DNC);
  EXPECT_EQ(p.spec().ipus(0).topology_id() % 4, 0u) << "4-IPU block must be machine aligned";
}

TEST_F(UserApiTest, IpuofConfigHasOneDevicePerIpuOfEachGcd) {
  auto r = Req("g2", 8);
  r.set_num_gcds(2);
  ASSERT_TRUE(Create(r).ok());
  ASSERT_TRUE(WaitActive("g2"));
  for (uint32_t gcd = 0; gcd < 2; ++gcd) {
    grpc::ClientContext ctx;
    virmgrpc::GetPartitionIpuofConfigRequest req;
    req.set_partition_id("g2");
    req.mutable_gcd_id()->set_id(gcd);
    virmgrpc::GetPartitionIpuofConfigReply reply;
    ASSERT_TRUE(stub_->GetPartitionIpuofConfig(&ctx, req, &reply).ok());
    ASSERT_EQ(reply.ipuof_config().gcd_configs_size(), 1);
    const auto& g = reply.ipuof_config().gcd_configs(0);
    ASSERT_EQ(g.devices_size(), 4);
    EXPECT_EQ(g.attributes().at("GCD Id"), std::to_string(gcd));
    for (int i = 0; i < g.devices_size(); ++i) {
      EXPECT_EQ(g.devices(i).device_id(), static_cast<uint32_t>(i));
      EXPECT_EQ(g.devices(i).ip(), "127.0.0.1");
      EXPECT_GT(g.devices(i).server_port(), 0u);
      EXPECT_EQ(g.devices(i).ipu_arch_id(), 2u);
    }
  }
  grpc::ClientContext ctx;
  virmgrpc::GetPartitionIpuofConfigRequest req;
  req.set_partition_id("g2");
  req.mutable_gcd_id()->set_id(2);
  virmgrpc::GetPartitionIpuofConfigReply reply;
  grpc::Status s = stub_->GetPartitionIpuofConfig(&ctx, req, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("gcd_id"));
}

TEST_F(UserApiTest, CreateRefusesEveryInvalidField) {
  ExpectRefused(Req("", 4), grpc::StatusCode::INVALID_ARGUMENT, "id");
  ExpectRefused(Req("bad id!", 4), grpc::StatusCode::INVALID_ARGUMENT, "id");
  ExpectRefused(Req(std::string(65, 'a'), 4), grpc::StatusCode::INVALID_ARGUMENT, "id");
  ExpectRefused(Req("p", 0), grpc::StatusCode::INVALID_ARGUMENT, "size");
  ExpectRefused(Req("p", 6), grpc::StatusCode::INVALID_ARGUMENT, "size");
  // Larger than the whole cluster can ever hold: invalid, not merely exhausted.
  ExpectRefused(Req("p", 32), grpc::StatusCode::INVALID_ARGUMENT, "size");
  auto r = Req("p", 4);
  r.set_num_gcds(3);
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "num_gcds");
  r = Req("p", 4);
  r.set_num_gcds(8);
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "num_gcds");
  r = Req("p", 4);
  r.set_num_gcds(2);
  r.set_num_replicas(3);
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "num_replicas");
  r = Req("p", 4);
  r.set_reconfigurable(true);
  r.set_sync_type(virmgrpc::ST_POD_NATIVE_DEFAULT);
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "reconfigurable");
  r = Req("p", 4);
  r.set_sync_type(virmgrpc::ST_GS2_INDEPENDENT_RAILS);
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "sync_type");
  r = Req("p", 4);
  r.set_sync_type(static_cast<virmgrpc::SyncType>(9));
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "sync_type");
  r = Req("p", 4);
  r.set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(7));
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "ipulink_routing_type");
  r = Req("p", 4);
  r.set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(1));
  ExpectRefused(r, grpc::StatusCode::INVALID_ARGUMENT, "gw_routing_type");
  r = Req("p", 4);
  r.set_allocation_id("nope");
  ExpectRefused(r, grpc::StatusCode::NOT_FOUND, "allocation");
  r = Req("p", 4);
  r.set_cluster_id("nope");
  ExpectRefused(r, grpc::StatusCode::NOT_FOUND, "cluster");
}

TEST_F(UserApiTest, DuplicateIdIsAlreadyExists) {
  ASSERT_TRUE(Create(Req("dup", 1)).ok());
  ASSERT_TRUE(WaitActive("dup"));
  ExpectRefused(Req("dup", 1), grpc::StatusCode::ALREADY_EXISTS, "dup");
}

TEST_F(UserApiTest, PodFillsUpThenRefusesThenFreesOnRemove) {
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Create(Req("m" + std::to_string(i), 4)).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(WaitActive("m" + std::to_string(i)));
  ExpectRefused(Req("more", 1), grpc::StatusCode::RESOURCE_EXHAUSTED, "size");
  // No IPU in two partitions.
  std::set<std::pair<uint32_t, uint32_t>> seen;
  const virmgrpc::ListPartitionsReply list = List();
  for (const auto& p : list.partitions()) {
    for (const auto& ipu : p.spec().ipus()) {
      EXPECT_TRUE(seen.insert({ipu.ipulink_domain_topology_id(), ipu.topology_id()}).second);
    }
  }
  EXPECT_EQ(seen.size(), 16u);
  grpc::ClientContext ctx;
  virmgrpc::RemovePartitionRequest req;
  req.set_partition_id("m2");
  virmgrpc::RemovePartitionReply reply;
  ASSERT_TRUE(stub_->RemovePartition(&ctx, req, &reply).ok());
  EXPECT_TRUE(Create(Req("more", 4)).ok());
}

TEST_F(UserApiTest, ResetReturnsToActive) {
  ASSERT_TRUE(Create(Req("r", 2)).ok());
  ASSERT_TRUE(WaitActive("r"));
  grpc::ClientContext ctx;
  virmgrpc::ResetPartitionRequest req;
  req.set_partition_id("r");
  virmgrpc::ResetPartitionReply reply;
  ASSERT_TRUE(stub_->ResetPartition(&ctx, req, &reply).ok());
  EXPECT_TRUE(WaitActive("r"));
}

TEST_F(UserApiTest, UnknownPartitionIsNotFoundEverywhere) {
  grpc::Status s;
  Status("ghost", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    virmgrpc::RemovePartitionRequest req;
    req.set_partition_id("ghost");
    virmgrpc::RemovePartitionReply reply;
    EXPECT_EQ(stub_->RemovePartition(&ctx, req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    virmgrpc::ResetPartitionRequest req;
    req.set_partition_id("ghost");
    virmgrpc::ResetPartitionReply reply;
    EXPECT_EQ(stub_->ResetPartition(&ctx, req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    virmgrpc::GetPartitionIpuofConfigRequest req;
    req.set_partition_id("ghost");
    virmgrpc::GetPartitionIpuofConfigReply reply;
    EXPECT_EQ(stub_->GetPartitionIpuofConfig(&ctx, req, &reply).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    virmgrpc::ListPartitionsRequest req;
    req.set_allocation_id("ghost");
    virmgrpc::ListPartitionsReply reply;
    EXPECT_EQ(stub_->ListPartitions(&ctx, req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // Malformed ids are INVALID_ARGUMENT, not NOT_FOUND.
  Status("bad/id", &s);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(UserApiTest, IpuAttributesPerAgentPerIpu) {
  grpc::ClientContext ctx;
  virmgrpc::ListIPUAttributesRequest req;
  req.add_agents("ag2");
  virmgrpc::ListIPUAttributesReply reply;
  ASSERT_TRUE(stub_->ListIPUAttributes(&ctx, req, &reply).ok());
  ASSERT_EQ(reply.entries_size(), 1);
  EXPECT_EQ(reply.entries(0).agent(), "ag2");
  EXPECT_EQ(reply.entries(0).ipu_attributes_size(), 4);
  EXPECT_EQ(reply.entries(0).ipu_attributes().at(0).attributes().at("board type"), "M2000");

  grpc::ClientContext ctx2;
  virmgrpc::ListIPUAttributesRequest all;
  virmgrpc::ListIPUAttributesReply all_reply;
  ASSERT_TRUE(stub_->ListIPUAttributes(&ctx2, all, &all_reply).ok());
  EXPECT_EQ(all_reply.entries_size(), 4);

  grpc::ClientContext ctx3;
  virmgrpc::ListIPUAttributesRequest bad;
  bad.add_agents("ag99");
  EXPECT_EQ(stub_->ListIPUAttributes(&ctx3, bad, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace vipu::testing
