// vipu and vipu-admin as users and scripts meet them, against a real
// vipu-server --simulate pod16.
#include <filesystem>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/shared_server_suite.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Field `n` (1-based, as cut -d '|' -f n) of the rows that contain `needle`.
std::vector<std::string> Cut(const std::string& table, const std::string& needle, size_t n) {
  std::vector<std::string> out;
  for (const std::string& line : Lines(table)) {
    if (line.find(needle) == std::string::npos) continue;
    std::vector<std::string> fields = absl::StrSplit(line, '|');
    if (fields.size() >= n) out.emplace_back(absl::StripAsciiWhitespace(fields[n - 1]));
  }
  return out;
}

class CliTest : public SharedServerSuite {
 protected:
  void TearDown() override {
    for (const std::string& id : Cut(server_->Vipu({"list", "partitions"}).out, " | ", 1)) {
      if (id != "Partition") server_->Vipu({"remove", "partition", id, "--force"});
    }
  }
  // A failing command: non-zero exit, exactly one line on stderr.
  static void ExpectOneLineFailure(const CommandResult& r, const std::string& needle) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(Lines(r.err).size(), 1u) << r.err;
    EXPECT_THAT(r.err, HasSubstr(needle));
  }
};

TEST_F(CliTest, ServerVersionIsExactlyTwoLines) {
  CommandResult r = server_->Vipu({"--server-version"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("version: ") + VIPU_VERSION +
                       "\nhost: 127.0.0.1:" + std::to_string(server_->port()) + "\n");
  CommandResult admin = server_->VipuAdmin({"--server-version"});
  EXPECT_EQ(admin.out, r.out);
}

TEST_F(CliTest, CreateListGetRemoveWithIpuofFiles) {
  CommandResult r = server_->Vipu({"create", "partition", "p1", "--size", "4", "--num-gcds", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "create partition (p1): success.\n");
  const std::string dir = server_->home() + "/.ipuof.conf.d/";
  for (int g = 0; g < 2; ++g) {
    std::string conf = ReadFile(dir + "p1_gcd" + std::to_string(g) + "_ipuof.conf");
    EXPECT_THAT(conf, HasSubstr("\"attributes\""));
    EXPECT_THAT(conf, HasSubstr("\"devices\""));
    EXPECT_THAT(conf, HasSubstr("\"GCD Id\": \"" + std::to_string(g) + "\""));
  }

  CommandResult list = server_->Vipu({"list", "partitions"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> lines = Lines(list.out);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_THAT(lines[0], StartsWith(" Partition"));
  EXPECT_THAT(lines[0], HasSubstr("| Cluster "));
  EXPECT_THAT(lines[0], HasSubstr("| GW Routing | ILD Routing |"));
  EXPECT_EQ(lines[1], std::string(lines[0].size(), '-'));
  EXPECT_EQ(Cut(list.out, "ACTIVE", 1), std::vector<std::string>{"p1"});
  EXPECT_EQ(Cut(list.out, "ACTIVE", 2), std::vector<std::string>{"pod16"});
  EXPECT_EQ(Cut(list.out, "ACTIVE", 6), std::vector<std::string>{"4"});
  EXPECT_EQ(Cut(list.out, "ACTIVE", 7), std::vector<std::string>{"2"});

  // The admin table has one column before the id: older scripts cut field 2.
  CommandResult admin = server_->VipuAdmin({"list", "partitions"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_EQ(Cut(admin.out, "ACTIVE", 2), std::vector<std::string>{"p1"});

  CommandResult gcd = server_->Vipu({"get", "partition", "p1", "--gcd", "1", "--ipuof-configs"});
  ASSERT_EQ(gcd.exit_code, 0) << gcd.err;
  EXPECT_EQ(gcd.out, ReadFile(dir + "p1_gcd1_ipuof.conf"));

  CommandResult get = server_->Vipu({"get", "partition", "p1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("p1"));
  EXPECT_THAT(get.out, HasSubstr("ACTIVE"));

  CommandResult rm = server_->Vipu({"remove", "partition", "p1"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(rm.out, "remove partition (p1): success.\n");
  EXPECT_FALSE(std::filesystem::exists(dir + "p1_gcd0_ipuof.conf"));
  EXPECT_TRUE(Cut(server_->Vipu({"list", "partitions"}).out, "ACTIVE", 1).empty());
}

TEST_F(CliTest, ResetPartition) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "rp", "--size", "2"}).exit_code, 0);
  CommandResult r = server_->Vipu({"reset", "partition", "rp"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "reset partition (rp): success.\n");
}

TEST_F(CliTest, FailuresAreOneLineAndChangeNothing) {
  ExpectOneLineFailure(server_->Vipu({"create", "partition", "bad", "--size", "3"}), "size");
  ExpectOneLineFailure(server_->Vipu({"create", "partition", "bad", "--size", "64"}), "size");
  ExpectOneLineFailure(
      server_->Vipu({"create", "partition", "bad", "--size", "4", "--routing", "sideways"}),
      "routing");
  ExpectOneLineFailure(server_->Vipu({"create", "partition", "bad", "--size", "4", "--sync-type",
                                      "independent-rails"}),
                       "sync");
  ExpectOneLineFailure(server_->Vipu({"create", "partition", "bad", "--size", "4",
                                      "--reconfigurable", "--sync-type", "pod-native-default"}),
                       "reconfigurable");
  ExpectOneLineFailure(server_->Vipu({"remove", "partition", "ghost"}), "ghost");
  ExpectOneLineFailure(server_->Vipu({"get", "partition", "ghost"}), "ghost");
  ASSERT_EQ(server_->Vipu({"create", "partition", "once", "--size", "1"}).exit_code, 0);
  ExpectOneLineFailure(server_->Vipu({"create", "partition", "once", "--size", "1"}),
                       "already exists");
  std::vector<std::string> ids = Cut(server_->Vipu({"list", "partitions"}).out, "ACTIVE", 1);
  EXPECT_EQ(ids, std::vector<std::string>{"once"});
}

TEST_F(CliTest, UnreachableServerNamesHostAndPort) {
  CommandResult r = RunCommand({VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port", "1",
                                "--api-timeout", "2", "list", "partitions"},
                               {{"HOME", server_->home()}});
  ExpectOneLineFailure(r, "127.0.0.1:1");
}

TEST_F(CliTest, EnvironmentSelectsServer) {
  CommandResult r = RunCommand({VIPU_CLI_BIN, "--server-version"},
                               {{"HOME", server_->home()},
                                {"VIPU_CLI_API_HOST", "127.0.0.1"},
                                {"VIPU_CLI_API_PORT", std::to_string(server_->port())}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("host: 127.0.0.1:" + std::to_string(server_->port())));
}

TEST_F(CliTest, ListAllocationsAndIpuAttributes) {
  CommandResult r = server_->Vipu({"list", "allocations"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" Allocation ID | Agents"));
  EXPECT_EQ(Cut(r.out, "default", 2), std::vector<std::string>{"ag1 ag2 ag3 ag4"});

  CommandResult attrs = server_->Vipu({"list", "ipu-attrs"});
  ASSERT_EQ(attrs.exit_code, 0) << attrs.err;
  EXPECT_THAT(attrs.out, HasSubstr("board type"));
  EXPECT_THAT(attrs.out, HasSubstr("M2000"));
  EXPECT_THAT(attrs.out, HasSubstr("ag4"));
}

TEST_F(CliTest, ShowJsonPrintsProtoFieldNames) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "js", "--size", "2"}).exit_code, 0);
  CommandResult r = server_->Vipu({"list", "partitions", "--showjson"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"id\""));
  EXPECT_THAT(r.out, HasSubstr("\"ready_state\""));
  EXPECT_THAT(r.out, HasSubstr("PS_ACTIVE"));
}

TEST_F(CliTest, AdminAgentsClustersAllocations) {
  CommandResult agents = server_->VipuAdmin({"list", "agents"});
  ASSERT_EQ(agents.exit_code, 0) << agents.err;
  EXPECT_EQ(Cut(agents.out, "ag3", 1), std::vector<std::string>{"ag3"});
  EXPECT_THAT(agents.out, HasSubstr("Up"));

  CommandResult get = server_->VipuAdmin({"get", "agent", "ag1"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr(" Agent ID "));
  EXPECT_THAT(get.out, HasSubstr("Num of IPUs"));

  // An agent of our own, a cluster and an allocation over it, then removal
  // in the order the references demand.
  CommandResult c =
      server_->VipuAdmin({"create", "agent", "spare", "--host", "127.0.0.1", "--port", "9"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "create agent (spare): success.\n");
  ExpectOneLineFailure(
      server_->VipuAdmin({"create", "agent", "spare", "--host", "h", "--port", "9"}),
      "already exists");
  ExpectOneLineFailure(server_->VipuAdmin({"create", "agent", "x", "--host", "h", "--port", "0"}),
                       "port");
  ExpectOneLineFailure(server_->VipuAdmin({"create", "cluster", "c2", "--agents", "ag1"}), "ag1");
  ASSERT_EQ(
      server_->VipuAdmin({"create", "cluster", "c1", "--agents", "spare", "--topology", "mesh"})
          .exit_code,
      0);
  ExpectOneLineFailure(server_->VipuAdmin({"remove", "agent", "spare"}), "cluster");
  ASSERT_EQ(server_->VipuAdmin({"create", "allocation", "a1", "--cluster", "c1"}).exit_code, 0);
  ExpectOneLineFailure(server_->VipuAdmin({"remove", "cluster", "c1"}), "allocation");
  EXPECT_THAT(server_->VipuAdmin({"list", "clusters"}).out, HasSubstr("c1"));
  ASSERT_EQ(server_->VipuAdmin({"remove", "allocation", "a1"}).exit_code, 0);
  ASSERT_EQ(server_->VipuAdmin({"remove", "cluster", "c1"}).exit_code, 0);
  ASSERT_EQ(server_->VipuAdmin({"remove", "agent", "spare"}).exit_code, 0);

  // An allocation with partitions cannot go.
  ASSERT_EQ(server_->Vipu({"create", "partition", "held", "--size", "1"}).exit_code, 0);
  ExpectOneLineFailure(server_->VipuAdmin({"remove", "allocation", "default"}), "partition");
}

}  // namespace
}  // namespace vipu::testing
