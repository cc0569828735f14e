// The tls library: file checks (LoadTlsFiles), certificate names, the
// reloading LiveCertificates, and the --tls-agents syntax of --tls-init.
#include "tls/tls_files.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/security/tls_init.h"
#include "tls/live_certificates.h"

namespace vipu::tls {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
namespace fs = std::filesystem;

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

class TlsLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "vipu-tls-test-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    server::TlsInitOptions options;
    options.dir = dir_ + "/pod";
    options.agents = {{{"ag1", "ag2"}, {"127.0.0.1", "m1.example"}}};
    ASSERT_TRUE(server::GenerateTlsCertificates(options).ok());
    options.dir = dir_ + "/other";
    options.agents.clear();
    ASSERT_TRUE(server::GenerateTlsCertificates(options).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  TlsFiles Role(const std::string& pod, const std::string& role) const {
    const std::string d = dir_ + "/" + pod + "/" + role;
    return {d + "/ca.pem", d + "/cert.pem", d + "/key.pem"};
  }

  std::string dir_;
};

TEST_F(TlsLibraryTest, LoadsIssuedFiles) {
  for (const char* role : {"server", "client", "agents/ag1"}) {
    auto pem = LoadTlsFiles(Role("pod", role));
    ASSERT_TRUE(pem.ok()) << role << ": " << pem.status();
    EXPECT_THAT(pem->cert, HasSubstr("BEGIN CERTIFICATE"));
    EXPECT_FALSE(CertificateExpired(pem->cert));
  }
}

TEST_F(TlsLibraryTest, RefusesBadFilesNamingThem) {
  TlsFiles files = Role("pod", "server");
  TlsFiles missing = files;
  missing.key = dir_ + "/nope.pem";
  EXPECT_THAT(Msg(LoadTlsFiles(missing).status()), StartsWith(missing.key));

  TlsFiles wrong_key = files;
  wrong_key.key = Role("pod", "client").key;
  auto s = LoadTlsFiles(wrong_key).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_THAT(Msg(s), StartsWith(wrong_key.key));
  EXPECT_THAT(Msg(s), HasSubstr("does not belong"));

  TlsFiles foreign = Role("other", "client");
  foreign.ca = files.ca;
  s = LoadTlsFiles(foreign).status();
  EXPECT_THAT(Msg(s), StartsWith(foreign.cert));
  EXPECT_THAT(Msg(s), HasSubstr("not signed by the CA"));

  TlsFiles garbage = files;
  garbage.cert = dir_ + "/garbage.pem";
  std::ofstream(garbage.cert) << "hello\n";
  EXPECT_THAT(Msg(LoadTlsFiles(garbage).status()), StartsWith(garbage.cert));

  TlsFiles none = files;
  none.ca.clear();
  EXPECT_FALSE(LoadTlsFiles(none).ok());
}

TEST_F(TlsLibraryTest, ExpiredCaIsRefusedExpiredCertificateIsNot) {
  server::TlsInitOptions options;
  options.dir = dir_ + "/expired";
  options.validity_days = 0;
  ASSERT_TRUE(server::GenerateTlsCertificates(options).ok());
  TlsFiles files = Role("expired", "server");
  auto s = LoadTlsFiles(files).status();
  EXPECT_THAT(Msg(s), StartsWith(files.ca));
  EXPECT_THAT(Msg(s), HasSubstr("expired"));

  // A valid CA with an expired leaf: peers refuse it at the handshake.
  fs::copy(dir_ + "/pod", dir_ + "/renew", fs::copy_options::recursive);
  options.dir = dir_ + "/renew";
  ASSERT_TRUE(server::GenerateTlsCertificates(options).ok());
  auto pem = LoadTlsFiles(Role("renew", "server"));
  ASSERT_TRUE(pem.ok()) << pem.status();
  EXPECT_TRUE(CertificateExpired(pem->cert));
}

TEST_F(TlsLibraryTest, CertificateNames) {
  const std::string agent = ReadAll(Role("pod", "agents/ag1").cert);
  EXPECT_TRUE(CheckCertificateNames(agent, {"ag1", "ag2", "m1.example"}, {"127.0.0.1"}).ok());
  EXPECT_TRUE(absl::IsNotFound(CheckCertificateNames(agent, {"ag3"}, {})));
  EXPECT_TRUE(absl::IsNotFound(CheckCertificateNames(agent, {}, {"10.0.0.1"})));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckCertificateNames("junk", {}, {})));
}

TEST_F(TlsLibraryTest, LiveCertificatesReloadOrKeepTheOldOnes) {
  const std::string work = dir_ + "/work";
  fs::copy(dir_ + "/pod/server", work, fs::copy_options::recursive);
  TlsFiles files{work + "/ca.pem", work + "/cert.pem", work + "/key.pem"};
  setenv("RUNTIME_DIRECTORY", dir_.c_str(), 1);
  auto live = LiveCertificates::Start(files);
  unsetenv("RUNTIME_DIRECTORY");
  ASSERT_TRUE(live.ok()) << live.status();
  const std::string live_dir = (*live)->LiveDirForTesting();
  EXPECT_THAT(live_dir, StartsWith(dir_ + "/vipu-tls-"));
  struct stat st;
  ASSERT_EQ(stat(live_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(ReadAll(live_dir + "/cert.pem"), ReadAll(files.cert));

  // A bad file: refused, the copies stay.
  const std::string before = ReadAll(live_dir + "/cert.pem");
  fs::copy_file(dir_ + "/pod/client/cert.pem", files.cert, fs::copy_options::overwrite_existing);
  absl::Status s = (*live)->Reload();
  EXPECT_THAT(Msg(s), StartsWith(files.key));
  EXPECT_EQ(ReadAll(live_dir + "/cert.pem"), before);

  // A good pair: installed.
  fs::copy_file(dir_ + "/pod/client/key.pem", files.key, fs::copy_options::overwrite_existing);
  EXPECT_TRUE((*live)->Reload().ok());
  EXPECT_EQ(ReadAll(live_dir + "/cert.pem"), ReadAll(dir_ + "/pod/client/cert.pem"));
  EXPECT_EQ(ReadAll(live_dir + "/key.pem"), ReadAll(dir_ + "/pod/client/key.pem"));

  EXPECT_FALSE((*live)->CertificateExpired());

  live->reset();
  EXPECT_FALSE(fs::exists(live_dir));
}

TEST_F(TlsLibraryTest, StartRefusesBadFilesAndLeavesNoDirectory) {
  TlsFiles files = Role("pod", "server");
  files.key = Role("pod", "client").key;
  setenv("RUNTIME_DIRECTORY", (dir_ + "/runtime").c_str(), 1);
  fs::create_directories(dir_ + "/runtime");
  auto live = LiveCertificates::Start(files);
  unsetenv("RUNTIME_DIRECTORY");
  EXPECT_TRUE(absl::IsFailedPrecondition(live.status()));
  EXPECT_TRUE(fs::is_empty(dir_ + "/runtime"));
}

TEST(TlsAgentsFlagTest, Parses) {
  auto agents = server::ParseTlsAgents("ag1@10.0.0.1,ag2+ag3@m2.example+10.0.0.2,ag4");
  ASSERT_TRUE(agents.ok()) << agents.status();
  ASSERT_EQ(agents->size(), 3u);
  EXPECT_EQ((*agents)[0].ids, std::vector<std::string>{"ag1"});
  EXPECT_EQ((*agents)[0].hosts, std::vector<std::string>{"10.0.0.1"});
  EXPECT_EQ((*agents)[1].ids, (std::vector<std::string>{"ag2", "ag3"}));
  EXPECT_EQ((*agents)[1].hosts, (std::vector<std::string>{"m2.example", "10.0.0.2"}));
  EXPECT_TRUE((*agents)[2].hosts.empty());
}

TEST(TlsAgentsFlagTest, RefusesInvalidValues) {
  for (const std::string& bad :
       std::vector<std::string>{"", ",", "ag1,", "@h", "ag 1", "-ag", "ag1@", "ag1@bad host",
                                "ag1+@h", "ag1,ag1", "ag1+ag1", "a:b", std::string(65, 'a')}) {
    auto agents = server::ParseTlsAgents(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(agents.status())) << bad;
    EXPECT_THAT(Msg(agents.status()), StartsWith("--tls-agents: ")) << bad;
  }
}

}  // namespace
}  // namespace vipu::tls
