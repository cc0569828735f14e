// The server process: acknowledged writes survive SIGKILL, a restart brings
// partitions back to their agents, SIGTERM stops the simulated machines.
#include <signal.h>
#include <sys/wait.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

TEST(LifecycleTest, SigtermStopsServerAndItsAgents) {
  auto server = ServerProcess::Start("pod16");
  std::vector<pid_t> agents = server->Children();
  ASSERT_FALSE(agents.empty());
  int status = server->Stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(WaitFor(
      [&] {
        for (pid_t p : agents) {
          if (Alive(p)) return false;
        }
        return true;
      },
      absl::Seconds(10)));
}

TEST(LifecycleTest, AcknowledgedPartitionsSurviveKill9AndComeBackActive) {
  auto server = ServerProcess::Start("pod16");
  ASSERT_EQ(server->Vipu({"create", "partition", "keep", "--size", "8"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"create", "partition", "gone", "--size", "4"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"remove", "partition", "gone"}).exit_code, 0);
  server->Kill();
  server->Restart();
  CommandResult list = server->Vipu({"list", "partitions"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("keep"));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("gone")));
  // The restarted agents got the partition pushed back; a reset proves they hold it.
  CommandResult reset = server->Vipu({"reset", "partition", "keep"});
  EXPECT_EQ(reset.exit_code, 0) << reset.err;
  // Its IPUs are still taken: only 8 of 16 are free.
  CommandResult big = server->Vipu({"create", "partition", "big", "--size", "16"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_EQ(server->Vipu({"create", "partition", "fits", "--size", "8"}).exit_code, 0);
}

TEST(LifecycleTest, BadFlagsExitWithUsageError) {
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--simulate", "pod17", "--db", "/tmp/never.db"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("pod17"));
  r = RunCommand({VIPU_SERVER_BIN, "--heartbeat-ms", "0"});
  EXPECT_EQ(r.exit_code, 2);
  r = RunCommand({VIPU_SERVER_BIN, "--log-level", "loud"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace vipu::testing
