// AgentDriver's fan-out: one call per connected machine of a plan, at once,
// and one result per machine in the plan's order, reported exactly once.
#include "server/fleet/agent_driver.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using ::testing::ElementsAre;

MachinePlan Machine(const std::string& agent_id, bool connected, uint32_t port) {
  MachinePlan m;
  m.address = {agent_id, connected ? "127.0.0.1" : "", connected ? port : 0};
  m.connected = connected;
  m.config.partition = {"p1", 7};
  m.config.ipus = {0, 1};
  m.config.link_ports = {port % 100};
  return m;
}

std::shared_ptr<const PartitionPlan> PlanOf(std::vector<MachinePlan> machines) {
  auto plan = std::make_shared<PartitionPlan>();
  plan->machines = std::move(machines);
  return plan;
}

std::vector<std::string> Agents(const std::vector<FakeAgentClient::Call>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls) out.push_back(c.agent.agent_id);
  return out;
}

TEST(AgentDriverTest, ConfigureTellsEachConnectedMachineItsOwnPartOfThePlan) {
  FakeAgentClient agents;
  AgentDriver driver(&agents);
  auto plan = PlanOf({Machine("a", true, 7001), Machine("b", true, 7002)});
  AgentDriver::Results results = driver.Apply(AgentDriver::Op::kConfigure, plan);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].agent_id, "a");
  EXPECT_EQ(results[1].agent_id, "b");
  EXPECT_TRUE(results[0].status.ok());
  EXPECT_TRUE(results[1].status.ok());
  std::vector<FakeAgentClient::Call> calls = agents.calls(Op::kConfigure);
  ASSERT_EQ(calls.size(), 2u);
  for (const FakeAgentClient::Call& c : calls) {
    const MachinePlan& m = c.agent.agent_id == "a" ? plan->machines[0] : plan->machines[1];
    EXPECT_EQ(c.agent.port, m.address.port);
    EXPECT_EQ(c.config.link_ports, m.config.link_ports);
    EXPECT_EQ(c.partition.partition_id, "p1");
    EXPECT_EQ(c.partition.generation, 7u);
  }
}

TEST(AgentDriverTest, AMachineNotConnectedIsNotCalledAndAnswersNotConnected) {
  FakeAgentClient agents;
  AgentDriver driver(&agents);
  AgentDriver::Results results = driver.Apply(
      AgentDriver::Op::kRelease, PlanOf({Machine("a", false, 0), Machine("b", true, 7002)}));
  EXPECT_THAT(Agents(agents.calls(Op::kRelease)), ElementsAre("b"));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, NotConnectedError("a"));
  EXPECT_TRUE(results[1].status.ok());
}

TEST(AgentDriverTest, ResetAndReleaseNameThePartitionAndGenerationOfThePlan) {
  FakeAgentClient agents;
  AgentDriver driver(&agents);
  auto plan = PlanOf({Machine("a", true, 7001)});
  driver.Apply(AgentDriver::Op::kReset, plan);
  driver.Apply(AgentDriver::Op::kRelease, plan);
  for (Op op : {Op::kReset, Op::kRelease}) {
    std::vector<FakeAgentClient::Call> calls = agents.calls(op);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].partition.partition_id, "p1");
    EXPECT_EQ(calls[0].partition.generation, 7u);
  }
  EXPECT_TRUE(agents.calls(Op::kConfigure).empty());
}

TEST(AgentDriverTest, EachMachinesOwnAnswerIsItsResultWhateverTheOrder) {
  FakeAgentClient agents;
  agents.Hang("", Op::kConfigure);
  AgentDriver driver(&agents);
  std::atomic<int> reports{0};
  std::optional<AgentDriver::Results> got;
  driver.ApplyAsync(
      AgentDriver::Op::kConfigure,
      PlanOf({Machine("a", true, 7001), Machine("b", true, 7002), Machine("c", true, 7003)}),
      [&](AgentDriver::Results r) {
        got = std::move(r);
        reports.fetch_add(1);
      });
  ASSERT_TRUE(agents.AwaitHeld(3));
  // Answered last first: the report waits for the last of them.
  ASSERT_TRUE(agents.CompleteHeld("c", Op::kConfigure, absl::UnavailableError("c down")));
  ASSERT_TRUE(agents.CompleteHeld("b", Op::kConfigure));
  EXPECT_EQ(reports.load(), 0);
  ASSERT_TRUE(agents.CompleteHeld("a", Op::kConfigure, absl::NotFoundError("a lost it")));
  ASSERT_EQ(reports.load(), 1);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ((*got)[0].status, absl::NotFoundError("a lost it"));
  EXPECT_TRUE((*got)[1].status.ok());
  EXPECT_EQ((*got)[2].status, absl::UnavailableError("c down"));
}

TEST(AgentDriverTest, WithNothingToCallTheReportComesOnTheCallingThread) {
  FakeAgentClient agents;
  AgentDriver driver(&agents);
  for (auto plan : {PlanOf({}), PlanOf({Machine("a", false, 0)})}) {
    std::optional<std::thread::id> reported_on;
    size_t results = 99;
    driver.ApplyAsync(AgentDriver::Op::kConfigure, plan, [&](AgentDriver::Results r) {
      reported_on = std::this_thread::get_id();
      results = r.size();
    });
    ASSERT_TRUE(reported_on.has_value());
    EXPECT_EQ(*reported_on, std::this_thread::get_id());
    EXPECT_EQ(results, plan->machines.size());
  }
  EXPECT_TRUE(agents.calls().empty());
}

}  // namespace
}  // namespace vipu::server
