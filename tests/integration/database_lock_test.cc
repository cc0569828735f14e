// One writer per database: a second vipu-server (or --init) on a database
// another server holds is refused at once, naming the file and the holder,
// before it listens or starts an agent; a killed holder frees it. And a
// database made for one simulated pod is refused for another, naming both.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// How many lines of `text` are not empty.
size_t LineCount(const std::string& text) {
  return std::vector<std::string>(absl::StrSplit(text, '\n', absl::SkipEmpty())).size();
}

// Whether process `pid` has `path` open.
bool HasOpen(pid_t pid, const std::string& path) {
  std::error_code ec;
  for (const auto& fd :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), ec)) {
    std::error_code link_ec;
    if (std::filesystem::read_symlink(fd.path(), link_ec).string() == path) return true;
  }
  return false;
}

TEST(DatabaseLockTest, SecondServerOnTheSameDatabaseIsRefusedAtOnceNamingFileAndHolder) {
  auto first = ServerProcess::Start("pod4");
  const std::string db = first->db_path();
  const std::vector<pid_t> agents = first->Children();
  ASSERT_FALSE(agents.empty());
  EXPECT_EQ(ReadFile(db + ".lock"), absl::StrCat(first->pid(), "\n"));

  const int port = FreePort();
  CommandResult second =
      RunCommand({VIPU_SERVER_BIN, "--simulate", "pod4", "--listen",
                  absl::StrCat("127.0.0.1:", port), "--db", db, "--log-level", "info"});
  // Refused, not waiting for the lock: a waiting server would never exit
  // while the first holds it.
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_THAT(second.err,
              HasSubstr(absl::StrCat("vipu-server: database ", db,
                                     " is in use by another vipu-server (pid ", first->pid())));
  EXPECT_EQ(LineCount(second.err), 1u) << second.err;
  // Neither the database, nor a port, nor an agent was touched (the log is
  // on stdout at info).
  EXPECT_THAT(second.out, Not(HasSubstr("open (schema")));
  EXPECT_THAT(second.out, Not(HasSubstr("listening on")));
  EXPECT_THAT(second.out, Not(HasSubstr("started vipu-agent")));

  // The first server's agents are the same processes and it serves on.
  EXPECT_EQ(first->Children(), agents);
  CommandResult created = first->Vipu({"create", "partition", "p", "--size", "4"});
  EXPECT_EQ(created.exit_code, 0) << created.err;
  // The agents it started did not inherit the lock.
  for (pid_t agent : agents) EXPECT_FALSE(HasOpen(agent, db + ".lock")) << "agent pid " << agent;
}

TEST(DatabaseLockTest, InitIsRefusedWhileAServerHoldsTheDatabase) {
  auto server = ServerProcess::Start("pod4");
  CommandResult init = RunCommand({VIPU_SERVER_BIN, "--init", "--db", server->db_path()});
  EXPECT_EQ(init.exit_code, 1) << init.out << init.err;
  EXPECT_THAT(init.err,
              HasSubstr(absl::StrCat("is in use by another vipu-server (pid ", server->pid())));
  EXPECT_THAT(init.out, Not(HasSubstr("Initialised storage")));
}

TEST(DatabaseLockTest, KilledHolderFreesTheDatabaseForTheNextServer) {
  auto server = ServerProcess::Start("pod4");
  ASSERT_EQ(server->Vipu({"create", "partition", "kept", "--size", "4"}).exit_code, 0);
  server->Kill();     // kill -9: the kernel drops the lock with the process
  server->Restart();  // throws when the server does not become ready
  EXPECT_EQ(ReadFile(server->db_path() + ".lock"), absl::StrCat(server->pid(), "\n"));
  CommandResult list = server->Vipu({"list", "partitions"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("kept"));
  // A clean stop leaves no holder's pid behind.
  server->Stop();
  EXPECT_EQ(ReadFile(server->db_path() + ".lock"), "");
}

TEST(SimulateDatabaseTest, DatabaseOfAnotherPodIsRefusedNamingBothPodsBeforeAnyAgentStarts) {
  auto server = ServerProcess::Start("pod4");
  const std::string db = server->db_path();
  server->Stop();
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--simulate", "pod16", "--listen", "127.0.0.1:0",
                                "--db", db, "--log-level", "info"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat("simulate pod16: database ", db,
                                            " holds another pod, pod 'pod4' of 1 machine, not "
                                            "pod16 of 4 machines")));
  EXPECT_THAT(r.err, HasSubstr("another --db"));
  EXPECT_THAT(r.err, HasSubstr("--simulate pod4"));
  EXPECT_THAT(r.err, Not(HasSubstr("already in cluster")));
  EXPECT_EQ(LineCount(r.err), 1u) << r.err;
  EXPECT_THAT(r.out, Not(HasSubstr("started vipu-agent")));
  EXPECT_THAT(r.out, Not(HasSubstr("listening on")));
  // The database is as it was: the pod it holds still starts from it.
  server->Restart();
  CommandResult clusters = server->VipuAdmin({"list", "clusters"});
  ASSERT_EQ(clusters.exit_code, 0) << clusters.err;
  EXPECT_THAT(clusters.out, HasSubstr("pod4"));
  EXPECT_THAT(clusters.out, Not(HasSubstr("pod16")));
}

}  // namespace
}  // namespace vipu::testing
