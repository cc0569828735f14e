// The secure mode against real processes: --tls-init, mutual TLS, users and
// access keys, allocations and shared partitions, the admin gate, the
// loopback rule and the rate limit (docs/security.md).
#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/secure_pod.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// Runs a CLI in `cwd` (create user writes ID.vipu-cli.hcl there).
CommandResult RunIn(const std::string& cwd, const std::string& binary,
                    const std::vector<std::string>& args, const std::string& home) {
  std::vector<std::string> argv = {"/bin/sh", "-c",      "cd \"$0\" && shift && exec \"$@\"",
                                   cwd,       "ignored", binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, {{"HOME", home}});
}

bool OneLine(const std::string& text) {
  return !text.empty() && text.find('\n') == text.size() - 1;
}

class SecureTest : public SecurePodTest {
 protected:
  // Creates `id` and returns its key, checking the three lines `create user` prints.
  std::string CreateUser(const std::string& id, const std::vector<std::string>& flags) {
    std::vector<std::string> args =
        Join({"--api-host", "127.0.0.1", "--api-port", std::to_string(server_->port())},
             Join(As("root", root_key_), Join({"create", "user", id}, flags)));
    CommandResult r = RunIn(work_, VIPU_ADMIN_BIN, args, server_->home());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
    EXPECT_EQ(lines.size(), 3u) << r.out;
    if (lines.size() != 3) return "";
    std::string prefix = absl::StrCat("create user (", id, "): success. Access key is '");
    EXPECT_TRUE(absl::StartsWith(lines[0], prefix)) << lines[0];
    EXPECT_EQ(lines[1], absl::StrCat("vipu configuration file for the user '", id,
                                     "' written: ", id, ".vipu-cli.hcl"));
    EXPECT_EQ(lines[2], absl::StrCat("Use 'vipu --config ", id,
                                     ".vipu-cli.hcl' to switch to the user context."));
    std::string key = lines[0].substr(prefix.size());
    return key.substr(0, key.size() - 2);  // "'."
  }
  CommandResult VipuWithConfig(const std::string& id, const std::vector<std::string>& args) {
    return RunCommand(Join({VIPU_CLI_BIN, "--config", work_ + "/" + id + ".vipu-cli.hcl"}, args),
                      {{"HOME", server_->home()}});
  }
};

TEST_F(SecureTest, TlsInitWritesTheSpecLinesAndPrivateKeys) {
  const std::string dir = work_ + "/certs";
  CommandResult r = TlsInit(dir, {"--tls-hosts", "ctl.example,10.9.8.7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, absl::StrCat("Generated server TLS certificates in the directory: ", dir,
                                "/server\nGenerated client TLS certificates in the directory: ",
                                dir, "/client\n"));
  for (const char* f : {"ca.pem", "server/cert.pem", "server/key.pem", "server/ca.pem",
                        "client/cert.pem", "client/key.pem", "client/ca.pem"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  struct stat st;
  ASSERT_EQ(stat((dir + "/client/key.pem").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  CommandResult bad = TlsInit(work_ + "/bad", {"--tls-hosts", "bad host"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--tls-hosts"));
}

TEST_F(SecureTest, UsersSeeOnlyTheirAllocationsAndPartitions) {
  StartSecure();
  // Two allocations instead of the simulator's default one.
  ASSERT_EQ(Admin({"remove", "allocation", "default"}).exit_code, 0);
  ASSERT_EQ(
      Admin({"create", "allocation", "a1", "--cluster", "pod16", "--agents", "ag1,ag2"}).exit_code,
      0);
  ASSERT_EQ(
      Admin({"create", "allocation", "a2", "--cluster", "pod16", "--agents", "ag3,ag4"}).exit_code,
      0);
  const std::string alice = CreateUser("alice", {"--allocations", "a1"});
  const std::string bob = CreateUser("bob", {"--allocations", "a2"});
  const std::string carol = CreateUser("carol", {"--allocations", "a1"});
  ASSERT_FALSE(alice.empty() || bob.empty() || carol.empty());

  // The written configuration works as is.
  CommandResult created = VipuWithConfig("alice", {"create", "partition", "pa", "--size", "4"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_THAT(VipuWithConfig("alice", {"list", "partitions"}).out, HasSubstr("pa"));
  // Flags work as well as the file.
  CommandResult flags = server_->Vipu(Join(As("alice", alice), {"list", "partitions"}));
  EXPECT_EQ(flags.exit_code, 0) << flags.err;
  EXPECT_THAT(flags.out, HasSubstr("pa"));

  // bob (allocation a2) neither sees nor touches pa, nor creates in a1.
  EXPECT_THAT(VipuWithConfig("bob", {"list", "partitions"}).out, Not(HasSubstr("pa")));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"remove", "partition", "pa"},
           {"reset", "partition", "pa"},
           {"get", "partition-status", "pa"},
           {"list", "partitions", "--allocation", "a1"},
           {"create", "partition", "pb", "--size", "1", "--allocation", "a1"}}) {
    CommandResult r = VipuWithConfig("bob", args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << " " << args[1];
    EXPECT_TRUE(OneLine(r.err)) << r.err;
    EXPECT_THAT(r.err, HasSubstr("permission denied")) << args[0] << " " << args[1];
  }
  // Nothing changed: pa is still there and ACTIVE, pb does not exist.
  CommandResult after = server_->Vipu(Join(As("root", root_key_), {"list", "partitions"}));
  EXPECT_THAT(after.out, HasSubstr("pa"));
  EXPECT_THAT(after.out, HasSubstr("ACTIVE"));
  EXPECT_THAT(after.out, Not(HasSubstr("pb")));
  EXPECT_THAT(ReadFile(server_->dir() + "/server.log"),
              HasSubstr("refused remove partition pa for bob"));

  // carol shares a1 with alice: sees shared partitions only.
  ASSERT_EQ(
      VipuWithConfig("alice", {"create", "partition", "ps", "--size", "2", "--shared"}).exit_code,
      0);
  CommandResult carol_list = VipuWithConfig("carol", {"list", "partitions"});
  EXPECT_THAT(carol_list.out, HasSubstr("ps"));
  EXPECT_THAT(carol_list.out, Not(HasSubstr("pa ")));
  EXPECT_EQ(VipuWithConfig("carol", {"get", "partition-status", "ps"}).exit_code, 0);
  EXPECT_EQ(VipuWithConfig("carol", {"remove", "partition", "pa"}).exit_code, 1);

  // The admin service needs an admin.
  CommandResult not_admin =
      RunCommand({VIPU_ADMIN_BIN, "--config", work_ + "/alice.vipu-cli.hcl", "list", "agents"},
                 {{"HOME", server_->home()}});
  EXPECT_EQ(not_admin.exit_code, 1);
  EXPECT_THAT(not_admin.err, HasSubstr("permission denied"));
  CommandResult users = Admin({"list", "users"});
  EXPECT_EQ(users.exit_code, 0) << users.err;
  EXPECT_THAT(users.out, HasSubstr("alice"));
  EXPECT_THAT(users.out, HasSubstr("root"));
  // Removing a user revokes its key at once.
  ASSERT_EQ(Admin({"remove", "user", "carol"}).exit_code, 0);
  EXPECT_THAT(VipuWithConfig("carol", {"list", "partitions"}).err, HasSubstr("unauthenticated"));
}

TEST_F(SecureTest, WrongKeysCertificatesAndPlaintextAreRefused) {
  StartSecure();
  CommandResult ok = server_->Vipu(Join(As("root", root_key_), {"list", "partitions"}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;

  CommandResult wrong = server_->Vipu(Join(As("root", "not-the-key"), {"list", "partitions"}));
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_TRUE(OneLine(wrong.err)) << wrong.err;
  EXPECT_THAT(wrong.err, HasSubstr("unauthenticated"));
  CommandResult none = server_->Vipu(Join(ClientTls(tls_), {"list", "partitions"}));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_THAT(none.err, HasSubstr("unauthenticated"));

  // No client certificate: the handshake fails.
  CommandResult no_cert =
      server_->Vipu({"--api-user-id", "root", "--api-access-key", root_key_, "--api-tls-ca",
                     tls_ + "/client/ca.pem", "list", "partitions"});
  EXPECT_EQ(no_cert.exit_code, 1);
  EXPECT_TRUE(OneLine(no_cert.err)) << no_cert.err;
  // A certificate from another CA.
  const std::string other = work_ + "/other";
  ASSERT_EQ(TlsInit(other).exit_code, 0);
  CommandResult untrusted =
      server_->Vipu(Join({"--api-user-id", "root", "--api-access-key", root_key_},
                         Join(ClientTls(other), {"list", "partitions"})));
  EXPECT_EQ(untrusted.exit_code, 1);
  // Plaintext.
  CommandResult plain =
      server_->Vipu({"--api-user-id", "root", "--api-access-key", root_key_, "list", "partitions"});
  EXPECT_EQ(plain.exit_code, 1);
}

TEST_F(SecureTest, ExpiredClientCertificateIsRefused) {
  // Same CA, but a client certificate that expired yesterday.
  const std::string expired = work_ + "/expired";
  fs::copy(tls_, expired, fs::copy_options::recursive);
  ASSERT_EQ(TlsInit(expired, {"--tls-validity-days", "0"}).exit_code, 0);
  StartSecure();
  CommandResult r = server_->Vipu(Join({"--api-user-id", "root", "--api-access-key", root_key_},
                                       Join(ClientTls(expired), {"list", "partitions"})));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(OneLine(r.err)) << r.err;
  CommandResult valid = server_->Vipu(Join(As("root", root_key_), {"list", "partitions"}));
  EXPECT_EQ(valid.exit_code, 0) << valid.err;
}

TEST(ListenPolicyTest, BeyondLoopbackNeedsSecureOrInsecure) {
  const std::string dir = MakeTempDir();
  CommandResult refused = RunCommand(
      {VIPU_SERVER_BIN, "--listen", "0.0.0.0:0", "--db", dir + "/vipu.db", "--simulate", "pod4"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("--listen 0.0.0.0:0"));
  EXPECT_THAT(refused.err, HasSubstr("--insecure"));
  EXPECT_FALSE(fs::exists(dir + "/vipu.db"));  // refused before anything started
  RemoveTree(dir);

  auto server = ServerProcess::Start("pod4", {"--user-api-listen", "0.0.0.0:0", "--insecure"});
  CommandResult r = server->Vipu({"list", "partitions"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(RateLimitTest, MutatingCallsBeyondTheBurstAreRefused) {
  auto server =
      ServerProcess::Start("pod4", {"--rate-limit-per-second", "0.01", "--rate-limit-burst", "2"});
  // Two changes pass (they fail for their own reason), the third is limited.
  for (int i = 0; i < 2; ++i) {
    CommandResult r = server->Vipu({"remove", "partition", "nope"});
    EXPECT_THAT(r.err, HasSubstr("not found"));
  }
  CommandResult limited = server->Vipu({"remove", "partition", "nope"});
  EXPECT_EQ(limited.exit_code, 1);
  EXPECT_THAT(limited.err, HasSubstr("rate limit"));
  // Reads are not limited.
  EXPECT_EQ(server->Vipu({"list", "partitions"}).exit_code, 0);
}

}  // namespace
}  // namespace vipu::testing
