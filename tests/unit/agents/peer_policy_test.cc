// A simulated machine's service fails closed: it cannot be built without a
// peer policy, and the policy that admits everyone says so in its name.
#include "agents/peer_policy.h"

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "agents/agent_service.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

// No constructor without a policy, no null standing in for one, and no
// setter to add one later.
static_assert(!std::is_constructible_v<AgentService, SimulatedMachine*>);
static_assert(!std::is_constructible_v<AgentService, SimulatedMachine*, std::function<void()>>);
static_assert(!std::is_constructible_v<AgentService, SimulatedMachine*, std::nullptr_t>);
static_assert(!std::is_default_constructible_v<PeerPolicy>);
static_assert(!std::is_constructible_v<PeerPolicy, std::shared_ptr<grpc::ChannelCredentials>>);

TEST(PeerPolicyTest, OnlyTheNamedInsecurePolicyAdmitsEveryone) {
  PeerPolicy everyone = PeerPolicy::PlaintextAdmittingEveryone();
  EXPECT_FALSE(everyone.secure());
  EXPECT_EQ(everyone.credentials(), nullptr);

  std::shared_ptr<grpc::ChannelCredentials> tls =
      grpc::SslCredentials(grpc::SslCredentialsOptions());
  PeerPolicy server_only = PeerPolicy::ServerCallsFromTheServerOnly(tls);
  EXPECT_TRUE(server_only.secure());
  EXPECT_EQ(server_only.credentials(), tls);
}

}  // namespace
}  // namespace vipu::agents
