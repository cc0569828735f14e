// Endpoints' sharing of addresses: a member's standby listeners refuse an
// address another socket holds, and its leader listeners start beside them
// on the same addresses, so one of the two always listens.
#include "server/api/endpoints.h"

#include <gmock/gmock.h>
#include <grpcpp/health_check_service_interface.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/unit/support/loopback_listener.h"
#include "version.grpc.pb.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

EndpointSpec SpecOn(const std::string& listen, EndpointSpec::Sharing sharing) {
  // As the server's listeners have it (ListenersOf).
  grpc::EnableDefaultHealthCheckService(true);
  EndpointSpec spec;
  spec.user_listen = listen;
  spec.sharing = sharing;
  return spec;
}

bool Answers(const std::string& address) {
  auto stub = virmgrpc::VersionService::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  virmgrpc::VersionRequest request;
  virmgrpc::VersionReply reply;
  return stub->GetVersion(&ctx, request, &reply).ok();
}

TEST(EndpointsTest, AStandbysListenersRefuseAnAddressAnotherSocketHolds) {
  test::Listener other;
  ASSERT_NE(other.port(), 0u);
  const std::string address = absl::StrCat("127.0.0.1:", other.port());
  for (EndpointSpec::Sharing sharing :
       {EndpointSpec::Sharing::kNone, EndpointSpec::Sharing::kFirst}) {
    absl::StatusOr<std::unique_ptr<Endpoints>> e = Endpoints::Start(SpecOn(address, sharing));
    ASSERT_FALSE(e.ok());
    EXPECT_THAT(std::string(e.status().message()),
                HasSubstr(absl::StrCat("cannot listen on ", address, ": the address is in use")));
  }
}

TEST(EndpointsTest, ALeadersListenersStartBesideItsStandbysOnTheSameAddress) {
  uint32_t port = 0;
  {
    test::Listener probe;
    port = probe.port();
  }
  ASSERT_NE(port, 0u);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<Endpoints>> standby =
      Endpoints::Start(SpecOn(address, EndpointSpec::Sharing::kFirst));
  ASSERT_TRUE(standby.ok()) << standby.status();
  absl::StatusOr<std::unique_ptr<Endpoints>> leader =
      Endpoints::Start(SpecOn(address, EndpointSpec::Sharing::kJoin));
  ASSERT_TRUE(leader.ok()) << leader.status();
  EXPECT_EQ((*leader)->user_address(), address);
  (*standby)->Shutdown();
  standby->reset();
  EXPECT_TRUE(Answers(address));
  // A second standby on the address is refused while the leader holds it.
  EXPECT_FALSE(Endpoints::Start(SpecOn(address, EndpointSpec::Sharing::kFirst)).ok());
}

}  // namespace
}  // namespace vipu::server
