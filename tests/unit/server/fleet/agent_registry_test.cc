// AgentRegistry's registrations (epochs), the cheap views the health monitor
// and the topology pusher use at 16,384 agents, and epoch-fenced marks.
#include "server/fleet/agent_registry.h"

#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/fleet_test_util.h"

namespace vipu::server {
namespace {

using test::MakeLiveAgent;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<size_t> Indexes(const std::vector<TopologyDueAgent>& due) {
  std::vector<size_t> out;
  for (const TopologyDueAgent& d : due) out.push_back(d.index);
  return out;
}

TEST(AgentRegistryTest, EveryRegistrationGetsANewEpochAndForgetsWhatTheAgentWasTold) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time now = absl::Now();
  registry.Register(MakeLiveAgent("a"), now);
  registry.RegisterMany({MakeLiveAgent("b"), MakeLiveAgent("c")}, now);
  const uint64_t a = registry.Get("a")->epoch, b = registry.Get("b")->epoch;
  const uint64_t c = registry.Get("c")->epoch;
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, a);
  EXPECT_GT(c, b);
  registry.MarkTopologySent("a", a, 42);
  EXPECT_EQ(registry.Get("a")->topology_sent, 42u);
  LiveAgent again = MakeLiveAgent("a");
  again.topology_sent = 42;  // whatever the caller passes, a registration starts afresh
  registry.Register(again, now);
  EXPECT_GT(registry.Get("a")->epoch, c);
  EXPECT_EQ(registry.Get("a")->topology_sent, 0u);
}

TEST(AgentRegistryTest, AMarkForAnOlderRegistrationOrAnUnknownAgentIsIgnored) {
  AgentRegistry registry(absl::Seconds(1));
  registry.Register(MakeLiveAgent("a"), absl::Now());
  const uint64_t first = registry.Get("a")->epoch;
  registry.Register(MakeLiveAgent("a"), absl::Now());
  registry.MarkTopologySent("a", first, 7);
  EXPECT_EQ(registry.Get("a")->topology_sent, 0u);
  registry.MarkTopologySent("a", registry.Get("a")->epoch, 7);
  EXPECT_EQ(registry.Get("a")->topology_sent, 7u);
  registry.MarkTopologySent("nobody", 1, 7);
  EXPECT_FALSE(registry.Contains("nobody"));
}

TEST(AgentRegistryTest, TopologyIsDueForUpAgentsNotToldThisFingerprint) {
  AgentRegistry registry(absl::Seconds(1));  // Up: a heartbeat within 3 s
  const absl::Time now = absl::Now();
  registry.Register(MakeLiveAgent("told", 1), now);
  registry.Register(MakeLiveAgent("stale", 2), now);
  registry.Register(MakeLiveAgent("fresh", 3), now);
  registry.Register(MakeLiveAgent("down", 4), now - absl::Seconds(10));
  registry.MarkTopologySent("told", registry.Get("told")->epoch, 5);
  registry.MarkTopologySent("stale", registry.Get("stale")->epoch, 4);
  registry.MarkTopologySent("down", registry.Get("down")->epoch, 9);
  const std::vector<std::string> ids = {"told", "stale", "fresh", "down", "unknown"};
  std::vector<TopologyDueAgent> due = registry.TopologyDue(ids, {5, 5, 5, 5, 5}, now);
  EXPECT_THAT(Indexes(due), ElementsAre(1u, 2u));
  EXPECT_EQ(due[0].endpoint.port, 2u);
  EXPECT_EQ(due[0].endpoint.host, "127.0.0.1");
  EXPECT_EQ(due[0].endpoint.epoch, registry.Get("stale")->epoch);
  // Fewer fingerprints than ids: only those with one are looked at.
  EXPECT_THAT(Indexes(registry.TopologyDue(ids, {1, 1}, now)), ElementsAre(0u, 1u));
  EXPECT_THAT(registry.TopologyDue({}, {}, now), IsEmpty());
}

TEST(AgentRegistryTest, EndpointOfAndPulsesCopyNoReports) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time t0 = absl::Now();
  LiveAgent b = MakeLiveAgent("b", 9);
  b.details = {{"Platform", "x"}};
  registry.Register(b, t0);
  registry.Register(MakeLiveAgent("a", 8), t0);
  ASSERT_TRUE(registry.Heartbeat("a", t0 + absl::Seconds(1)));
  std::optional<AgentEndpoint> endpoint = registry.EndpointOf("b");
  ASSERT_TRUE(endpoint.has_value());
  EXPECT_EQ(endpoint->host, "127.0.0.1");
  EXPECT_EQ(endpoint->port, 9u);
  EXPECT_EQ(endpoint->epoch, registry.Get("b")->epoch);
  EXPECT_FALSE(registry.EndpointOf("c").has_value());
  std::vector<AgentPulse> pulses = registry.Pulses();
  ASSERT_EQ(pulses.size(), 2u);  // sorted by id
  EXPECT_EQ(pulses[0].id, "a");
  EXPECT_EQ(pulses[0].last_heartbeat, t0 + absl::Seconds(1));
  EXPECT_EQ(pulses[1].id, "b");
  EXPECT_EQ(pulses[1].last_heartbeat, t0);
}

AgentHealth Faulty(uint64_t sequence) {
  AgentHealth h;
  h.sequence = sequence;
  h.ipu_errors[2] = "injected fault";
  return h;
}

AgentHealth Healthy(uint64_t sequence) {
  AgentHealth h;
  h.sequence = sequence;
  return h;
}

TEST(AgentRegistryTest, AHeartbeatServedAfterANewerOneIsIgnored) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time t0 = absl::Now();
  registry.Register(MakeLiveAgent("ag3"), t0);
  ASSERT_TRUE(registry.Heartbeat("ag3", t0, Faulty(1)));
  ASSERT_TRUE(registry.Heartbeat("ag3", t0 + absl::Seconds(1), Healthy(3)));
  // Number 2 was abandoned by the agent and is served last: it still shows
  // the fault that number 3 reported cleared.
  EXPECT_TRUE(registry.Heartbeat("ag3", t0 + absl::Seconds(2), Faulty(2)));
  auto agent = registry.Get("ag3");
  ASSERT_TRUE(agent.has_value());
  EXPECT_TRUE(agent->health.healthy());
  EXPECT_EQ(agent->health.sequence, 3u);
  EXPECT_EQ(agent->last_heartbeat, t0 + absl::Seconds(1));

  // The batch path applies the same rule.
  std::vector<std::pair<std::string, AgentHealth>> beats;
  beats.emplace_back("ag3", Faulty(3));
  EXPECT_THAT(registry.HeartbeatMany(std::move(beats), t0 + absl::Seconds(3)), IsEmpty());
  EXPECT_TRUE(registry.Get("ag3")->health.healthy());
}

TEST(AgentRegistryTest, UnnumberedHeartbeatsAndANewRegistrationAlwaysApply) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time t0 = absl::Now();
  registry.Register(MakeLiveAgent("ag1"), t0);
  ASSERT_TRUE(registry.Heartbeat("ag1", t0, Healthy(5)));
  // A restarted agent registers again and numbers from 1.
  registry.Register(MakeLiveAgent("ag1"), t0 + absl::Seconds(1));
  ASSERT_TRUE(registry.Heartbeat("ag1", t0 + absl::Seconds(1), Faulty(1)));
  EXPECT_FALSE(registry.Get("ag1")->health.healthy());
  ASSERT_TRUE(registry.Heartbeat("ag1", t0 + absl::Seconds(2), Healthy(0)));
  EXPECT_TRUE(registry.Get("ag1")->health.healthy());
}

}  // namespace
}  // namespace vipu::server
