// The command-line layer without a server: every invalid value is a one-line
// usage error (exit 2) found before any RPC. The server address points at a
// bound but not listening socket, so any RPC attempt would exit 1 instead.
#include "cli/common/command_line.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/cli_run.h"

namespace vipu::cli {
namespace {

using test::CliResult;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A loopback port nobody listens on: bound, never listen()ed.
class ClosedPort {
 public:
  ClosedPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~ClosedPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

class CommandLineTest : public ::testing::Test {
 protected:
  CommandLineTest() {
    env_.system_config_path = "/nonexistent/vipu-cli.hcl";
    env_.vars["HOME"] = ::testing::TempDir();
    env_.vars["VIPU_CLI_API_HOST"] = "127.0.0.1";
    env_.vars["VIPU_CLI_API_PORT"] = absl::StrCat(closed_.port());
    env_.vars["VIPU_CLI_API_TIMEOUT"] = "5";
  }

  CliResult Run(CliKind kind, const std::vector<std::string>& words) {
    return test::RunCliWords(kind, words, env_);
  }

  ClosedPort closed_;
  Environment env_;
};

int CountLines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

struct UsageCase {
  CliKind kind;
  std::vector<std::string> words;
  std::string expected;  // substring of the one stderr line
};

std::ostream& operator<<(std::ostream& os, const UsageCase& c) {
  return os << absl::StrJoin(c.words, " ");
}

class UsageErrorTest : public CommandLineTest, public ::testing::WithParamInterface<UsageCase> {};

TEST_P(UsageErrorTest, OneLineExitTwoBeforeAnyRpc) {
  CliResult r = Run(GetParam().kind, GetParam().words);
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith(GetParam().kind == CliKind::kVipu ? "vipu: " : "vipu-admin: "));
  EXPECT_THAT(r.err, HasSubstr(GetParam().expected));
}

const auto kV = CliKind::kVipu;
const auto kA = CliKind::kVipuAdmin;
using W = std::vector<std::string>;

INSTANTIATE_TEST_SUITE_P(
    Partition, UsageErrorTest,
    ::testing::Values(
        UsageCase{kV, W{"create", "partition", "p1", "--size", "0"},
                  "--size: must be an integer in 1..65536, got 0"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "abc"},
                  "--size: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "-4"}, "--size: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4.5"},
                  "--size: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", ""},
                  "--size: must be an integer in 1..65536, got an empty value"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "99999999999"},
                  "--size: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1"}, "--size: is required"},
        UsageCase{kV, W{"create", "partition", "p1", "--size"}, "--size"},
        UsageCase{kV, W{"create", "partition", "p1", "--size="}, "--size"},
        UsageCase{kV, W{"create", "partition", "--size", "4"},
                  "create partition: missing partition id"},
        UsageCase{kV, W{"create", "partition", "bad/id", "--size", "4"}, "partition id"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--routing", "foo"},
                  "--routing: unknown value \"foo\""},
        UsageCase{kV,
                  W{"create", "partition", "p1", "--size", "4", "--sync-type", "independent-rails"},
                  "--sync-type: "},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--sync-type", "fast"},
                  "--sync-type: "},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--gw-routing", "mesh"},
                  "--gw-routing: "},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--num-gcds", "0"},
                  "--num-gcds: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--num-gcds", "two"},
                  "--num-gcds: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--total-num-replicas", "x"},
                  "--total-num-replicas: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--gcd-sync-replicas", "0"},
                  "--total-num-replicas: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--num-ilds", "0"},
                  "--num-ilds: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--num-ilds", "x"},
                  "--num-ilds: must be an integer"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--allocation", "a b"},
                  "--allocation: allocation id"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--cluster", "c/1"},
                  "--cluster: cluster id"},
        UsageCase{kV, W{"create", "partition", "p1", "--size", "4", "--bogus"}, "--bogus"},
        UsageCase{kV, W{"get", "partition", "p1", "--ipuof-configs", "--gcd", "x"},
                  "--gcd: must be an integer"},
        UsageCase{kV, W{"get", "partition", "p1", "--ipuof-configs", "--gcd", "-1"},
                  "--gcd: must be an integer"},
        UsageCase{kV, W{"get", "partition", "p1", "--gcd", "1"},
                  "--gcd: only meaningful with --ipuof-configs"},
        UsageCase{kV, W{"get", "partition"}, "get partition: missing partition id"},
        UsageCase{kV, W{"remove", "partition"}, "remove partition: missing partition id"},
        UsageCase{kV, W{"reset", "partition", "p 1"}, "partition id"},
        UsageCase{kV, W{"list", "partitions", "--allocation", ""}, "--allocation: allocation id"},
        UsageCase{kV, W{"list", "ipu-attrs", "--agents", "ag0,,ag1"}, "--agents: empty agent id"},
        UsageCase{kV, W{"list", "ipu-attrs", "--agents", "ag 0"}, "--agents: agent id"}));

INSTANTIATE_TEST_SUITE_P(
    Structure, UsageErrorTest,
    ::testing::Values(
        UsageCase{kV, W{}, "missing command; expected one of list, create, get, remove, reset"},
        UsageCase{kV, W{"list"},
                  "list: missing object; expected one of partitions, allocations, ipu-attrs"},
        UsageCase{kV, W{"list", "foo"}, "list: unknown object 'foo'"},
        UsageCase{kV, W{"frobnicate", "partition", "p1"}, "frobnicate"},
        // The word given, once, and the commands there are.
        UsageCase{kV, W{"delete", "partition", "p1"},
                  "vipu: unknown command 'delete'; expected one of list, create, get, remove, "
                  "reset (see --help)\n"},
        UsageCase{kV, W{"--api-port", "8090", "delete", "partition", "p1"},
                  "unknown command 'delete'; expected one of"},
        UsageCase{kV, W{"list", "allocations", "extra", "more"},
                  "vipu: unexpected arguments 'extra more'\n"},
        UsageCase{kV, W{"create", "agent", "ag1", "--host", "h"}, "create: unknown object 'agent'"},
        UsageCase{kV, W{"list", "clusters"}, "unknown object 'clusters'"},
        UsageCase{kV, W{"list", "allocations", "extra"}, "extra"}));

INSTANTIATE_TEST_SUITE_P(
    Connection, UsageErrorTest,
    ::testing::Values(
        UsageCase{kV, W{"list", "partitions", "--api-port", "70000"},
                  "--api-port: must be an integer in 1..65535, got 70000"},
        UsageCase{kV, W{"--api-port", "x", "list", "partitions"}, "--api-port: must be an integer"},
        UsageCase{kV, W{"list", "partitions", "--api-timeout", "0"},
                  "--api-timeout: must be a whole number"},
        UsageCase{kV, W{"list", "partitions", "-H", ""}, "--api-host: must not be empty"},
        // Each member of the list on its own, the bad one named.
        UsageCase{kV, W{"list", "partitions", "-H", "a,,b"},
                  "--api-host: entry 2 of 'a,,b' is empty"},
        UsageCase{kV, W{"list", "partitions", "-H", "a,b:0"},
                  "--api-host: entry 'b:0': port must be an integer in 1..65535, got '0'"},
        UsageCase{kV, W{"list", "partitions", "-H", "a,[::1:8090"},
                  "--api-host: entry '[::1:8090': unbalanced '['"},
        UsageCase{kV, W{"list", "partitions", "-H", "a, b"},
                  "--api-host: entry ' b': must not contain spaces"},
        UsageCase{kA, W{"list", "agents", "--api-host", "h:1,h:1"},
                  "--api-host: entry 'h:1' is listed twice"},
        UsageCase{kV, W{"list", "partitions", "--config", "/nonexistent/x.hcl"},
                  "/nonexistent/x.hcl"},
        UsageCase{kV, W{"--server-version", "--api-port", "0"}, "--api-port: must be an integer"}));

INSTANTIATE_TEST_SUITE_P(
    Admin, UsageErrorTest,
    ::testing::Values(
        UsageCase{kA, W{"create", "agent", "ag1"}, "--host: is required"},
        UsageCase{kA, W{"create", "agent", "ag1", "--host", ""},
                  "--host: is required and must not be empty"},
        UsageCase{kA, W{"create", "agent", "ag1", "--host", "h", "--port", "0"},
                  "--port: must be an integer in 1..65535"},
        UsageCase{kA, W{"create", "agent", "ag1", "--host", "h", "--port", "http"},
                  "--port: must be an integer"},
        UsageCase{kA, W{"create", "agent", "--host", "h"}, "create agent: missing agent id"},
        UsageCase{kA, W{"get", "agent"}, "get agent: missing agent id"},
        UsageCase{kA, W{"remove", "agent", "a/b"}, "agent id"},
        UsageCase{kA, W{"create", "cluster", "c1"}, "--agents: is required"},
        UsageCase{kA, W{"create", "cluster", "c1", "--agents", "ag0,,ag1"},
                  "--agents: empty agent id"},
        UsageCase{kA, W{"create", "cluster", "c1", "--agents", "ag0", "--num-ipulinkdomains", "0"},
                  "--num-ipulinkdomains: must be an integer"},
        UsageCase{kA, W{"create", "cluster", "c1", "--agents", "ag0", "--num-ipulinkdomains", "x"},
                  "--num-ipulinkdomains: must be an integer"},
        UsageCase{kA, W{"create", "cluster", "c1", "--agents", "ag0", "--topology", "ring"},
                  "--topology: "},
        UsageCase{kA, W{"create", "cluster", "c1", "--agents", "ag0", "--cluster-topology", "star"},
                  "--cluster-topology: "},
        UsageCase{kA, W{"remove", "cluster"}, "remove cluster: missing cluster id"},
        UsageCase{kA, W{"create", "allocation", "a1"}, "--cluster: is required"},
        UsageCase{kA, W{"create", "allocation", "a1", "--cluster", "c 1"}, "--cluster: cluster id"},
        UsageCase{kA, W{"create", "allocation", "a1", "--cluster", "c1", "--agents", ","},
                  "--agents: empty agent id"},
        UsageCase{kA, W{"remove", "allocation"}, "remove allocation: missing allocation id"},
        UsageCase{kA, W{"create", "partition", "p1", "--size", "0"}, "--size: must be an integer"},
        UsageCase{kA, W{"list", "bananas"}, "unknown object 'bananas'"},
        UsageCase{kA, W{"move", "leadership", "--to", "nohost"},
                  "--to: entry 'nohost': needs a port (HOST:PORT)"},
        UsageCase{kA, W{"move", "leadership", "--to", "h:0"},
                  "--to: entry 'h:0': port must be an integer in 1..65535"},
        UsageCase{kA, W{"move", "leadership", "--to", "a:1,b:2"},
                  "--to: name one member, HOST:PORT, got 'a:1,b:2'"},
        UsageCase{kA, W{"move", "leadership", "--to", ""}, "--to: must not be empty"},
        UsageCase{kA, W{"move", "leadership", "m1"}, "unexpected argument 'm1'"},
        UsageCase{kV, W{"move", "leadership"}, "unknown command 'move'"}));

INSTANTIATE_TEST_SUITE_P(
    UpdateUser, UsageErrorTest,
    ::testing::Values(
        UsageCase{kA, W{"update", "user", "alice"}, "update user: nothing to change"},
        UsageCase{kA, W{"update", "user", "--admin"}, "update user: missing user id"},
        UsageCase{kA, W{"update", "user", "a b", "--admin"}, "user id"},
        UsageCase{kA, W{"update", "user", "alice", "--admin", "--no-admin"},
                  "--no-admin: contradicts --admin"},
        UsageCase{kA, W{"update", "user", "alice", "--allocations", "a1", "--all-allocations"},
                  "--all-allocations: contradicts --allocations"},
        UsageCase{kA, W{"update", "user", "alice", "--allocations", ""}, "--allocations: empty"},
        UsageCase{kA, W{"update", "user", "alice", "--allocations", "a1,,a2"},
                  "--allocations: empty allocation id"},
        UsageCase{kA, W{"update", "user", "alice", "--allocations", "a/1"},
                  "--allocations: allocation id"},
        UsageCase{kA, W{"update", "user", "alice", "--rotate-key", "yes"}, "yes"},
        UsageCase{kV, W{"update", "user", "alice", "--admin"}, "update"}));

TEST_F(CommandLineTest, VersionPrintsClientVersion) {
  CliResult r = Run(kV, {"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, absl::StrCat("vipu version ", VIPU_VERSION, "\n"));
  r = Run(kA, {"--version"});
  EXPECT_EQ(r.out, absl::StrCat("vipu-admin version ", VIPU_VERSION, "\n"));
}

TEST_F(CommandLineTest, HelpExitsZeroOnStdout) {
  CliResult r = Run(kV, {"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("--api-host"));
  EXPECT_EQ(r.err, "");
}

TEST_F(CommandLineTest, UnreachableServerNamesTheAddress) {
  CliResult r = Run(kV, {"list", "partitions"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_THAT(r.err, StartsWith(absl::StrCat(
                         "list partitions: failure: cannot reach vipu-server at 127.0.0.1:",
                         closed_.port(), ": ")));
}

TEST_F(CommandLineTest, UnreachableServerWithIdInLabel) {
  CliResult r = Run(kV, {"remove", "partitions", "p7"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("remove partition (p7): failure: cannot reach vipu-server at "));
  EXPECT_EQ(CountLines(r.err), 1);
}

TEST_F(CommandLineTest, GlobalFlagsAfterTheSubcommandWin) {
  ClosedPort other;
  env_.vars["VIPU_CLI_API_PORT"] = "1";
  CliResult r = Run(kV, {"get", "partition", "p1", "-H", "127.0.0.1", "--api-port",
                         absl::StrCat(other.port()), "--api-timeout", "3"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("cannot reach vipu-server at 127.0.0.1:", other.port())));
}

TEST_F(CommandLineTest, ServerVersionUnreachable) {
  CliResult r = Run(kA, {"--server-version"});
  EXPECT_EQ(r.code, kExitFailure);
  EXPECT_THAT(r.err, StartsWith("server-version: failure: cannot reach vipu-server at 127.0.0.1:"));
}

}  // namespace
}  // namespace vipu::cli
