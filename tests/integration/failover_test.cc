// Every client given vipu-server members, the first one down, reaches the live one and names it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = ServerProcess::Start("pod16");
    dead_ = FreePort();  // claimed by this process, and nothing listens on it
  }
  std::string Live() const { return server_->address(); }
  std::string Dead() const { return absl::StrCat("127.0.0.1:", dead_); }
  // Dead member first, then the live one.
  std::string Members() const { return absl::StrCat(Dead(), ",", Live()); }

  CommandResult Run(const char* bin, std::vector<std::string> args,
                    std::map<std::string, std::string> env = {}) const {
    args.insert(args.begin(), bin);
    env.emplace("HOME", server_->home());
    return RunCommand(args, env);
  }

  std::unique_ptr<ServerProcess> server_;
  int dead_ = 0;
};

TEST_F(FailoverTest, VipuSkipsADeadMemberAndNamesTheOneThatAnswered) {
  CommandResult version =
      Run(VIPU_CLI_BIN, {"--config", "/dev/null", "--api-host", Members(), "--server-version"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_THAT(version.out, HasSubstr(absl::StrCat("\nhost: ", Live(), "\n")));

  // A mutating call is safe to send on: the dead member never saw it.
  CommandResult created = Run(VIPU_CLI_BIN, {"--config", "/dev/null", "--api-host", Members(),
                                             "create", "partition", "fo", "--size", "4"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_EQ(created.out, "create partition (fo): success.\n");
  CommandResult listed =
      Run(VIPU_CLI_BIN, {"--config", "/dev/null", "--api-host", Members(), "list", "partitions"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr(" fo "));
}

TEST_F(FailoverTest, EverySourceOfTheListWorksWithTheDefaultPort) {
  // VIPU_CLI_API_HOST with one member carrying its port and one taking --api-port.
  CommandResult version = Run(
      VIPU_CLI_BIN,
      {"--config", "/dev/null", "--api-port", std::to_string(server_->port()), "--server-version"},
      {{"VIPU_CLI_API_HOST", absl::StrCat(Dead(), ",127.0.0.1")}});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_THAT(version.out, HasSubstr(absl::StrCat("\nhost: ", Live(), "\n")));

  // api-host in vipu-cli.hcl, for vipu-admin.
  const std::string hcl = server_->dir() + "/members.hcl";
  {
    std::ofstream out(hcl);
    out << "api-host = \"" << Members() << "\"\n";
  }
  CommandResult agents = Run(VIPU_ADMIN_BIN, {"--config", hcl, "list", "agents"});
  ASSERT_EQ(agents.exit_code, 0) << agents.err;
  EXPECT_THAT(agents.out, HasSubstr("Agent ID"));
}

TEST_F(FailoverTest, NoMemberReachedNamesEveryMember) {
  const int other = FreePort();
  CommandResult r = Run(VIPU_CLI_BIN, {"--config", "/dev/null", "--api-host",
                                       absl::StrCat(Dead(), ",127.0.0.1:", other), "--api-timeout",
                                       "5", "list", "partitions"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, StartsWith(absl::StrCat(
                         "list partitions: failure: cannot reach vipu-server at ", Dead(), ": ")));
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("; 127.0.0.1:", other, ": ")));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(FailoverTest, BadListsAreUsageErrorsNamingTheEntry) {
  CommandResult r = Run(VIPU_CLI_BIN, {"--config", "/dev/null", "--api-host",
                                       absl::StrCat(Live(), ",,x"), "list", "partitions"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--api-host: entry 2 of '"));
  r = Run(VIPU_CLI_BIN, {"--config", "/dev/null", "list", "partitions"},
          {{"VIPU_CLI_API_HOST", "a,b:70000"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "vipu: VIPU_CLI_API_HOST: entry 'b:70000': port must be an integer in "
            "1..65535, got '70000'\n");
}

#ifdef GC_INFO_BIN
TEST_F(FailoverTest, GcInfoAttachesThroughTheLiveMember) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "g4", "--size", "4"}).exit_code, 0);
  CommandResult r =
      Run(GC_INFO_BIN, {"-l"},
          {{"IPUOF_VIPU_API_HOST", Members()}, {"IPUOF_VIPU_API_PARTITION_ID", "g4"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("has 4 IPUs, from V-IPU server ", Live(), "\n")));
  r = Run(GC_INFO_BIN, {"-l"},
          {{"IPUOF_VIPU_API_HOST", "a,[::1"}, {"IPUOF_VIPU_API_PARTITION_ID", "g4"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("IPUOF_VIPU_API_HOST: entry '[::1': unbalanced '['"));
}
#endif

#if defined(POPRUN_BIN) && defined(POPDIST_ENV_DUMP_BIN)
TEST_F(FailoverTest, PoprunCreatesThroughTheLiveMemberAndHandsTheListOn) {
  const std::string tmp = server_->dir() + "/tmp";
  std::filesystem::create_directories(tmp);
  CommandResult r = Run(POPRUN_BIN,
                        {"--allow-run-as-root", "1", "--vipu-server-host", Members(),
                         "--vipu-partition", "pr", "--num-replicas", "2", POPDIST_ENV_DUMP_BIN},
                        {{"TMPDIR", tmp}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Every instance gets the whole list, as given, and attaches through it.
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("IPUOF_VIPU_API_HOST=", Members())));

  r = Run(POPRUN_BIN, {"--vipu-server-host", "a,,b", "true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("POPRUN ERROR: --vipu-server-host: entry 2 of 'a,,b' is empty"));
  r = Run(POPRUN_BIN, {"true"}, {{"IPUOF_VIPU_API_HOST", "a b"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("POPRUN ERROR: IPUOF_VIPU_API_HOST: entry 'a b': must not contain spaces"));
}
#endif

// An agent given the members registers with the one that answers.
TEST(AgentFailoverTest, RegistersWithTheLiveMember) {
  const std::string dir = MakeTempDir();
  const int port = FreePort();
  const int dead = FreePort();
  const std::string live = absl::StrCat("127.0.0.1:", port);
  Daemon server({VIPU_SERVER_BIN, "--listen", live, "--db", dir + "/vipu.db", "--ready-file",
                 dir + "/ready", "--heartbeat-ms", "200"},
                dir + "/server.log");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/ready") || !server.running(); },
                      absl::Seconds(60)))
      << ReadFile(dir + "/server.log");
  // The server takes registrations from the agents it was told of.
  const int agent_port = FreePort();
  CommandResult created =
      RunCommand({VIPU_ADMIN_BIN, "--config", "/dev/null", "--api-host", live, "create", "agent",
                  "fm1", "--host", "127.0.0.1", "--port", std::to_string(agent_port)});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  Daemon agent({VIPU_AGENT_BIN, "--server", absl::StrCat("127.0.0.1:", dead, ",", live),
                "--agent-ids", "fm1", "--ports", std::to_string(agent_port), "--log-level", "info"},
               dir + "/agent.log");
  const std::vector<std::string> admin = {VIPU_ADMIN_BIN, "--config", "/dev/null", "--api-host",
                                          live,           "list",     "agents"};
  EXPECT_TRUE(WaitFor(
      [&] {
        CommandResult r = RunCommand(admin);
        return r.exit_code == 0 && absl::StrContains(r.out, "fm1") &&
               absl::StrContains(r.out, "Up");
      },
      absl::Seconds(30)))
      << RunCommand(admin).out << ReadFile(dir + "/agent.log");
  EXPECT_THAT(ReadFile(dir + "/agent.log"), HasSubstr(absl::StrCat("registered with ", live)));

  // A bad list is refused before anything starts, naming the entry.
  CommandResult bad = RunCommand(
      {VIPU_AGENT_BIN, "--server", absl::StrCat(live, ",127.0.0.1"), "--agent-ids", "fm2"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("server: entry '127.0.0.1': needs a port (HOST:PORT)"));
  agent.Kill();
  server.Kill();
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
