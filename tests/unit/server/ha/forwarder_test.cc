// Forwarder: a standby relays calls to the leader over real gRPC on loopback,
// and a leader that was named before it listened is reached as soon as it
// does, not after gRPC's reconnect backoff.
#include "server/ha/forwarder.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/ha/member_role.h"
#include "tests/integration/daemon_process.h"
#include "version.grpc.pb.h"
#include "wire/metadata_keys.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

class Leader final : public virmgrpc::VersionService::Service {
  grpc::Status GetVersion(grpc::ServerContext*, const virmgrpc::VersionRequest*,
                          virmgrpc::VersionReply* reply) override {
    reply->set_version("from the leader");
    return grpc::Status::OK;
  }
};

class ForwarderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Below the ephemeral range and claimed: no other process takes it
    // before the leader binds it.
    leader_port_ = testing::FreePort();
    const std::string leader = absl::StrCat("127.0.0.1:", leader_port_);
    role_.SetLeader(MemberAddresses{leader, leader, leader});
    forwarder_ = std::make_shared<Forwarder>(&role_, nullptr);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &standby_port_);
    builder.RegisterCallbackGenericService(forwarder_.get());
    standby_ = builder.BuildAndStart();
    ASSERT_NE(standby_, nullptr);
    stub_ = virmgrpc::VersionService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", standby_port_), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (leader_) leader_->Shutdown();
    standby_->Shutdown();
  }

  // GetVersion through the standby; the reply or the refusal.
  grpc::Status Call(std::string* version, bool* nothing_done) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    virmgrpc::VersionReply reply;
    grpc::Status status = stub_->GetVersion(&context, {}, &reply);
    *version = reply.version();
    *nothing_done = context.GetServerTrailingMetadata().count(wire::kRetryAfterMetadata) > 0;
    return status;
  }

  void StartLeader() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", leader_port_),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(&leader_service_);
    leader_ = builder.BuildAndStart();
    ASSERT_NE(leader_, nullptr);
  }

  MemberRole role_{MemberAddresses{"127.0.0.1:1", "127.0.0.1:1", "127.0.0.1:1"}};
  int leader_port_ = 0;
  int standby_port_ = 0;
  std::shared_ptr<Forwarder> forwarder_;
  std::unique_ptr<grpc::Server> standby_;
  Leader leader_service_;
  std::unique_ptr<grpc::Server> leader_;
  std::unique_ptr<virmgrpc::VersionService::Stub> stub_;
};

TEST_F(ForwarderTest, ALeaderNamedBeforeItListensIsReachedAsSoonAsItListens) {
  std::string version;
  bool nothing_done = false;
  grpc::Status refused = Call(&version, &nothing_done);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("does not answer"));
  EXPECT_TRUE(nothing_done);
  EXPECT_EQ(forwarder_->backoff_resets(), 1u);
  // The leader comes up. A client honouring retry-after reaches it on its
  // next tries, well within gRPC's own reconnect backoff (at least a second
  // after a refused connection), which would refuse every one of them.
  StartLeader();
  int tries = 0;
  grpc::Status answered;
  for (; tries < 3; ++tries) {
    absl::SleepFor(absl::Milliseconds(200));  // at least the standby's retry-after
    answered = Call(&version, &nothing_done);
    if (answered.ok()) break;
    EXPECT_TRUE(nothing_done) << answered.error_message();
  }
  ASSERT_TRUE(answered.ok()) << answered.error_message();
  EXPECT_EQ(version, "from the leader");
  std::printf("[ measured ] reached the leader on retry %d\n", tries + 1);
}

TEST_F(ForwarderTest, ARefusedLeaderIsDialledAgainAtMostOncePerInterval) {
  std::string version;
  bool nothing_done = false;
  const absl::Time start = absl::Now();
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(Call(&version, &nothing_done).ok());
  // However long the five refusals took, one reset per interval begun.
  const double intervals =
      absl::FDivDuration(absl::Now() - start, Forwarder::kBackoffResetInterval);
  EXPECT_GE(forwarder_->backoff_resets(), 1u);
  EXPECT_LE(forwarder_->backoff_resets(), 1 + static_cast<uint64_t>(intervals));
}

TEST_F(ForwarderTest, AMemberNamedLeaderBeforeItServesAsOneRefusesInsteadOfCallingItself) {
  // Etcd names this very member, which has not taken over yet.
  const std::string self = absl::StrCat("127.0.0.1:", standby_port_);
  MemberRole self_role{MemberAddresses{self, self, self}};
  self_role.SetLeader(MemberAddresses{self, self, self});
  auto forwarder = std::make_shared<Forwarder>(&self_role, nullptr);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterCallbackGenericService(forwarder.get());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  auto stub = virmgrpc::VersionService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  virmgrpc::VersionReply reply;
  grpc::Status status = stub->GetVersion(&context, {}, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("no leader elected yet"));
  EXPECT_EQ(context.GetServerTrailingMetadata().count(wire::kRetryAfterMetadata), 1u);
  EXPECT_EQ(forwarder->backoff_resets(), 0u) << "nothing was dialled";
  server->Shutdown();
}

}  // namespace
}  // namespace vipu::server
