// vipu-agent's flags for many machines on one port: --machines,
// --id-prefix, --first-index and --shared-port, and every invalid value.
#include <string>
#include <vector>

#include "agents/agent_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/agent_command_line.h"

namespace vipu::agents {
namespace {

using test::AgentCommandLineRun;
using test::ExpectAgentRefuses;
using test::RunAgentCommandLine;
using ::testing::ElementsAre;

// `flags` after the server every case names.
std::vector<std::string> WithServer(std::vector<std::string> flags) {
  flags.insert(flags.begin(), {"--server", "127.0.0.1:8090"});
  return flags;
}

TEST(SharedPortOptionsTest, MachinesGenerateIdsOnOneSharedPort) {
  AgentCommandLineRun run = RunAgentCommandLine(WithServer(
      {"--machines", "3", "--id-prefix", "pod.m", "--first-index", "1022", "--ports", "7000"}));
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_THAT(run.parsed.options->agent_ids, ElementsAre("pod.m1022", "pod.m1023", "pod.m1024"));
  EXPECT_TRUE(run.parsed.options->shared_port);
  EXPECT_THAT(run.parsed.options->ports, ElementsAre(7000u));
}

TEST(SharedPortOptionsTest, FirstIndexDefaultsToZeroAndPortToAnyFreeOne) {
  AgentCommandLineRun run =
      RunAgentCommandLine(WithServer({"--machines", "2", "--id-prefix", "m"}));
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_THAT(run.parsed.options->agent_ids, ElementsAre("m0", "m1"));
  EXPECT_THAT(run.parsed.options->ports, ElementsAre(0u));
}

TEST(SharedPortOptionsTest, SharedPortWithExplicitIds) {
  AgentCommandLineRun run =
      RunAgentCommandLine(WithServer({"--agent-ids", "a,b,c", "--shared-port"}));
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_TRUE(run.parsed.options->shared_port);
  EXPECT_THAT(run.parsed.options->ports, ElementsAre(0u));
}

TEST(SharedPortOptionsTest, DefaultIsOnePortPerMachine) {
  AgentCommandLineRun run = RunAgentCommandLine(WithServer({"--agent-ids", "a,b"}));
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_FALSE(run.parsed.options->shared_port);
  EXPECT_THAT(run.parsed.options->ports, ElementsAre(0u, 0u));
}

TEST(SharedPortOptionsTest, RefusesEveryInvalidValue) {
  ExpectAgentRefuses(WithServer({}), "agent-ids: give --agent-ids or --machines");
  ExpectAgentRefuses(WithServer({"--machines", "0", "--id-prefix", "m"}),
                     "machines: must be 1..16384, got 0");
  ExpectAgentRefuses(WithServer({"--machines", "16385", "--id-prefix", "m"}),
                     "machines: must be 1..16384, got 16385");
  ExpectAgentRefuses(WithServer({"--machines", "-1", "--id-prefix", "m"}), "--machines");
  ExpectAgentRefuses(WithServer({"--machines", "x", "--id-prefix", "m"}), "--machines");
  ExpectAgentRefuses(WithServer({"--machines", "4"}),
                     "id-prefix: must not be empty with --machines");
  ExpectAgentRefuses(WithServer({"--machines", "4", "--id-prefix", ""}),
                     "id-prefix: must not be empty");
  ExpectAgentRefuses(WithServer({"--machines", "4", "--id-prefix", "-m"}),
                     "id-prefix: must start with a letter or digit");
  ExpectAgentRefuses(WithServer({"--machines", "4", "--id-prefix", "m/"}),
                     "id-prefix: may contain only");
  // 63 characters plus "10" is 65: too long for the last id only.
  ExpectAgentRefuses(WithServer({"--machines", "11", "--id-prefix", std::string(63, 'm')}),
                     "id-prefix: must be 1..64 characters");
  ExpectAgentRefuses(
      WithServer({"--machines", "2", "--id-prefix", "m", "--first-index", "4294967295"}),
      "first-index: 4294967295 + 2 machines overflows 32 bits");
  ExpectAgentRefuses(WithServer({"--machines", "2", "--id-prefix", "m", "--first-index", "-3"}),
                     "--first-index");
  ExpectAgentRefuses(WithServer({"--machines", "2", "--id-prefix", "m", "--agent-ids", "a"}),
                     "excludes");
  ExpectAgentRefuses(WithServer({"--agent-ids", "a", "--id-prefix", "m"}), "requires");
  ExpectAgentRefuses(WithServer({"--agent-ids", "a", "--first-index", "3"}), "requires");
  ExpectAgentRefuses(WithServer({"--machines", "2", "--id-prefix", "m", "--ports", "7000,7001"}),
                     "ports: must give one port per agent id (1), got 2");
  ExpectAgentRefuses(WithServer({"--agent-ids", "a,b", "--shared-port", "--ports", "70000"}),
                     "ports: each must be a number 0..65535");
}

TEST(SharedPortOptionsTest, GenerateAgentIdsBounds) {
  auto ids = GenerateAgentIds("m", kMaxMachinesPerProcess, 0);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->size(), 16384u);
  EXPECT_EQ(ids->back(), "m16383");
  EXPECT_FALSE(GenerateAgentIds("m", 0, 0).ok());
  EXPECT_FALSE(GenerateAgentIds("-", 1, 0).ok());
}

}  // namespace
}  // namespace vipu::agents
