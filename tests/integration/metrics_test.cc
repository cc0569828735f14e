// The OpenMetrics endpoint: scraped over HTTP, checked with promtool when it
// is installed, and holding the names docs/operations.md promises.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

const char kPromtool[] = "/usr/bin/promtool";

TEST(MetricsTest, ScrapeShowsRpcsPartitionsIpusAgentsAndCommits) {
  const int metrics_port = FreePort();
  auto server =
      ServerProcess::Start("pod16", {"--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)});
  ASSERT_EQ(server->Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);
  EXPECT_NE(server->Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);

  const std::string text = HttpGet(metrics_port, "/metrics");
  ASSERT_FALSE(text.empty());
  EXPECT_THAT(text, HasSubstr("# TYPE vipu_rpc_requests_total counter"));
  EXPECT_THAT(text, HasSubstr("vipu_rpc_requests_total{service=\"virmgrpc.UserService\","
                              "method=\"CreatePartition\",code=\"OK\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipu_rpc_requests_total{service=\"virmgrpc.UserService\","
                              "method=\"CreatePartition\",code=\"ALREADY_EXISTS\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipu_rpc_duration_seconds_bucket{service=\"virmgrpc.UserService\","
                              "method=\"CreatePartition\",code=\"OK\",le=\"+Inf\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipu_partitions{state=\"PS_ACTIVE\"} 1"));
  EXPECT_THAT(text, HasSubstr("vipu_allocation_ipus{allocation=\"default\",state=\"used\"} 4"));
  EXPECT_THAT(text, HasSubstr("vipu_allocation_ipus{allocation=\"default\",state=\"free\"} 12"));
  EXPECT_THAT(text, HasSubstr("vipu_agents{status=\"up\"} 4"));
  EXPECT_THAT(text, HasSubstr("vipu_agents{status=\"down\"} 0"));
  EXPECT_THAT(text, HasSubstr("vipu_agent_up{agent="));
  EXPECT_THAT(text, HasSubstr("vipu_agent_heartbeat_age_seconds{agent="));
  EXPECT_THAT(text, HasSubstr("vipu_db_commit_duration_seconds_count "));
  EXPECT_THAT(text, HasSubstr("vipu_db_commits_total "));
  EXPECT_THAT(text, HasSubstr("vipu_ready 1"));

  if (std::filesystem::exists(kPromtool)) {
    const std::string file = server->dir() + "/metrics.txt";
    std::ofstream(file) << text;
    CommandResult check =
        RunCommand({"/bin/sh", "-c", std::string(kPromtool) + " check metrics < " + file});
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err << text;
  } else {
    GTEST_LOG_(INFO) << "promtool not installed: format check skipped";
  }

  // Prometheus asks for OpenMetrics and gets it.
  const std::string raw =
      HttpGetRaw(metrics_port, "/metrics", "Accept: application/openmetrics-text; version=1.0.0");
  EXPECT_THAT(raw, HasSubstr("Content-Type: application/openmetrics-text; version=1.0.0"));
  EXPECT_THAT(raw, HasSubstr("# TYPE vipu_rpc_requests counter"));
  EXPECT_THAT(raw, EndsWith("# EOF\n"));
}

TEST(MetricsTest, AgentGoingDownShowsInTheGauges) {
  const int metrics_port = FreePort();
  auto server =
      ServerProcess::Start("pod16", {"--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)});
  std::vector<pid_t> agents = server->Children();
  ASSERT_FALSE(agents.empty());
  kill(agents.front(), SIGKILL);
  EXPECT_TRUE(WaitFor(
      [&] {
        return HttpGet(metrics_port, "/metrics").find("vipu_agents{status=\"down\"} 4") !=
               std::string::npos;
      },
      absl::Seconds(10)));
}

TEST(MetricsTest, BadOrBusyMetricsAddressStopsTheServer) {
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--metrics-listen", "2113"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--metrics-listen: expected host:port"));
  r = RunCommand({VIPU_SERVER_BIN, "--metrics-listen", "127.0.0.1:70000"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("port must be an integer in 0..65535"));

  const int busy = FreePort();
  auto holder =
      ServerProcess::Start("pod4", {"--metrics-listen", absl::StrCat("127.0.0.1:", busy)});
  const std::string dir = MakeTempDir();
  r = RunCommand({VIPU_SERVER_BIN, "--db", dir + "/v.db", "--listen", "127.0.0.1:0",
                  "--metrics-listen", absl::StrCat("127.0.0.1:", busy)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot listen on 127.0.0.1:"));
  RemoveTree(dir);
}

TEST(MetricsTest, GetAgentShowsStatusVersionsAndLastHeartbeat) {
  auto server = ServerProcess::Start("pod4");
  CommandResult get = server->VipuAdmin({"get", "agent", "ag1"});  // the simulator's ids
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_THAT(get.out, HasSubstr("Status"));
  EXPECT_THAT(get.out, HasSubstr("Up"));
  EXPECT_THAT(get.out, HasSubstr("Last heartbeat"));
  EXPECT_THAT(get.out, HasSubstr("Virm version"));
  EXPECT_THAT(get.out, HasSubstr(VIPU_VERSION));
}

}  // namespace
}  // namespace vipu::testing
