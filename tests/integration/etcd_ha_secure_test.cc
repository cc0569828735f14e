// A secure highly available control plane as operators run it: one etcd
// member, two vipu-server members with --secure and one vipu-agent process
// proving its machines' ids with its certificate. Every call goes through
// the standby first: users are checked by the leader with the keys kept in
// etcd, agents by the names their certificate proved to the standby, and
// nobody but a member may speak for an agent.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/etcd_harness.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/ha_members.h"
#include "tests/integration/harness.h"
#include "vipu_agent.grpc.pb.h"
#include "wire/metadata_keys.h"

namespace vipu::testing {
namespace {

// Mutual TLS with the files of one --tls-init role directory.
std::shared_ptr<grpc::ChannelCredentials> TlsAs(const std::string& dir) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadFile(dir + "/ca.pem");
  ssl.pem_cert_chain = ReadFile(dir + "/cert.pem");
  ssl.pem_private_key = ReadFile(dir + "/key.pem");
  return grpc::SslCredentials(ssl);
}

class HaSecureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd binary";
    ha_ = std::make_unique<HaMembers>(kHaMembers);
    dir_ = ha_->dir();
    tls_ = dir_ + "/tls";
    CommandResult init = RunCommand(
        {VIPU_SERVER_BIN, "--tls-init", tls_, "--tls-agents", "ag1+ag2+ag3+ag4@127.0.0.1"});
    ASSERT_EQ(init.exit_code, 0) << init.err;
    absl::Status etcd = ha_->LaunchEtcd(1);
    ASSERT_TRUE(etcd.ok()) << etcd;
    // Roles are asked over mutual TLS with the CLI's certificate.
    ha_->set_credentials(TlsAs(tls_ + "/client"));
    for (int i = 0; i < kHaMembers; ++i) {
      ha_->StartMember(
          i, {"--secure", "--tls-dir", tls_, "--default-user-id", "root", "--audit-log",
              absl::StrCat(dir_, "/audit", i, ".log"), "--auto-add-agents", "--heartbeat-ms", "200",
              "--reconcile-window-ms", "1000"});
    }
    leader_ = ha_->AwaitAgreedLeader(absl::Seconds(60));
    ASSERT_GE(leader_, 0);
    standby_ = ha_->address(1 - leader_);
    // The first leader created the default admin and printed its key once.
    ASSERT_TRUE(WaitFor(
        [&] {
          for (int i = 0; i < kHaMembers; ++i) {
            for (const std::string& line :
                 std::vector<std::string>(absl::StrSplit(ReadFile(ha_->Log(i)), '\n'))) {
              if (absl::StartsWith(line, "Access key: '") && absl::EndsWith(line, "'")) {
                root_key_ = line.substr(13, line.size() - 14);
              }
            }
          }
          return !root_key_.empty();
        },
        absl::Seconds(30)));
    // The standby first: the agent's registrations are forwarded.
    const std::string agent_tls = tls_ + "/agents/ag1";
    agent_ = std::make_unique<Daemon>(
        std::vector<std::string>{VIPU_AGENT_BIN, "--server",
                                 absl::StrCat(standby_, ",", ha_->address(leader_)), "--agent-ids",
                                 "ag1,ag2,ag3,ag4", "--host", "127.0.0.1", "--tls-ca",
                                 agent_tls + "/ca.pem", "--tls-cert", agent_tls + "/cert.pem",
                                 "--tls-key", agent_tls + "/key.pem"},
        dir_ + "/agent.log");
  }

  void TearDown() override {
    agent_.reset();
    ha_.reset();
  }

  // `program` (vipu or vipu-admin) at `address` as `user` with `key`, run
  // in the test's directory, where `create user` writes its file.
  CommandResult As(const std::string& program, const std::string& address, const std::string& user,
                   const std::string& key, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "cd \"$0\" && shift && exec \"$@\"",
                                     dir_,
                                     "ignored",
                                     program,
                                     "--api-host",
                                     address,
                                     "--api-user-id",
                                     user,
                                     "--api-access-key",
                                     key,
                                     "--api-tls-ca",
                                     tls_ + "/client/ca.pem",
                                     "--api-tls-cert",
                                     tls_ + "/client/cert.pem",
                                     "--api-tls-key",
                                     tls_ + "/client/key.pem"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"HOME", dir_}});
  }
  CommandResult Admin(const std::string& address, const std::vector<std::string>& args) const {
    return As(VIPU_ADMIN_BIN, address, "root", root_key_, args);
  }

  // Heartbeat for `agent_id` sent to the leader with `credentials`, claiming
  // to be forwarded for `claimed` names.
  grpc::Status ForgedHeartbeat(const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                               const std::string& agent_id, const std::string& claimed) const {
    return HeartbeatClaiming(ha_->address(leader_), credentials, agent_id, claimed);
  }

  // Heartbeat for `agent_id` sent to `address` with `credentials`, claiming
  // to speak for the `claimed` names; to the leader it also says it was
  // forwarded, as a standby does.
  grpc::Status HeartbeatClaiming(const std::string& address,
                                 const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                                 const std::string& agent_id, const std::string& claimed) const {
    auto stub = vipuagent::AgentRegistry::NewStub(grpc::CreateChannel(address, credentials));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    if (address == ha_->address(leader_)) ctx.AddMetadata(wire::kForwardedByMetadata, standby_);
    ctx.AddMetadata(wire::kForwardedPeerMetadata, claimed);
    vipuagent::HeartbeatRequest request;
    request.set_agent_id(agent_id);
    vipuagent::HeartbeatReply reply;
    return stub->Heartbeat(&ctx, request, &reply);
  }

  std::unique_ptr<HaMembers> ha_;
  std::string dir_, tls_, root_key_, standby_;
  int leader_ = -1;
  std::unique_ptr<Daemon> agent_;
};

TEST_F(HaSecureTest, UsersAndAgentsAreCheckedThroughTheStandbyAndSurviveAFailover) {
  // Plaintext, or no certificate of the pod, does not get past the standby.
  CommandResult plain = RunCommand({VIPU_CLI_BIN, "--api-host", standby_, "list", "partitions"});
  EXPECT_NE(plain.exit_code, 0) << plain.out;
  EXPECT_NE(plain.err.find("closes plaintext connections like this: give --api-tls-ca"),
            std::string::npos)
      << plain.err;
  // A wrong key is the leader's refusal, passed back by the standby.
  CommandResult wrong = As(VIPU_CLI_BIN, standby_, "root", "not-the-key", {"list", "partitions"});
  EXPECT_NE(wrong.exit_code, 0) << wrong.out;
  EXPECT_NE(wrong.err.find("unauthenticated"), std::string::npos) << wrong.err;

  // The agent registered through the standby with the ids its certificate
  // names, so the cluster can be made of its machines.
  CommandResult cluster;
  ASSERT_TRUE(WaitFor(
      [&] {
        cluster = Admin(standby_, {"create", "cluster", "pod16", "--agents", "ag1,ag2,ag3,ag4"});
        return cluster.exit_code == 0;
      },
      absl::Seconds(60)))
      << cluster.out << cluster.err;
  CommandResult allocation =
      Admin(standby_, {"create", "allocation", "default", "--cluster", "pod16"});
  ASSERT_EQ(allocation.exit_code, 0) << allocation.out << allocation.err;

  // A user made through the standby works through it.
  CommandResult user = Admin(standby_, {"create", "user", "alice"});
  ASSERT_EQ(user.exit_code, 0) << user.out << user.err;
  const size_t at = user.out.find("Access key is '");
  ASSERT_NE(at, std::string::npos) << user.out;
  const std::string alice_key = user.out.substr(at + 15, user.out.find('\'', at + 15) - (at + 15));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/alice.vipu-cli.hcl"));
  CommandResult created =
      As(VIPU_CLI_BIN, standby_, "alice", alice_key, {"create", "partition", "p1", "--size", "4"});
  ASSERT_EQ(created.exit_code, 0) << created.out << created.err;

  // Only a member may speak for an agent: the CLI's certificate claiming to
  // forward ag1's call is refused; the server's own is believed.
  grpc::Status forged = ForgedHeartbeat(TlsAs(tls_ + "/client"), "ag1", "ag1");
  EXPECT_EQ(forged.error_code(), grpc::StatusCode::PERMISSION_DENIED) << forged.error_message();
  grpc::Status member = ForgedHeartbeat(TlsAs(tls_ + "/server"), "ag1", "ag1");
  EXPECT_TRUE(member.ok()) << member.error_message();
  grpc::Status other = ForgedHeartbeat(TlsAs(tls_ + "/server"), "ag1", "ag2");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED) << other.error_message();
  // A claim sent through the standby is the caller's, not the standby's: the
  // standby drops it and passes on only what the caller's certificate names.
  grpc::Status relayed = HeartbeatClaiming(standby_, TlsAs(tls_ + "/client"), "ag1", "ag1");
  EXPECT_EQ(relayed.error_code(), grpc::StatusCode::PERMISSION_DENIED) << relayed.error_message();
  grpc::Status agent = HeartbeatClaiming(standby_, TlsAs(tls_ + "/agents/ag1"), "ag1", "ag2");
  EXPECT_TRUE(agent.ok()) << agent.error_message();

  // SIGHUP makes a member serve the certificate now in its --tls-dir: the
  // same CA's, first one that expired yesterday (clients refuse every
  // member's handshake), then a valid one again (served through the
  // standby once more).
  const std::string valid = dir_ + "/valid", expired = dir_ + "/expired";
  std::filesystem::copy(tls_, valid, std::filesystem::copy_options::recursive);
  std::filesystem::copy(tls_, expired, std::filesystem::copy_options::recursive);
  CommandResult reissued =
      RunCommand({VIPU_SERVER_BIN, "--tls-init", expired, "--tls-validity-days", "0"});
  ASSERT_EQ(reissued.exit_code, 0) << reissued.err;
  auto serve = [&](const std::string& role_dir) {
    for (const char* name : {"cert.pem", "key.pem"}) {
      std::filesystem::copy_file(role_dir + "/" + name, tls_ + "/server/" + name,
                                 std::filesystem::copy_options::overwrite_existing);
    }
    for (int i = 0; i < kHaMembers; ++i) kill(ha_->Pid(i), SIGHUP);
  };
  serve(expired + "/server");
  CommandResult refused_by_client;
  EXPECT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < kHaMembers; ++i) {
          refused_by_client =
              As(VIPU_CLI_BIN, ha_->address(i), "alice", alice_key, {"list", "partitions"});
          if (refused_by_client.exit_code == 0) return false;
        }
        return true;
      },
      absl::Seconds(30)))
      << refused_by_client.out;
  EXPECT_NE(refused_by_client.err.find("certificate"), std::string::npos) << refused_by_client.err;
  serve(valid + "/server");
  CommandResult again;
  EXPECT_TRUE(WaitFor(
      [&] {
        again = As(VIPU_CLI_BIN, standby_, "alice", alice_key, {"list", "partitions"});
        return again.exit_code == 0;
      },
      absl::Seconds(30)))
      << again.err;

  // The leader dies; the users, keys and partitions are etcd's, not its.
  ha_->Kill(leader_);
  const std::string survivor = standby_;
  CommandResult list;
  ASSERT_TRUE(WaitFor(
      [&] {
        list = As(VIPU_CLI_BIN, survivor, "alice", alice_key, {"list", "partitions"});
        return list.exit_code == 0 && list.out.find("p1") != std::string::npos;
      },
      absl::Seconds(60)))
      << list.out << list.err;
  // Creates wait until the new leader has reconciled the agents.
  CommandResult second;
  EXPECT_TRUE(WaitFor(
      [&] {
        second = As(VIPU_CLI_BIN, survivor, "alice", alice_key,
                    {"create", "partition", "p2", "--size", "4"});
        return second.exit_code == 0;
      },
      absl::Seconds(60)))
      << second.out << second.err;
  CommandResult refused = As(VIPU_CLI_BIN, survivor, "alice", "wrong", {"list", "partitions"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("unauthenticated"), std::string::npos) << refused.err;
}

TEST(HaSecureFlags, MissingCertificatesStopTheMemberBeforeItServes) {
  const std::string dir = MakeTempDir();
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--etcd-endpoints",
                                absl::StrCat("http://127.0.0.1:", FreePort()), "--listen",
                                absl::StrCat("127.0.0.1:", FreePort()), "--config", "/dev/null",
                                "--secure", "--tls-dir", dir + "/none"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("--tls-dir: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--tls-init"), std::string::npos) << r.err;
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
