// --tls-init output checked with OpenSSL's own verifier, and the listen
// policy that keeps an insecure server on loopback.
#include "server/security/tls_init.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/security/listen_policy.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

std::string TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "vipu-tls-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

X509* ReadCert(const fs::path& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  return cert;
}

// X509_V_OK or the verifier's error for `leaf` against `ca` for `purpose`.
int Verify(const fs::path& ca_path, const fs::path& leaf_path, int purpose) {
  X509* ca = ReadCert(ca_path);
  X509* leaf = ReadCert(leaf_path);
  if (ca == nullptr || leaf == nullptr) return -1;
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  int rc = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  X509_free(ca);
  X509_free(leaf);
  return rc;
}

mode_t Mode(const fs::path& p) {
  struct stat st;
  stat(p.c_str(), &st);
  return st.st_mode & 0777;
}

class TlsInitTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = TempDir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(TlsInitTest, WritesCertificatesThatVerify) {
  TlsInitOptions o;
  o.dir = dir_ + "/certs";
  o.extra_hosts = {"pod-ctl.example", "10.1.2.3"};
  auto result = GenerateTlsCertificates(o);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->reused_ca);
  const fs::path d(o.dir);
  EXPECT_EQ(result->server_dir, (d / "server").string());
  EXPECT_EQ(result->client_dir, (d / "client").string());
  for (const char* role : {"server", "client"}) {
    for (const char* f : {"cert.pem", "key.pem", "ca.pem"}) {
      EXPECT_TRUE(fs::exists(d / role / f)) << role << "/" << f;
    }
    EXPECT_EQ(Mode(d / role / "key.pem"), 0600u) << role;
  }
  EXPECT_EQ(Mode(d / "ca-key.pem"), 0600u);
  EXPECT_EQ(Verify(d / "ca.pem", d / "server/cert.pem", X509_PURPOSE_SSL_SERVER), X509_V_OK);
  EXPECT_EQ(Verify(d / "ca.pem", d / "client/cert.pem", X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  // The client certificate is not a server certificate.
  EXPECT_NE(Verify(d / "ca.pem", d / "client/cert.pem", X509_PURPOSE_SSL_SERVER), X509_V_OK);

  X509* server = ReadCert(d / "server/cert.pem");
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(X509_check_host(server, "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(server, "pod-ctl.example", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(server, "other.example", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(server, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(server, "10.1.2.3", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(server, "10.1.2.4", 0), 0);
  X509_free(server);
}

TEST_F(TlsInitTest, WritesAgentCertificatesAndAServerCertificateThatDials) {
  TlsInitOptions o;
  o.dir = dir_ + "/certs";
  o.agents = {{{"a1", "a2"}, {"10.0.0.1", "m1.example"}}, {{"b1"}, {}}};
  auto result = GenerateTlsCertificates(o);
  ASSERT_TRUE(result.ok()) << result.status();
  const fs::path d(o.dir);
  EXPECT_EQ(result->agent_dirs,
            (std::vector<std::string>{(d / "agents/a1").string(), (d / "agents/b1").string()}));
  // The server dials agents with its certificate.
  EXPECT_EQ(Verify(d / "ca.pem", d / "server/cert.pem", X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  for (const char* role : {"agents/a1", "agents/b1"}) {
    EXPECT_EQ(Verify(d / "ca.pem", d / role / "cert.pem", X509_PURPOSE_SSL_SERVER), X509_V_OK);
    EXPECT_EQ(Verify(d / "ca.pem", d / role / "cert.pem", X509_PURPOSE_SSL_CLIENT), X509_V_OK);
    EXPECT_EQ(Mode(d / role / "key.pem"), 0600u) << role;
    EXPECT_TRUE(fs::exists(d / role / "ca.pem"));
  }
  X509* agent = ReadCert(d / "agents/a1/cert.pem");
  ASSERT_NE(agent, nullptr);
  for (const char* name : {"a1", "a2", "m1.example"}) {
    EXPECT_EQ(X509_check_host(agent, name, 0, 0, nullptr), 1) << name;
  }
  EXPECT_EQ(X509_check_host(agent, "b1", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(agent, "10.0.0.1", 0), 1);
  X509_free(agent);

  // One more agent later, with the same CA; none without a CA.
  auto later = IssueAgentCertificate(o.dir, {{"c1"}, {"127.0.0.1"}});
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(Verify(d / "ca.pem", fs::path(*later) / "cert.pem", X509_PURPOSE_SSL_SERVER),
            X509_V_OK);
  auto no_ca = IssueAgentCertificate(dir_ + "/empty", {{"c1"}, {}});
  EXPECT_EQ(no_ca.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_ca.status().message()), HasSubstr("ca.pem"));
  auto bad_id = IssueAgentCertificate(o.dir, {{"-x"}, {}});
  EXPECT_EQ(bad_id.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TlsInitTest, NonPositiveValidityIssuesExpiredCertificates) {
  TlsInitOptions o;
  o.dir = dir_;
  o.validity_days = 0;
  ASSERT_TRUE(GenerateTlsCertificates(o).ok());
  EXPECT_EQ(Verify(fs::path(dir_) / "ca.pem", fs::path(dir_) / "server/cert.pem",
                   X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_CERT_HAS_EXPIRED);
}

TEST_F(TlsInitTest, SecondRunKeepsTheCa) {
  TlsInitOptions o;
  o.dir = dir_;
  ASSERT_TRUE(GenerateTlsCertificates(o).ok());
  const fs::path first_client = fs::path(dir_) / "first-client.pem";
  fs::copy_file(fs::path(dir_) / "client/cert.pem", first_client);
  o.validity_days = -1;
  auto again = GenerateTlsCertificates(o);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->reused_ca);
  // Same CA: the old client certificate still verifies, the new one is expired.
  EXPECT_EQ(Verify(fs::path(dir_) / "ca.pem", first_client, X509_PURPOSE_SSL_CLIENT), X509_V_OK);
  EXPECT_EQ(Verify(fs::path(dir_) / "ca.pem", fs::path(dir_) / "client/cert.pem",
                   X509_PURPOSE_SSL_CLIENT),
            X509_V_ERR_CERT_HAS_EXPIRED);
}

TEST_F(TlsInitTest, RefusesBadOptions) {
  TlsInitOptions o;
  EXPECT_EQ(GenerateTlsCertificates(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.dir = dir_;
  for (const std::string& host :
       {std::string(""), std::string("bad host"), std::string("a/b"), std::string(254, 'a')}) {
    o.extra_hosts = {host};
    auto r = GenerateTlsCertificates(o);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << host;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("--tls-hosts")) << host;
  }
  o.extra_hosts.clear();
  o.validity_days = 36501;
  auto r = GenerateTlsCertificates(o);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("--tls-validity-days"));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "ca.pem"));  // refused before writing
}

TEST(ListenPolicyTest, LoopbackAddresses) {
  for (const char* a :
       {"127.0.0.1:8090", "127.1.2.3:0", "localhost:8090", "[::1]:8090", "unix:/run/vipu.sock"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a :
       {"0.0.0.0:8090", "[::]:8090", "10.0.0.1:8090", "pod-ctl:8090", "128.0.0.1:1", ""}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(ListenPolicyTest, BeyondLoopbackNeedsSecureOrExplicitInsecure) {
  absl::Status refused = CheckListenPolicy("--listen", "0.0.0.0:8090", false, false);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("--listen 0.0.0.0:8090"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("--secure"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("--insecure"));
  EXPECT_TRUE(CheckListenPolicy("--listen", "0.0.0.0:8090", true, false).ok());
  EXPECT_TRUE(CheckListenPolicy("--listen", "0.0.0.0:8090", false, true).ok());
  EXPECT_TRUE(CheckListenPolicy("--listen", "127.0.0.1:8090", false, false).ok());
}

}  // namespace
}  // namespace vipu::server
