// ClientConfig resolution: flag over environment over file over default, and each error.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/common/client_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

using ::testing::HasSubstr;

class ClientConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/client_config_test_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::string cmd = "mkdir -p '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    // The machine's real /etc/vipu/vipu-cli.hcl must not leak into tests.
    env_.system_config_path = dir_ + "/absent-system.hcl";
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::string dir_;
  Environment env_;
};

TEST_F(ClientConfigTest, DefaultsWithoutAnySource) {
  auto config = ResolveClientConfig({}, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->host, "localhost");
  EXPECT_EQ(config->port, 8090u);
  EXPECT_EQ(config->timeout_seconds, 120u);
  EXPECT_EQ(config->user_id, "");
  EXPECT_EQ(config->Target(), "localhost:8090");
}

TEST_F(ClientConfigTest, SystemFileOverridesDefaults) {
  env_.system_config_path = WriteFile("system.hcl", "api-host = \"sys\"\napi-port = 1000\n");
  auto config = ResolveClientConfig({}, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->Target(), "sys:1000");
}

TEST_F(ClientConfigTest, ConfigFlagReplacesSystemFile) {
  env_.system_config_path = WriteFile("system.hcl", "api-host = \"sys\"\napi-port = 1000\n");
  ConnectionFlags flags;
  flags.config_file = WriteFile("user.hcl", "api-host = \"user\"\n");
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  // Not merged: the system file's port does not apply.
  EXPECT_EQ(config->Target(), "user:8090");
}

TEST_F(ClientConfigTest, EnvironmentOverridesFile) {
  env_.system_config_path =
      WriteFile("system.hcl", "api-host = \"sys\"\napi-port = 1000\napi-timeout = 5\n");
  env_.vars["VIPU_CLI_API_HOST"] = "envhost";
  env_.vars["VIPU_CLI_API_TIMEOUT"] = "7";
  auto config = ResolveClientConfig({}, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->host, "envhost");
  EXPECT_EQ(config->port, 1000u);
  EXPECT_EQ(config->timeout_seconds, 7u);
}

TEST_F(ClientConfigTest, FlagOverridesEnvironmentAndFile) {
  env_.system_config_path = WriteFile("system.hcl", "api-port = 1000\n");
  env_.vars["VIPU_CLI_API_PORT"] = "2000";
  env_.vars["VIPU_CLI_API_USER_ID"] = "env-user";
  env_.vars["VIPU_CLI_API_ACCESS_KEY"] = "env-key";
  ConnectionFlags flags;
  flags.api_port = "3000";
  flags.api_user_id = "alice";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->port, 3000u);
  EXPECT_EQ(config->user_id, "alice");
  EXPECT_EQ(config->access_key, "env-key");
}

TEST_F(ClientConfigTest, AuthFromConfigFile) {
  ConnectionFlags flags;
  flags.config_file = WriteFile("alice.vipu-cli.hcl",
                                "api-user-id = \"alice\"\napi-access-key = \"685X_K4uCzN\"\n");
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->user_id, "alice");
  EXPECT_EQ(config->access_key, "685X_K4uCzN");
}

TEST_F(ClientConfigTest, Ipv6HostIsBracketed) {
  ConnectionFlags flags;
  flags.api_host = "::1";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->Target(), "[::1]:8090");
}

TEST_F(ClientConfigTest, HostIsAListOfMembersWithThePortForThoseWithoutOne) {
  ConnectionFlags flags;
  flags.api_host = "a,b:9000,[::1],[::2]:7";
  flags.api_port = "1000";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->host, "a,b:9000,[::1],[::2]:7");
  EXPECT_EQ(config->Target(), "a:1000,b:9000,[::1]:1000,[::2]:7");
  auto members = config->Members();
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 4u);
  EXPECT_EQ((*members)[1].port, 9000u);
}

TEST_F(ClientConfigTest, EverySourceOfTheHostIsCheckedEntryByEntry) {
  env_.vars["VIPU_CLI_API_HOST"] = "a,:1";
  auto config = ResolveClientConfig({}, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(std::string(config.status().message()),
            "VIPU_CLI_API_HOST: entry ':1': needs a host before ':'");

  env_.vars.clear();
  ConnectionFlags flags;
  flags.config_file = WriteFile("members.hcl", "api-host = \"a,b:70000\"\n");
  config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              ::testing::EndsWith(
                  "members.hcl: api-host: entry 'b:70000': port must be an integer in 1..65535, "
                  "got '70000'"));
}

struct BadValue {
  const char* flag_port;
  const char* flag_timeout;
  const char* flag_host;
  const char* expected;
};

class ClientConfigErrorTest : public ClientConfigTest,
                              public ::testing::WithParamInterface<BadValue> {};

TEST_P(ClientConfigErrorTest, RejectsWithSourceAndRule) {
  ConnectionFlags flags;
  if (GetParam().flag_port) flags.api_port = GetParam().flag_port;
  if (GetParam().flag_timeout) flags.api_timeout = GetParam().flag_timeout;
  if (GetParam().flag_host) flags.api_host = GetParam().flag_host;
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(config.status().message()), GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Flags, ClientConfigErrorTest,
    ::testing::Values(
        BadValue{"70000", nullptr, nullptr,
                 "--api-port: must be an integer in 1..65535, got 70000"},
        BadValue{"x", nullptr, nullptr, "--api-port: must be an integer in 1..65535, got x"},
        BadValue{"0", nullptr, nullptr, "--api-port: must be an integer in 1..65535, got 0"},
        BadValue{"-1", nullptr, nullptr, "--api-port: must be an integer in 1..65535, got -1"},
        BadValue{"", nullptr, nullptr,
                 "--api-port: must be an integer in 1..65535, got an empty value"},
        BadValue{nullptr, "0", nullptr,
                 "--api-timeout: must be a whole number of seconds in 1..86400, got 0"},
        BadValue{nullptr, "1.5", nullptr,
                 "--api-timeout: must be a whole number of seconds in 1..86400, got 1.5"},
        BadValue{nullptr, "abc", nullptr,
                 "--api-timeout: must be a whole number of seconds in 1..86400, got abc"},
        BadValue{nullptr, "86401", nullptr,
                 "--api-timeout: must be a whole number of seconds in 1..86400, got 86401"},
        BadValue{nullptr, nullptr, "", "--api-host: must not be empty"},
        BadValue{nullptr, nullptr, "a,", "--api-host: entry 2 of 'a,' is empty"},
        BadValue{nullptr, nullptr, "a,h:x",
                 "--api-host: entry 'h:x': port must be an integer in "
                 "1..65535, got 'x'"},
        BadValue{nullptr, nullptr, "[::1", "--api-host: entry '[::1': unbalanced '['"},
        BadValue{nullptr, nullptr, "a b", "--api-host: entry 'a b': must not contain spaces"}));

TEST_F(ClientConfigTest, BadEnvironmentValueNamesTheVariable) {
  env_.vars["VIPU_CLI_API_PORT"] = "http";
  auto config = ResolveClientConfig({}, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(std::string(config.status().message()),
            "VIPU_CLI_API_PORT: must be an integer in 1..65535, got http");
}

TEST_F(ClientConfigTest, BadFileValueNamesFileAndKey) {
  ConnectionFlags flags;
  flags.config_file = WriteFile("bad.hcl", "api-timeout = forever\n");
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("bad.hcl: api-timeout: must be a whole number of seconds"));
}

TEST_F(ClientConfigTest, MissingConfigFlagFileIsAnError) {
  ConnectionFlags flags;
  flags.config_file = dir_ + "/missing.hcl";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("missing.hcl"));
}

TEST_F(ClientConfigTest, MissingConfigFlagFileSaysConfigFile) {
  ConnectionFlags flags;
  flags.config_file = dir_ + "/missing.hcl";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()),
              HasSubstr("config file " + dir_ + "/missing.hcl: "));
}

TEST_F(ClientConfigTest, DirectoryAsConfigFileIsAnError) {
  ConnectionFlags flags;
  flags.config_file = dir_;
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("is a directory"));
}

// As vipu-server.hcl: one of two settings would otherwise be ignored
// silently. Both lines are named.
TEST_F(ClientConfigTest, RepeatedFileKeyIsRefusedNamingBothLines) {
  ConnectionFlags flags;
  const std::string path =
      WriteFile("twice.hcl", "api-port = 1000\napi-host = h\napi-port = 1001\n");
  flags.config_file = path;
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            absl::StrCat(path, ":3: key 'api-port' is already set on line 1"));
}

TEST_F(ClientConfigTest, EmptyConfigFlagIsAnError) {
  ConnectionFlags flags;
  flags.config_file = "";
  auto config = ResolveClientConfig(flags, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("--config"));
}

TEST_F(ClientConfigTest, BrokenSystemFileIsAnError) {
  env_.system_config_path = WriteFile("system.hcl", "api-hots = \"x\"\n");
  auto config = ResolveClientConfig({}, env_);
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("system.hcl:1: unknown key"));
}

TEST(EnvironmentTest, FromProcessReadsVariables) {
  ::setenv("VIPU_CLI_TEST_VARIABLE", "a=b", 1);
  Environment env = Environment::FromProcess();
  EXPECT_EQ(env.Get("VIPU_CLI_TEST_VARIABLE"), "a=b");
  EXPECT_EQ(env.Get("VIPU_CLI_TEST_UNSET_VARIABLE"), "");
  EXPECT_EQ(env.system_config_path, "/etc/vipu/vipu-cli.hcl");
}

}  // namespace
}  // namespace vipu::cli
