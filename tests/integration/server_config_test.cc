// vipu-server --config FILE (and /etc/vipu/vipu-server.hcl): the keys are the
// flags without `--`, flags win, mistakes stop the server naming file:line.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The repository root (set by tests/CMakeLists.txt).
std::string SourceRoot() { return VIPU_SOURCE_DIR; }

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ServerConfigTest, FileSetsOptionsAndFlagsWin) {
  const std::string dir = MakeTempDir();
  const int file_port = FreePort();
  const int flag_port = FreePort();
  Write(dir + "/server.hcl",
        absl::StrCat("# test\nlisten = \"127.0.0.1:", file_port, "\"\ndb = \"", dir,
                     "/from-file.db\"\nready-file = \"", dir, "/ready\"\nlog-level = warn\n"));
  // Only the file: its listen address and database are used.
  {
    Daemon server({VIPU_SERVER_BIN, "--config", dir + "/server.hcl"}, dir + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/ready"); }, absl::Seconds(30)))
        << ReadFile(dir + "/server.log");
    EXPECT_THAT(ReadFile(dir + "/ready"), HasSubstr(absl::StrCat(":", file_port)));
    EXPECT_TRUE(std::filesystem::exists(dir + "/from-file.db"));
    EXPECT_EQ(HealthCheck(absl::StrCat("127.0.0.1:", file_port)), 1);
  }
  std::filesystem::remove(dir + "/ready");
  // A flag overrides the file's value.
  {
    Daemon server({VIPU_SERVER_BIN, "--config", dir + "/server.hcl", "--listen",
                   absl::StrCat("127.0.0.1:", flag_port)},
                  dir + "/server2.log");
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/ready"); }, absl::Seconds(30)))
        << ReadFile(dir + "/server2.log");
    EXPECT_THAT(ReadFile(dir + "/ready"), HasSubstr(absl::StrCat(":", flag_port)));
  }
  RemoveTree(dir);
}

struct BadConfig {
  std::string text;
  std::string message;
};

// Readable test names in ctest.
void PrintTo(const BadConfig& p, std::ostream* os) { *os << "'" << p.text << "'"; }

class ServerConfigBadTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ServerConfigBadTest, RefusedWithExitCode2NamingFileAndLine) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/bad.hcl";
  Write(path, "db = \"" + dir + "/x.db\"\n" + GetParam().text + "\n");
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--config", path});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr(path + ":2: "));
  EXPECT_THAT(r.err, HasSubstr(GetParam().message));
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.db"));
  RemoveTree(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Values, ServerConfigBadTest,
    ::testing::Values(
        BadConfig{"lisen = \"127.0.0.1:1\"", "unknown key 'lisen'"},
        BadConfig{"heartbeat-ms = 0", "heartbeat-ms: "},
        BadConfig{"heartbeat-ms = many", "heartbeat-ms: "},
        BadConfig{"workers = 1000", "workers: "}, BadConfig{"log-level = loud", "log-level: "},
        BadConfig{"auto-add-agents = perhaps", "auto-add-agents: "},
        BadConfig{"metrics-listen = \"nowhere\"", "metrics-listen: "},
        BadConfig{"reconcile-window-ms = -1", "reconcile-window-ms: "},
        BadConfig{"simulate-machines-per-process = 0", "simulate-machines-per-process: "},
        BadConfig{"simulate-machines-per-process = 17", "simulate-machines-per-process: "},
        BadConfig{"listen", "expected `key = value`"},
        BadConfig{"config = \"/etc/other.hcl\"", "unknown key 'config'"}));

TEST(ServerConfigTest, MissingConfigFileGivenWithTheFlagIsAnError) {
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--config", "/nonexistent/vipu-server.hcl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/vipu-server.hcl"));
}

TEST(ServerConfigTest, ShippedExampleIsAccepted) {
  const std::string dir = MakeTempDir();
  const int port = FreePort();
  // Flags move the example's database and ports into the test directory.
  Daemon server({VIPU_SERVER_BIN, "--config", SourceRoot() + "/systemd/vipu-server.hcl", "--listen",
                 absl::StrCat("127.0.0.1:", port), "--db", dir + "/vipu.db", "--metrics-listen",
                 "127.0.0.1:0", "--ready-file", dir + "/ready"},
                dir + "/server.log");
  EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/ready") || !server.running(); },
                      absl::Seconds(30)));
  EXPECT_TRUE(server.running()) << ReadFile(dir + "/server.log");
  RemoveTree(dir);
}

// A port in use is an error at start: two servers never share one port (the
// kernel would split the clients between them, and each would see the other's
// requests fail).
TEST(ServerConfigTest, SecondServerOnAPortInUseFailsToStart) {
  const std::string dir = MakeTempDir();
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Daemon first({VIPU_SERVER_BIN, "--listen", address, "--db", dir + "/a.db", "--metrics-listen",
                "off", "--ready-file", dir + "/ready"},
               dir + "/first.log");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(dir + "/ready") || !first.running(); },
                      absl::Seconds(30)));
  ASSERT_TRUE(first.running()) << ReadFile(dir + "/first.log");
  CommandResult second = RunCommand(
      {VIPU_SERVER_BIN, "--listen", address, "--db", dir + "/b.db", "--metrics-listen", "off"});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_THAT(second.err, HasSubstr("cannot listen on " + address));
  EXPECT_TRUE(first.running());
  RemoveTree(dir);
}

// gRPC's own report of the failed bind (a multi-line chttp2_server dump)
// does not reach the terminal: stderr holds the server's one line. The dump
// stays in the server's log at debug level.
TEST(ServerConfigTest, PortInUseIsOneLineOnStderrWithoutGrpcsOwnLog) {
  const std::string dir = MakeTempDir();
  const int port = FreePort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  // Taken by a plain listener (no SO_REUSEPORT, so gRPC's bind fails).
  const int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(holder, 1), 0);
  for (const std::string level : {"info", "debug"}) {
    SCOPED_TRACE(level);
    CommandResult r =
        RunCommand({VIPU_SERVER_BIN, "--listen", address, "--db", dir + "/" + level + ".db",
                    "--metrics-listen", "off", "--log-level", level});
    EXPECT_EQ(r.exit_code, 1) << r.out;
    // The one line names the process that holds the address: this test.
    EXPECT_THAT(r.err, StartsWith(absl::StrCat("vipu-server: cannot listen on ", address,
                                               ": the address is in use by pid ", getpid(), " (")));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("chttp2_server")));
    // The log (stdout) has gRPC's lines only when asked for debug.
    if (level == "debug") {
      EXPECT_THAT(r.out, HasSubstr("chttp2_server"));
    } else {
      EXPECT_THAT(r.out, Not(HasSubstr("chttp2_server")));
    }
  }
  close(holder);
  RemoveTree(dir);
}

// The shipped file exactly as the package installs it, with no flag at all:
// its addresses (127.0.0.1:8090 and :2113) and its database under
// /var/lib/vipu. The server runs in its own network and mount namespaces, so
// that those fixed places are its own and nothing on this machine is touched
// or in the way; `vipu` with its defaults reaches it there.
TEST(ServerConfigTest, ShippedFileStartsAsIsAndServesLocalhost) {
  // Root makes the namespaces directly (also in a chroot, where a user
  // namespace is not allowed); anybody else through a user namespace.
  std::vector<std::string> unshare = {"/usr/bin/unshare", "--net", "--mount", "--propagation",
                                      "private"};
  if (geteuid() != 0) unshare.insert(unshare.begin() + 1, {"--user", "--map-root-user"});
  std::vector<std::string> probe = unshare;
  probe.push_back("true");
  if (!std::filesystem::exists(unshare[0]) || !std::filesystem::exists("/usr/sbin/ip") ||
      RunCommand(probe).exit_code != 0) {
    VIPU_CANNOT_RUN_HERE() << "unshare or ip missing, or namespaces not allowed here";
  }
  const std::string script =
      absl::StrCat(R"sh(
set -e
ip link set lo up
mount -t tmpfs tmpfs /var/lib
mkdir /var/lib/vipu
")sh",
                   VIPU_SERVER_BIN, R"sh(" --config "$0" >"$1" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
deadline=$(( $(date +%s) + 60 ))
until ")sh",
                   VIPU_CLI_BIN, R"sh(" --server-version >"$1.version" 2>&1; do
  kill -0 $server 2>/dev/null || { echo "vipu-server exited"; exit 1; }
  [ "$(date +%s)" -lt $deadline ] || { echo "vipu-server not ready in 60 s"; exit 1; }
  sleep 0.1
done
cat "$1.version"
")sh",
                   VIPU_CLI_BIN, R"sh(" list partitions
ls /var/lib/vipu
kill $server
wait $server || true
trap - EXIT
)sh");
  const std::string dir = MakeTempDir();
  std::vector<std::string> argv = unshare;
  argv.insert(argv.end(), {"/bin/sh", "-c", script, SourceRoot() + "/systemd/vipu-server.hcl",
                           dir + "/server.log"});
  CommandResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err << ReadFile(dir + "/server.log");
  EXPECT_THAT(r.out, HasSubstr("version: " VIPU_VERSION "\nhost: localhost:8090\n"));
  EXPECT_THAT(r.out, HasSubstr(" Partition"));  // the table header of an empty list
  EXPECT_THAT(r.out, HasSubstr("vipu.db"));     // the database where the file says
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
