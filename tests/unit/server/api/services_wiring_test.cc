// The gRPC services fail closed: none can be built without the policy that
// admits its calls, and the policy without --secure says in its name that it
// admits everyone.
#include <memory>
#include <type_traits>

#include "gtest/gtest.h"
#include "server/api/admin_service.h"
#include "server/api/user_admin_service.h"
#include "server/api/user_service.h"
#include "server/security/access_control.h"

namespace vipu::server {
namespace {

// A service wired without a policy does not compile: there is no
// constructor without one, a null cannot stand in for it, and no setter
// can add one later.
static_assert(!std::is_constructible_v<UserService, PartitionController*, const AgentRegistry*>);
static_assert(!std::is_constructible_v<UserService, PartitionController*, const AgentRegistry*,
                                       Inventory*, const Readiness&, std::nullptr_t>);
static_assert(
    !std::is_constructible_v<AdminService, Inventory*, const AgentRegistry*, ClusterLinksCache*>);
static_assert(!std::is_constructible_v<AdminService, Inventory*, const AgentRegistry*,
                                       ClusterLinksCache*, const Readiness&, std::nullptr_t>);
static_assert(
    !std::is_constructible_v<AdminService, Inventory*, const AgentRegistry*, ClusterLinksCache*,
                             const Readiness&, std::nullptr_t, AdminService::Operations>);
static_assert(!std::is_constructible_v<AllocationService, Inventory*>);
static_assert(!std::is_constructible_v<AllocationService, Inventory*, std::nullptr_t>);
static_assert(!std::is_constructible_v<UserAdminService, UserDirectory*, std::nullptr_t>);
// The policy itself comes only from one of its two named factories.
static_assert(!std::is_constructible_v<AccessControl, bool, Authenticator*, RateLimiter*>);
static_assert(!std::is_default_constructible_v<AccessControl>);

TEST(ServicesWiringTest, TheInsecurePolicyAdmitsEveryoneAsTheCallerItNames) {
  std::unique_ptr<AccessControl> everyone = AccessControl::InsecureAdmittingEveryone(nullptr);
  EXPECT_FALSE(everyone->secure());
  CallInfo call;
  call.user_id = "alice";
  call.peer = "ipv4:127.0.0.1:5000";
  absl::StatusOr<Caller> caller =
      everyone->Admit(call, {"remove cluster", /*admin=*/true, /*mutating=*/true});
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_TRUE(caller->Unrestricted());
}

}  // namespace
}  // namespace vipu::server
