// vipu-agent's flags for many machines on one port: --machines,
// --id-prefix, --first-index and --shared-port, and every invalid value.
#include <sstream>
#include <string>
#include <vector>

#include "agents/agent_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ParsedCommandLine Parse(std::vector<std::string> args, std::string* err) {
  args.insert(args.begin(), {"vipu-agent", "--server", "127.0.0.1:8090"});
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, errs;
  ParsedCommandLine parsed =
      ParseAgentCommandLine(static_cast<int>(argv.size()), argv.data(), out, errs);
  *err = errs.str();
  return parsed;
}

void ExpectRefused(const std::vector<std::string>& args, const std::string& message) {
  std::string err;
  ParsedCommandLine parsed = Parse(args, &err);
  EXPECT_FALSE(parsed.options.has_value());
  EXPECT_EQ(parsed.exit_code, 2);
  EXPECT_THAT(err, HasSubstr(message));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

TEST(SharedPortOptionsTest, MachinesGenerateIdsOnOneSharedPort) {
  std::string err;
  ParsedCommandLine parsed =
      Parse({"--machines", "3", "--id-prefix", "pod.m", "--first-index", "1022", "--ports", "7000"},
            &err);
  ASSERT_TRUE(parsed.options.has_value()) << err;
  EXPECT_THAT(parsed.options->agent_ids, ElementsAre("pod.m1022", "pod.m1023", "pod.m1024"));
  EXPECT_TRUE(parsed.options->shared_port);
  EXPECT_THAT(parsed.options->ports, ElementsAre(7000u));
}

TEST(SharedPortOptionsTest, FirstIndexDefaultsToZeroAndPortToAnyFreeOne) {
  std::string err;
  ParsedCommandLine parsed = Parse({"--machines", "2", "--id-prefix", "m"}, &err);
  ASSERT_TRUE(parsed.options.has_value()) << err;
  EXPECT_THAT(parsed.options->agent_ids, ElementsAre("m0", "m1"));
  EXPECT_THAT(parsed.options->ports, ElementsAre(0u));
}

TEST(SharedPortOptionsTest, SharedPortWithExplicitIds) {
  std::string err;
  ParsedCommandLine parsed = Parse({"--agent-ids", "a,b,c", "--shared-port"}, &err);
  ASSERT_TRUE(parsed.options.has_value()) << err;
  EXPECT_TRUE(parsed.options->shared_port);
  EXPECT_THAT(parsed.options->ports, ElementsAre(0u));
}

TEST(SharedPortOptionsTest, DefaultIsOnePortPerMachine) {
  std::string err;
  ParsedCommandLine parsed = Parse({"--agent-ids", "a,b"}, &err);
  ASSERT_TRUE(parsed.options.has_value()) << err;
  EXPECT_FALSE(parsed.options->shared_port);
  EXPECT_THAT(parsed.options->ports, ElementsAre(0u, 0u));
}

TEST(SharedPortOptionsTest, RefusesEveryInvalidValue) {
  ExpectRefused({}, "agent-ids: give --agent-ids or --machines");
  ExpectRefused({"--machines", "0", "--id-prefix", "m"}, "machines: must be 1..16384, got 0");
  ExpectRefused({"--machines", "16385", "--id-prefix", "m"},
                "machines: must be 1..16384, got 16385");
  ExpectRefused({"--machines", "-1", "--id-prefix", "m"}, "--machines");
  ExpectRefused({"--machines", "x", "--id-prefix", "m"}, "--machines");
  ExpectRefused({"--machines", "4"}, "id-prefix: must not be empty with --machines");
  ExpectRefused({"--machines", "4", "--id-prefix", ""}, "id-prefix: must not be empty");
  ExpectRefused({"--machines", "4", "--id-prefix", "-m"},
                "id-prefix: must start with a letter or digit");
  ExpectRefused({"--machines", "4", "--id-prefix", "m/"}, "id-prefix: may contain only");
  // 63 characters plus "10" is 65: too long for the last id only.
  ExpectRefused({"--machines", "11", "--id-prefix", std::string(63, 'm')},
                "id-prefix: must be 1..64 characters");
  ExpectRefused({"--machines", "2", "--id-prefix", "m", "--first-index", "4294967295"},
                "first-index: 4294967295 + 2 machines overflows 32 bits");
  ExpectRefused({"--machines", "2", "--id-prefix", "m", "--first-index", "-3"}, "--first-index");
  ExpectRefused({"--machines", "2", "--id-prefix", "m", "--agent-ids", "a"}, "excludes");
  ExpectRefused({"--agent-ids", "a", "--id-prefix", "m"}, "requires");
  ExpectRefused({"--agent-ids", "a", "--first-index", "3"}, "requires");
  ExpectRefused({"--machines", "2", "--id-prefix", "m", "--ports", "7000,7001"},
                "ports: must give one port per agent id (1), got 2");
  ExpectRefused({"--agent-ids", "a,b", "--shared-port", "--ports", "70000"},
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
