// `inject fault` flag parsing and the `test cluster` results table.
#include "cli/common/health_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

using ::testing::HasSubstr;

TEST(ParseFaultFlagsTest, ParsesEachKind) {
  FaultFlags f;
  f.agent_id = "ag3";
  f.kind = "link-down";
  f.link = "4";
  auto r = ParseFaultFlags(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->kind, fabric::FaultKind::kLinkDown);
  EXPECT_EQ(*r->link, 4u);
  f = {};
  f.agent_id = "ag3";
  f.kind = "agent-hang";
  f.duration_ms = "1500";
  r = ParseFaultFlags(f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->duration_ms, 1500u);
}

TEST(ParseFaultFlagsTest, RefusesEveryInvalidFlagNamingIt) {
  struct Case {
    FaultFlags flags;
    std::string message;
  };
  auto flags = [](std::optional<std::string> kind, std::optional<std::string> ipu,
                  std::optional<std::string> link, std::optional<std::string> duration,
                  std::string agent = "ag1") {
    FaultFlags f;
    f.agent_id = agent;
    f.kind = kind;
    f.ipu = ipu;
    f.link = link;
    f.duration_ms = duration;
    return f;
  };
  const std::vector<Case> cases = {
      {flags(std::nullopt, {}, {}, {}), "--kind: is required"},
      {flags("boom", {}, {}, {}), "--kind: unknown value 'boom'"},
      {flags("ipu-error", {}, {}, {}), "--ipu: is required"},
      {flags("ipu-error", "4", {}, {}), "--ipu: must be an integer in 0..3, got 4"},
      {flags("ipu-error", "x", {}, {}), "--ipu: must be an integer in 0..3, got x"},
      {flags("ipu-error", "", {}, {}), "--ipu: must be an integer in 0..3, got an empty value"},
      {flags("ipu-error", "-1", {}, {}), "--ipu:"},
      {flags("link-down", {}, {}, {}), "--link: is required"},
      {flags("link-down", {}, "14", {}), "--link: must be an integer in 0..13, got 14"},
      {flags("link-down", "0", "1", {}), "--ipu: only meaningful for kind ipu-error"},
      {flags("clear", {}, "1", {}), "--link: only meaningful for kind link-down"},
      {flags("clear", {}, {}, "5"), "--duration-ms: only meaningful for kind agent-hang"},
      {flags("agent-hang", {}, {}, "3600001"), "--duration-ms: must be an integer in 0..3600000"},
      {flags("agent-hang", {}, {}, "soon"), "--duration-ms:"},
      {flags("clear", {}, {}, {}, "bad id"), "agent id:"},
  };
  for (const Case& c : cases) {
    auto r = ParseFaultFlags(c.flags);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
}

TEST(RenderTestResultsTest, PrintsTheSpecTableAndFailures) {
  vipuadmin::TestClusterReply reply;
  reply.set_cluster_id("cl0");
  auto* v = reply.add_results();
  v->set_test_type("Version");
  v->set_duration_s(0.014);
  v->set_passed(4);
  v->set_total(4);
  v->set_summary("All component versions are consistent");
  auto* t = reply.add_results();
  t->set_test_type("Link-Training");
  t->set_duration_s(11.561);
  t->set_passed(21);
  t->set_total(22);
  t->set_summary("1 of 22 links failed");
  t->add_failures("IPU-Link ag2.ipu1-ag3.ipu3: down");
  const std::string out = RenderTestResults(reply);
  EXPECT_EQ(out,
            "Showing test results for cluster cl0\n"
            "Test Type     | Duration | Passed | Summary\n" +
                std::string(78, '-') +
                "\n"
                "Version       | 0.01s    | 4/4    | All component versions are consistent\n"
                "Link-Training | 11.56s   | 21/22  | 1 of 22 links failed\n" +
                std::string(78, '-') +
                "\n"
                "  Link-Training: IPU-Link ag2.ipu1-ag3.ipu3: down\n");
}

}  // namespace
}  // namespace vipu::cli
