// vipu-agent's command line: defaults, every flag, help and version, and every invalid value.
#include "agents/agent_options.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/agent_command_line.h"

namespace vipu::agents {
namespace {

using test::AgentCommandLineRun;
using test::ExpectAgentRefuses;
using test::RunAgentCommandLine;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(AgentCommandLineTest, Defaults) {
  AgentCommandLineRun run =
      RunAgentCommandLine({"--server", "127.0.0.1:8090", "--agent-ids", "ag1,ag2"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  const AgentOptions& o = *run.parsed.options;
  EXPECT_EQ(o.server, "127.0.0.1:8090");
  EXPECT_THAT(o.agent_ids, ElementsAre("ag1", "ag2"));
  EXPECT_EQ(o.machine_type, fabric::MachineType::kM2000);
  EXPECT_EQ(o.host, "127.0.0.1");
  EXPECT_THAT(o.ports, ElementsAre(0u, 0u));
  EXPECT_THAT(o.rdma_ports, ElementsAre(0u, 0u));
  EXPECT_EQ(o.log_level, spdlog::level::info);
  EXPECT_FALSE(o.exit_with_parent);
}

TEST(AgentCommandLineTest, AllFlags) {
  AgentCommandLineRun run = RunAgentCommandLine(
      {"--server", "localhost:9000", "--agent-ids", "ag.13.01,ag-2", "--machine-type", "bow",
       "--host", "0.0.0.0", "--ports", "5001,5002", "--log-level", "debug", "--exit-with-parent"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  const AgentOptions& o = *run.parsed.options;
  EXPECT_THAT(o.agent_ids, ElementsAre("ag.13.01", "ag-2"));
  EXPECT_EQ(o.machine_type, fabric::MachineType::kBow);
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_THAT(o.ports, ElementsAre(5001u, 5002u));
  EXPECT_EQ(o.log_level, spdlog::level::debug);
  EXPECT_TRUE(o.exit_with_parent);
}

TEST(AgentCommandLineTest, RdmaPortsOnePerMachineWithOrWithoutASharedPort) {
  AgentCommandLineRun run =
      RunAgentCommandLine({"--server", "h:1", "--agent-ids", "ag1,ag2", "--ports", "5001,5003",
                           "--rdma-ports", "5002,5004"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_THAT(run.parsed.options->rdma_ports, ElementsAre(5002u, 5004u));
  run = RunAgentCommandLine({"--server", "h:1", "--agent-ids", "ag1,ag2,ag3", "--shared-port",
                             "--ports", "5001", "--rdma-ports", "5002,0,5003"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_THAT(run.parsed.options->ports, ElementsAre(5001u));
  EXPECT_THAT(run.parsed.options->rdma_ports, ElementsAre(5002u, 0u, 5003u));
}

TEST(AgentCommandLineTest, RdmaPortsInvalidValuesAreRefused) {
  const std::vector<std::string> two = {"--server", "h:1", "--agent-ids", "ag1,ag2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), two.begin(), two.end());
    return extra;
  };
  ExpectAgentRefuses(with({"--rdma-ports", "5002"}),
                     "rdma-ports: must give one port per agent id (2), got 1");
  ExpectAgentRefuses(with({"--shared-port", "--rdma-ports", "5002"}),
                     "rdma-ports: must give one port per agent id (2), got 1");
  ExpectAgentRefuses(with({"--rdma-ports", "5002,x"}),
                     "rdma-ports: each must be a number 0..65535, got 'x'");
  ExpectAgentRefuses(with({"--rdma-ports", "5002,65536"}),
                     "rdma-ports: each must be a number 0..65535, got '65536'");
  ExpectAgentRefuses(with({"--rdma-ports", "5002,-1"}), "rdma-ports: each must be a number");
  ExpectAgentRefuses(with({"--rdma-ports", "5002,5002"}),
                     "rdma-ports: must not repeat a port, got 5002 twice");
  ExpectAgentRefuses(with({"--ports", "5001,5002", "--rdma-ports", "5002,5003"}),
                     "rdma-ports: 5002 is also in --ports");
  ExpectAgentRefuses(with({"--shared-port", "--ports", "5001", "--rdma-ports", "5002,5001"}),
                     "rdma-ports: 5001 is also in --ports");
  ExpectAgentRefuses(with({"--rdma-ports"}), "--rdma-ports");
}

TEST(AgentCommandLineTest, StablePortsAndTheirReservedPorts) {
  AgentCommandLineRun run = RunAgentCommandLine({"--server", "h:1", "--agent-ids", "ag1,ag2"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_FALSE(run.parsed.options->stable_ports);
  EXPECT_TRUE(run.parsed.options->reserved_ports.empty());
  run = RunAgentCommandLine({"--server", "h:1", "--agent-ids", "ag1,ag2", "--stable-ports",
                             "--reserved-ports", "62001,62002,62001"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_TRUE(run.parsed.options->stable_ports);
  EXPECT_THAT(run.parsed.options->reserved_ports, ElementsAre(62001u, 62002u));
}

TEST(AgentCommandLineTest, ReservedPortsInvalidValuesAreRefused) {
  const std::vector<std::string> two = {"--server", "h:1", "--agent-ids", "ag1,ag2"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), two.begin(), two.end());
    return extra;
  };
  ExpectAgentRefuses(with({"--reserved-ports", "62001"}),
                     "--reserved-ports requires --stable-ports");
  ExpectAgentRefuses(with({"--stable-ports", "--reserved-ports", "x"}),
                     "reserved-ports: each must be a number 1..65535, got 'x'");
  ExpectAgentRefuses(with({"--stable-ports", "--reserved-ports", "62001,0"}),
                     "reserved-ports: each must be a number 1..65535, got '0'");
  ExpectAgentRefuses(with({"--stable-ports", "--reserved-ports", "65536"}),
                     "reserved-ports: each must be a number 1..65535, got '65536'");
  ExpectAgentRefuses(with({"--stable-ports", "--reserved-ports", "62001,"}),
                     "reserved-ports: each must be a number 1..65535, got ''");
  ExpectAgentRefuses(with({"--stable-ports", "--reserved-ports"}), "--reserved-ports");
}

TEST(AgentCommandLineTest, HelpPrintsUsageAndExitsZero) {
  AgentCommandLineRun run = RunAgentCommandLine({"--help"});
  EXPECT_FALSE(run.parsed.options.has_value());
  EXPECT_EQ(run.parsed.exit_code, 0);
  EXPECT_THAT(run.out, HasSubstr("--agent-ids"));
  EXPECT_THAT(run.out, HasSubstr("--exit-with-parent"));
  EXPECT_TRUE(run.err.empty());
}

TEST(AgentCommandLineTest, VersionExitsZero) {
  AgentCommandLineRun run = RunAgentCommandLine({"--version"});
  EXPECT_EQ(run.parsed.exit_code, 0);
  EXPECT_FALSE(run.out.empty());
}

TEST(AgentCommandLineTest, MissingRequiredFlags) {
  ExpectAgentRefuses({"--agent-ids", "ag1"}, "--server");
  ExpectAgentRefuses({"--server", "h:1"}, "--agent-ids");
}

TEST(AgentCommandLineTest, UnknownFlag) {
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1", "--bogus"}, "--bogus");
}

TEST(AgentCommandLineTest, BadValues) {
  ExpectAgentRefuses({"--server", "nohost", "--agent-ids", "ag1"},
                     "server: entry 'nohost': needs a port (HOST:PORT)");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1,ag1"}, "agent-ids: must not repeat");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "_ag"}, "agent-ids: must start with");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1", "--machine-type", "c600"},
                     "machine type: unknown value \"c600\"; accepted: m2000, bow");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1", "--host", ""},
                     "host: must not be empty");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1,ag2", "--ports", "5001"},
                     "ports: must give one port per agent id (2), got 1");
  ExpectAgentRefuses({"--server", "h:1", "--agent-ids", "ag1", "--log-level", "verbose"},
                     "log-level: must be trace, debug, info, warn or error");
}

TEST(AgentCommandLineTest, TlsFlagsGoTogether) {
  const std::vector<std::string> base = {"--server", "h:1", "--agent-ids", "ag1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ExpectAgentRefuses(with({"--tls-ca", "ca.pem"}), "--tls-cert is missing");
  ExpectAgentRefuses(with({"--tls-ca", "ca.pem", "--tls-cert", "c.pem"}), "--tls-key is missing");
  ExpectAgentRefuses(with({"--tls-cert", "c.pem", "--tls-key", "k.pem"}), "--tls-ca is missing");
  ExpectAgentRefuses(with({"--tls-key", "k.pem"}), "--tls-ca is missing");
  AgentCommandLineRun run = RunAgentCommandLine(
      with({"--tls-ca", "ca.pem", "--tls-cert", "c.pem", "--tls-key", "k.pem"}));
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_TRUE(run.parsed.options->tls());
  EXPECT_EQ(run.parsed.options->tls_ca, "ca.pem");
  EXPECT_EQ(run.parsed.options->tls_cert, "c.pem");
  EXPECT_EQ(run.parsed.options->tls_key, "k.pem");
  AgentCommandLineRun plain = RunAgentCommandLine(base);
  ASSERT_TRUE(plain.parsed.options.has_value());
  EXPECT_FALSE(plain.parsed.options->tls());
}

TEST(ValidateAgentIdTest, AcceptsValidIds) {
  for (const std::string& id :
       {std::string("a"), std::string("ag1"), std::string("0"), std::string("ag.13.01"),
        std::string("A_b-c.9"), std::string(64, 'x')}) {
    EXPECT_TRUE(ValidateAgentId("agent id", id).ok()) << id;
  }
}

TEST(ValidateAgentIdTest, RefusesInvalidIds) {
  const std::string too_long(65, 'x');
  for (const std::string& id :
       {std::string(""), too_long, std::string(".ag"), std::string("-ag"), std::string("_ag"),
        std::string("ag 1"), std::string("ag/1"), std::string("ag:1"), std::string("ag\xc3\xa9")}) {
    absl::Status status = ValidateAgentId("agent id", id);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << id;
    EXPECT_THAT(std::string(status.message()), HasSubstr("agent id: ")) << id;
  }
  EXPECT_THAT(std::string(ValidateAgentId("agent id", too_long).message()),
              HasSubstr("must be 1..64 characters, got 65"));
}

TEST(ParseAgentIdsTest, Lists) {
  EXPECT_THAT(*ParseAgentIds("ag1"), ElementsAre("ag1"));
  EXPECT_THAT(*ParseAgentIds("ag1,ag2,ag3"), ElementsAre("ag1", "ag2", "ag3"));
  for (const char* bad : {"", ",", "ag1,", ",ag1", "ag1,,ag2", "ag1, ag2", "ag1,ag2,ag1"}) {
    EXPECT_EQ(ParseAgentIds(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParsePortsTest, EmptyMeansPickFreePorts) {
  EXPECT_THAT(*ParsePorts("", 3), ElementsAre(0u, 0u, 0u));
}

TEST(ParsePortsTest, Lists) {
  EXPECT_THAT(*ParsePorts("8080", 1), ElementsAre(8080u));
  EXPECT_THAT(*ParsePorts("0,0,65535", 3), ElementsAre(0u, 0u, 65535u));
  EXPECT_THAT(*ParsePorts("1,2", 2), ElementsAre(1u, 2u));
}

TEST(ParsePortsTest, RefusesBadPorts) {
  struct Case {
    const char* list;
    size_t count;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"1,2", 1, "one port per agent id"},
           {"1", 2, "one port per agent id"},
           {"65536", 1, "0..65535, got '65536'"},
           {"-1", 1, "0..65535"},
           {"+5", 1, "0..65535"},
           {" 5", 1, "0..65535"},
           {"abc", 1, "0..65535"},
           {"99999999999", 1, "0..65535"},
           {"1,", 2, "0..65535, got ''"},
           {"5001,5001", 2, "must not repeat a port, got 5001 twice"},
       }) {
    absl::StatusOr<std::vector<uint32_t>> ports = ParsePorts(c.list, c.count);
    EXPECT_EQ(ports.status().code(), absl::StatusCode::kInvalidArgument) << c.list;
    EXPECT_THAT(std::string(ports.status().message()), HasSubstr(c.message)) << c.list;
    EXPECT_THAT(std::string(ports.status().message()), HasSubstr("ports: ")) << c.list;
  }
}

TEST(ValidateServerAddressTest, Accepts) {
  for (const char* ok : {"127.0.0.1:8090", "localhost:1", "h:65535", "[::1]:8090", "unix:/tmp/s"}) {
    EXPECT_TRUE(ValidateServerAddress(ok).ok()) << ok;
  }
}

TEST(ValidateServerAddressTest, ListsOfMembers) {
  auto servers = ParseServerAddresses("127.0.0.1:1,h:2,[::1]:3");
  ASSERT_TRUE(servers.ok()) << servers.status();
  EXPECT_THAT(*servers, ::testing::ElementsAre("127.0.0.1:1", "h:2", "[::1]:3"));
  servers = ParseServerAddresses("unix:/tmp/s");
  ASSERT_TRUE(servers.ok());
  EXPECT_THAT(*servers, ::testing::ElementsAre("unix:/tmp/s"));
  AgentCommandLineRun run = RunAgentCommandLine({"--server", "a:1,b:2", "--agent-ids", "ag1"});
  ASSERT_TRUE(run.parsed.options.has_value()) << run.err;
  EXPECT_EQ(run.parsed.options->server, "a:1,b:2");
  EXPECT_THAT(run.parsed.options->servers, ::testing::ElementsAre("a:1", "b:2"));
  // Each entry on its own, the bad one named.
  for (const auto& [list, message] : std::vector<std::pair<std::string, std::string>>{
           {"a:1,,b:2", "server: entry 2 of 'a:1,,b:2' is empty"},
           {"a:1,b", "server: entry 'b': needs a port (HOST:PORT)"},
           {"a:1,b:0", "server: entry 'b:0': port must be an integer in 1..65535"},
           {"a:1,[::1:2", "server: entry '[::1:2': unbalanced '['"},
           {"a:1, b:2", "server: entry ' b:2': must not contain spaces"},
           {"a:1,a:1", "server: entry 'a:1' is listed twice"}}) {
    absl::Status status = ValidateServerAddress(list);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(std::string(status.message()), HasSubstr(message)) << list;
    ExpectAgentRefuses({"--server", list, "--agent-ids", "ag1"}, message);
  }
}

TEST(ValidateServerAddressTest, Refuses) {
  for (const char* bad :
       {"", "host", ":8090", "host:", "host:0", "host:65536", "host:x", "[]:1", "unix:"}) {
    absl::Status status = ValidateServerAddress(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(status.message()), HasSubstr("server: ")) << bad;
  }
}

TEST(ParseLogLevelTest, Levels) {
  EXPECT_EQ(*ParseLogLevel("trace"), spdlog::level::trace);
  EXPECT_EQ(*ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(*ParseLogLevel("info"), spdlog::level::info);
  EXPECT_EQ(*ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("error"), spdlog::level::err);
  for (const char* bad : {"", "INFO", "warning", "critical", "off"}) {
    EXPECT_EQ(ParseLogLevel(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace vipu::agents
