// The vipu_spank plugin's argument and option rules (slurm/spank_config.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "slurm/spank_config.h"

namespace vipu::slurm {
namespace {

using ::testing::HasSubstr;

TEST(PluginArgs, EveryKeyIsTaken) {
  auto c = ParsePluginArgs({"api-host=h", "api-port=8090", "api-timeout=5", "api-user-id=u",
                            "api-access-key-file=/k", "api-tls-ca=/ca", "api-tls-cert=/c",
                            "api-tls-key=/k2", "allocation=a", "vipu=/v"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->api_host, "h");
  EXPECT_EQ(c->api_port, 8090u);
  EXPECT_EQ(c->api_timeout_seconds, 5u);
  EXPECT_EQ(c->api_user_id, "u");
  EXPECT_EQ(c->api_access_key_file, "/k");
  EXPECT_EQ(c->api_tls_ca, "/ca");
  EXPECT_EQ(c->api_tls_cert, "/c");
  EXPECT_EQ(c->api_tls_key, "/k2");
  EXPECT_EQ(c->allocation, "a");
  EXPECT_EQ(c->vipu, "/v");
  c = ParsePluginArgs({"api-host=h", "api-port=1"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->vipu, kDefaultVipuPath);
  EXPECT_EQ(c->api_timeout_seconds, 120u);
}

TEST(PluginArgs, ApiHostIsAListOfMembers) {
  auto c = ParsePluginArgs({"api-host=vipu1,vipu2:9000,[::1]", "api-port=8090"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->api_host, "vipu1,vipu2:9000,[::1]");
}

TEST(PluginArgs, InvalidValuesNameTheRule) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"api-host=h", "api-port=0"}, "api-port=0: must be an integer in 1..65535"},
      {{"api-host=h", "api-port=+5"}, "api-port=+5: must be an integer"},
      {{"api-host=h", "api-port=x"}, "api-port=x: must be an integer"},
      {{"api-host=h", "api-port=1", "api-timeout=86401"}, "api-timeout=86401"},
      {{"api-host=", "api-port=1"}, "api-host=: needs a value"},
      {{"api-host=h", "api-port=1", "bogus=1"}, "unknown plugin argument 'bogus'"},
      {{"api-host=h", "api-port=1", "api-access-key=k"}, "api-access-key: not accepted"},
      {{"api-port=1"}, "api-host=H is required"},
      {{"api-host=h"}, "api-port=P is required"},
      // The member list, each entry on its own.
      {{"api-host=a,,b", "api-port=1"},
       "plugin argument api-host=a,,b: entry 2 of 'a,,b' is empty"},
      {{"api-host=a,b:0", "api-port=1"},
       "plugin argument api-host=a,b:0: entry 'b:0': port must be an integer in 1..65535"},
      {{"api-host=[::1", "api-port=1"}, "entry '[::1': unbalanced '['"},
      {{"api-host=a, b", "api-port=1"}, "entry ' b': must not contain spaces"},
  };
  for (const auto& [args, message] : cases) {
    auto c = ParsePluginArgs(args);
    ASSERT_FALSE(c.ok()) << message;
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(c.status().message()), HasSubstr(message));
  }
}

TEST(Options, IpusAndGcds) {
  for (const char* good : {"1", "2", "64", "1024"}) EXPECT_TRUE(ParseIpus(good).ok()) << good;
  for (const char* bad : {"0", "3", "-4", "+4", "2048", "", "4x", "99999999999999999999"}) {
    auto n = ParseIpus(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_THAT(std::string(n.status().message()), HasSubstr("must be a power of two"));
  }
  EXPECT_FALSE(ParseGcds("6").ok());
  EXPECT_TRUE(CheckRequest({8, 2, false}, true).ok());
  EXPECT_TRUE(CheckRequest({0, 1, false}, false).ok());
  EXPECT_THAT(std::string(CheckRequest({4, 8, false}, true).message()),
              HasSubstr("--ipus-gcds=8: must divide --ipus=4"));
  EXPECT_THAT(std::string(CheckRequest({0, 2, false}, true).message()),
              HasSubstr("--ipus-gcds: needs --ipus=N"));
  EXPECT_THAT(std::string(CheckRequest({0, 1, true}, false).message()),
              HasSubstr("--ipus-reconfigurable: needs --ipus=N"));
}

TEST(PartitionIds, NamedAfterTheJob) { EXPECT_EQ(PartitionId(42), "slurm_42"); }

}  // namespace
}  // namespace vipu::slurm
