// How a machine's failure reads in a partition's errors: the agent named
// once, and no raw status numbers.
#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_driver.h"

namespace vipu::server {
namespace {

TEST(DescribeAgentErrorTest, AnAgentThatNamesItselfIsNotNamedTwice) {
  EXPECT_EQ(DescribeAgentError(
                "ag3", absl::FailedPreconditionError("agent ag3: IPU 1 error (injected fault)")),
            "agent ag3: IPU 1 error (injected fault)");
}

TEST(DescribeAgentErrorTest, OtherMessagesGetTheAgentAndNoCodeNumber) {
  EXPECT_EQ(DescribeAgentError("ag3", absl::UnavailableError("machine on fire")),
            "agent ag3: machine on fire");
  // Another agent's name in the message is not this agent's prefix.
  EXPECT_EQ(DescribeAgentError("ag3", absl::UnavailableError("agent ag30: gone")),
            "agent ag3: agent ag30: gone");
}

TEST(DescribeAgentErrorTest, AnEmptyMessageNamesTheCodeInWords) {
  EXPECT_EQ(DescribeAgentError("ag3", absl::Status(absl::StatusCode::kDeadlineExceeded, "")),
            "agent ag3: call failed (deadline exceeded)");
}

}  // namespace
}  // namespace vipu::server
