// The CLIs' TLS settings (--api-tls-*, VIPU_CLI_API_TLS_*, api-tls-* in HCL)
// and the per-user configuration that `vipu-admin create user` writes.
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "cli/common/client_config.h"
#include "cli/common/user_commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TlsConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vipu-clitls-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    for (const char* f : {"ca.pem", "cert.pem", "key.pem"}) std::ofstream(dir_ + "/" + f) << "x";
    env_.system_config_path = "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string P(const char* f) const { return dir_ + "/" + f; }
  std::string Error(const ConnectionFlags& flags) const {
    auto c = ResolveClientConfig(flags, env_);
    EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(c.status().message());
  }
  std::string dir_;
  Environment env_;
};

TEST_F(TlsConfigTest, NoTlsByDefault) {
  auto c = ResolveClientConfig({}, env_);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->tls());
}

TEST_F(TlsConfigTest, FlagsTurnOnMutualTls) {
  ConnectionFlags f;
  f.api_tls_ca = P("ca.pem");
  f.api_tls_cert = P("cert.pem");
  f.api_tls_key = P("key.pem");
  auto c = ResolveClientConfig(f, env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->tls());
  EXPECT_EQ(c->tls_cert, P("cert.pem"));
  // A CA alone is server-authenticated TLS.
  ConnectionFlags ca_only;
  ca_only.api_tls_ca = P("ca.pem");
  EXPECT_TRUE(ResolveClientConfig(ca_only, env_).ok());
}

TEST_F(TlsConfigTest, EveryInvalidValueIsNamed) {
  ConnectionFlags cert_only;
  cert_only.api_tls_ca = P("ca.pem");
  cert_only.api_tls_cert = P("cert.pem");
  EXPECT_THAT(Error(cert_only), HasSubstr("--api-tls-cert: needs --api-tls-key"));
  ConnectionFlags key_only;
  key_only.api_tls_ca = P("ca.pem");
  key_only.api_tls_key = P("key.pem");
  EXPECT_THAT(Error(key_only), HasSubstr("--api-tls-key: needs --api-tls-cert"));
  ConnectionFlags no_ca;
  no_ca.api_tls_cert = P("cert.pem");
  no_ca.api_tls_key = P("key.pem");
  EXPECT_THAT(Error(no_ca), HasSubstr("needs --api-tls-ca"));
  ConnectionFlags missing;
  missing.api_tls_ca = P("nope.pem");
  EXPECT_THAT(Error(missing), HasSubstr("--api-tls-ca: cannot read"));
  ConnectionFlags empty;
  empty.api_tls_key = "";
  EXPECT_THAT(Error(empty), HasSubstr("--api-tls-key: must name a file"));
  Environment env = env_;
  env.vars["VIPU_CLI_API_TLS_CERT"] = P("missing.pem");
  auto from_env = ResolveClientConfig({}, env);
  EXPECT_THAT(std::string(from_env.status().message()), HasSubstr("VIPU_CLI_API_TLS_CERT"));
}

TEST_F(TlsConfigTest, RelativePathsInAFileAreRelativeToTheFile) {
  std::ofstream(P("user.hcl")) << "api-tls-ca = \"ca.pem\"\napi-tls-cert = \"cert.pem\"\n"
                                  "api-tls-key = \"key.pem\"\n";
  ConnectionFlags f;
  f.config_file = P("user.hcl");
  auto c = ResolveClientConfig(f, env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tls_ca, P("ca.pem"));
  EXPECT_EQ(c->tls_key, P("key.pem"));
}

TEST_F(TlsConfigTest, UserHclRoundTrips) {
  ClientConfig admin;
  admin.host = "ctl01";
  admin.port = 8091;
  admin.tls_ca = P("ca.pem");
  admin.tls_cert = P("cert.pem");
  admin.tls_key = P("key.pem");
  std::ofstream(P("alice.vipu-cli.hcl")) << RenderUserHcl(admin, "alice", "K3y_-");
  ConnectionFlags f;
  f.config_file = P("alice.vipu-cli.hcl");
  auto c = ResolveClientConfig(f, env_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->host, "ctl01");
  EXPECT_EQ(c->port, 8091u);
  EXPECT_EQ(c->user_id, "alice");
  EXPECT_EQ(c->access_key, "K3y_-");
  EXPECT_EQ(c->tls_cert, P("cert.pem"));
  ClientConfig plain;
  EXPECT_THAT(RenderUserHcl(plain, "bob", "k"), ::testing::Not(HasSubstr("api-tls")));
}

}  // namespace
}  // namespace vipu::cli
