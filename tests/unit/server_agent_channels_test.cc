// AgentDriver's channels: one per agent address, shared by the machines a
// shared-port vipu-agent serves there, released when no agent uses it.
#include <memory>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/agent_driver.h"
#include "server/agent_registry.h"

namespace vipu::server {
namespace {

TEST(AgentChannelsTest, AgentsAtOneAddressShareOneStub) {
  AgentRegistry registry(absl::Seconds(1));
  AgentDriver driver(&registry, absl::Seconds(1));
  auto m0 = driver.StubAt("m0", "127.0.0.1", 7000);
  auto m1 = driver.StubAt("m1", "127.0.0.1", 7000);
  auto other = driver.StubAt("m2", "127.0.0.1", 7001);
  ASSERT_NE(m0, nullptr);
  EXPECT_EQ(m0, m1);
  EXPECT_NE(m0, other);
  EXPECT_EQ(driver.StubAt("m0", "127.0.0.1", 7000), m0);
}

TEST(AgentChannelsTest, StubLooksTheAgentUpInTheRegistry) {
  AgentRegistry registry(absl::Seconds(1));
  AgentDriver driver(&registry, absl::Seconds(1));
  EXPECT_EQ(driver.Stub("m0"), nullptr);
  LiveAgent a;
  a.id = "m0";
  a.host = "127.0.0.1";
  a.port = 7000;
  registry.Register(a, absl::Now());
  auto stub = driver.Stub("m0");
  ASSERT_NE(stub, nullptr);
  EXPECT_EQ(stub, driver.StubAt("m5", "127.0.0.1", 7000));
}

TEST(AgentChannelsTest, AnAddressNoAgentUsesAnyMoreLosesItsChannel) {
  AgentRegistry registry(absl::Seconds(1));
  AgentDriver driver(&registry, absl::Seconds(1));
  auto shared = driver.StubAt("m0", "127.0.0.1", 7000);
  driver.StubAt("m1", "127.0.0.1", 7000);
  // m0 moves: m1 still uses the old address, so its channel stays.
  auto moved = driver.StubAt("m0", "127.0.0.1", 7001);
  EXPECT_NE(moved, shared);
  EXPECT_EQ(driver.StubAt("m1", "127.0.0.1", 7000), shared);
  // m1 moves too: nobody is left at 7000, and a later agent there gets a
  // fresh channel (the old stub lives on only in this test's hands).
  EXPECT_EQ(driver.StubAt("m1", "127.0.0.1", 7001), moved);
  EXPECT_NE(driver.StubAt("m2", "127.0.0.1", 7000), shared);
}

}  // namespace
}  // namespace vipu::server
