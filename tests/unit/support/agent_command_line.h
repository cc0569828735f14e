// vipu-agent's command line parsed in-process, as the agent's tests drive it:
// what ParseAgentCommandLine decides and what it prints on each stream.
#ifndef VIPU_TESTS_UNIT_SUPPORT_AGENT_COMMAND_LINE_H_
#define VIPU_TESTS_UNIT_SUPPORT_AGENT_COMMAND_LINE_H_

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "agents/agent_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::test {

struct AgentCommandLineRun {
  agents::ParsedCommandLine parsed;
  std::string out;
  std::string err;
};

// `args` after the program name "vipu-agent".
inline AgentCommandLineRun RunAgentCommandLine(std::vector<std::string> args) {
  args.insert(args.begin(), "vipu-agent");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  AgentCommandLineRun run;
  run.parsed = agents::ParseAgentCommandLine(static_cast<int>(argv.size()), argv.data(), out, err);
  run.out = out.str();
  run.err = err.str();
  return run;
}

// Expects `args` refused as a usage error: exit code 2, exactly one line on
// stderr, containing `message`, and nothing on stdout.
inline void ExpectAgentRefuses(const std::vector<std::string>& args, const std::string& message) {
  AgentCommandLineRun run = RunAgentCommandLine(args);
  EXPECT_FALSE(run.parsed.options.has_value());
  EXPECT_EQ(run.parsed.exit_code, 2);
  EXPECT_THAT(run.err, ::testing::HasSubstr(message));
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_TRUE(run.out.empty());
}

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_AGENT_COMMAND_LINE_H_
