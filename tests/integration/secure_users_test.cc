// Secure-mode users on real processes: IPU attributes per allocation, update user, audit log.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/secure_pod.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;
namespace fs = std::filesystem;

// The audit log's lines, each parsed; a line that does not parse fails the test.
std::vector<Json> AuditLines(const std::string& path) {
  std::vector<Json> out;
  for (absl::string_view line : absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty())) {
    Json j = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << line;
    out.push_back(std::move(j));
  }
  return out;
}

class SecureUsersTest : public SecurePodTest {
 protected:
  // Two allocations of pod16: a1 = ag1, ag2 and a2 = ag3, ag4.
  void SplitIntoTwoAllocations() {
    ASSERT_EQ(Admin({"remove", "allocation", "default"}).exit_code, 0);
    CommandResult a1 =
        Admin({"create", "allocation", "a1", "--cluster", "pod16", "--agents", "ag1,ag2"});
    ASSERT_EQ(a1.exit_code, 0) << a1.err;
    CommandResult a2 =
        Admin({"create", "allocation", "a2", "--cluster", "pod16", "--agents", "ag3,ag4"});
    ASSERT_EQ(a2.exit_code, 0) << a2.err;
  }
  // Creates `id` and returns its key from the first line `create user`
  // prints. Runs in work_, where the command writes ID.vipu-cli.hcl.
  std::string CreateUser(const std::string& id, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "cd \"$0\" && shift && exec \"$@\"",
                                     work_,
                                     "ignored",
                                     VIPU_ADMIN_BIN,
                                     "--api-host",
                                     "127.0.0.1",
                                     "--api-port",
                                     std::to_string(server_->port())};
    argv = Join(Join(argv, As("root", root_key_)), Join({"create", "user", id}, flags));
    CommandResult r = RunCommand(argv, {{"HOME", server_->home()}});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(absl::StrCat(work_, "/", id, ".vipu-cli.hcl")));
    const std::string prefix = absl::StrCat("create user (", id, "): success. Access key is '");
    std::string first = r.out.substr(0, r.out.find('\n'));
    if (!absl::StartsWith(first, prefix) || !absl::EndsWith(first, "'.")) {
      ADD_FAILURE() << r.out;
      return "";
    }
    return first.substr(prefix.size(), first.size() - prefix.size() - 2);
  }
  // The agents `list ipu-attrs` shows to `user`.
  std::set<std::string> VisibleAgents(const std::string& user, const std::string& key) {
    CommandResult r = server_->Vipu(Join(As(user, key), {"--showjson", "list", "ipu-attrs"}));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> agents;
    Json j = Json::parse(r.out, nullptr, false);
    if (j.is_discarded() || !j.contains("entries")) return agents;
    for (const Json& e : j["entries"]) agents.insert(e.value("agent", ""));
    return agents;
  }
  // A UserAdminService stub over mutual TLS, for requests the CLI refuses
  // to send.
  std::unique_ptr<vipuadmin::UserAdminService::Stub> UserAdminStub() const {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadFile(tls_ + "/client/ca.pem");
    ssl.pem_cert_chain = ReadFile(tls_ + "/client/cert.pem");
    ssl.pem_private_key = ReadFile(tls_ + "/client/key.pem");
    return vipuadmin::UserAdminService::NewStub(
        grpc::CreateChannel(server_->address(), grpc::SslCredentials(ssl)));
  }
  void AuthenticateAsRoot(grpc::ClientContext* ctx) const {
    ctx->AddMetadata("vipu-user-id", "root");
    ctx->AddMetadata("vipu-access-key", root_key_);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }
};

TEST_F(SecureUsersTest, IpuAttributesShowOnlyTheAgentsOfTheCallersAllocations) {
  StartSecure();
  SplitIntoTwoAllocations();
  const std::string alice = CreateUser("alice", {"--allocations", "a1"});
  const std::string bob = CreateUser("bob", {"--allocations", "a2"});
  ASSERT_FALSE(alice.empty() || bob.empty());

  EXPECT_EQ(VisibleAgents("alice", alice), (std::set<std::string>{"ag1", "ag2"}));
  EXPECT_EQ(VisibleAgents("bob", bob), (std::set<std::string>{"ag3", "ag4"}));
  EXPECT_EQ(VisibleAgents("root", root_key_), (std::set<std::string>{"ag1", "ag2", "ag3", "ag4"}));

  // Asking for an agent outside one's allocations reads like an unknown
  // agent: ids beyond the grant cannot be probed.
  CommandResult other =
      server_->Vipu(Join(As("alice", alice), {"list", "ipu-attrs", "--agents", "ag3"}));
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_THAT(other.err, HasSubstr("agent 'ag3' is not connected or not in an allocation"));
  CommandResult unknown =
      server_->Vipu(Join(As("alice", alice), {"list", "ipu-attrs", "--agents", "ag99"}));
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("agent 'ag99' is not connected or not in an allocation"));
  CommandResult own =
      server_->Vipu(Join(As("alice", alice), {"list", "ipu-attrs", "--agents", "ag2"}));
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_THAT(own.out, HasSubstr("ag2"));
}

TEST_F(SecureUsersTest, UpdateUserChangesGrantsAndRotatesTheKeyDurably) {
  StartSecure();
  SplitIntoTwoAllocations();
  const std::string alice = CreateUser("alice", {"--allocations", "a1"});
  ASSERT_FALSE(alice.empty());
  // Used once, so the server holds alice's verified key in its cache.
  ASSERT_EQ(VisibleAgents("alice", alice), (std::set<std::string>{"ag1", "ag2"}));

  CommandResult moved = Admin({"update", "user", "alice", "--allocations", "a2"});
  ASSERT_EQ(moved.exit_code, 0) << moved.err;
  EXPECT_EQ(moved.out, "update user (alice): success. Admin: no, allocations: a2.\n");
  EXPECT_EQ(VisibleAgents("alice", alice), (std::set<std::string>{"ag3", "ag4"}));

  CommandResult admin = Admin({"update", "user", "alice", "--admin", "--all-allocations"});
  ASSERT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_EQ(admin.out, "update user (alice): success. Admin: yes, allocations: all.\n");
  EXPECT_EQ(server_->VipuAdmin(Join(As("alice", alice), {"list", "agents"})).exit_code, 0);

  CommandResult rotated = Admin({"update", "user", "alice", "--rotate-key", "--no-admin"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  std::vector<std::string> lines = absl::StrSplit(rotated.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << rotated.out;
  EXPECT_EQ(lines[0], "update user (alice): success. Admin: no, allocations: all.");
  const std::string prefix = "New access key is '";
  ASSERT_THAT(lines[1], StartsWith(prefix));
  const std::string new_key =
      lines[1].substr(prefix.size(), lines[1].find('\'', prefix.size()) - prefix.size());
  ASSERT_FALSE(new_key.empty());
  EXPECT_NE(new_key, alice);
  // The old key stops working at once, although it was cached.
  CommandResult old_key = server_->Vipu(Join(As("alice", alice), {"list", "partitions"}));
  EXPECT_EQ(old_key.exit_code, 1);
  EXPECT_THAT(old_key.err, HasSubstr("unauthenticated"));
  EXPECT_EQ(server_->Vipu(Join(As("alice", new_key), {"list", "partitions"})).exit_code, 0);
  EXPECT_THAT(server_->VipuAdmin(Join(As("alice", new_key), {"list", "agents"})).err,
              HasSubstr("permission denied"));

  // Acknowledged changes survive kill -9.
  server_->Kill();
  server_->Restart();
  EXPECT_EQ(VisibleAgents("alice", new_key), (std::set<std::string>{"ag1", "ag2", "ag3", "ag4"}));
  EXPECT_THAT(server_->Vipu(Join(As("alice", alice), {"list", "partitions"})).err,
              HasSubstr("unauthenticated"));
  // The secure server's default audit log, next to the database.
  std::vector<Json> audit = AuditLines(server_->dir() + "/audit.log");
  int updates = 0;
  for (const Json& line : audit) {
    if (line.value("action", "") == "/vipuadmin.UserAdminService/UpdateUser") ++updates;
  }
  EXPECT_EQ(updates, 3);
}

TEST_F(SecureUsersTest, UpdateUserRefusesInvalidRequestsAndChangesNothing) {
  StartSecure();
  SplitIntoTwoAllocations();
  const std::string alice = CreateUser("alice", {"--allocations", "a1"});
  ASSERT_FALSE(alice.empty());
  const std::string users_before = Admin({"--showjson", "list", "users"}).out;

  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"alice"}, 2, "nothing to change"},
           {{"alice", "--admin", "--no-admin"}, 2, "--no-admin: contradicts --admin"},
           {{"alice", "--allocations", "a1", "--all-allocations"}, 2, "--all-allocations"},
           {{"alice", "--allocations", ""}, 2, "--allocations"},
           {{"alice", "--allocations", "a1,,a2"}, 2, "--allocations: empty"},
           {{"alice", "--allocations", "bad/id"}, 2, "--allocations"},
           {{"bad id", "--admin"}, 2, "user id"},
           {{}, 2, "missing user id"},
           {{"ghost", "--admin"}, 1, "user 'ghost' not found"},
           {{"alice", "--allocations", "a1,a1"}, 1, "listed twice"},
           {{"alice", "--allocations", "a9"}, 1, "allocation 'a9' not found"},
           {{"root", "--no-admin"}, 1, "last admin"},
       }) {
    CommandResult r = Admin(Join({"update", "user"}, c.args));
    const std::string label = absl::StrJoin(c.args, " ");
    EXPECT_EQ(r.exit_code, c.exit_code) << label << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << label;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // A user may not update anybody, itself included.
  CommandResult self =
      server_->VipuAdmin(Join(As("alice", alice), {"update", "user", "alice", "--admin"}));
  EXPECT_EQ(self.exit_code, 1);
  EXPECT_THAT(self.err, HasSubstr("permission denied"));

  // What the CLI never sends, straight to the server.
  auto stub = UserAdminStub();
  {
    grpc::ClientContext ctx;
    AuthenticateAsRoot(&ctx);
    vipuadmin::UpdateUserRequest empty;
    empty.set_user_id("alice");
    vipuadmin::UpdateUserReply reply;
    grpc::Status s = stub->UpdateUser(&ctx, empty, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("nothing to change"));
  }
  {
    grpc::ClientContext ctx;
    AuthenticateAsRoot(&ctx);
    vipuadmin::UpdateUserRequest stray;
    stray.set_user_id("alice");
    stray.add_allocations("a2");
    vipuadmin::UpdateUserReply reply;
    grpc::Status s = stub->UpdateUser(&ctx, stray, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("set_allocations"));
  }
  for (const auto& [user, allocation, field] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"bad id", "a1", "user id"}, {"", "a1", "user id"}, {"alice", "a/1", "allocations"}}) {
    grpc::ClientContext ctx;
    AuthenticateAsRoot(&ctx);
    vipuadmin::UpdateUserRequest bad;
    bad.set_user_id(user);
    bad.set_set_allocations(true);
    bad.add_allocations(allocation);
    vipuadmin::UpdateUserReply reply;
    grpc::Status s = stub->UpdateUser(&ctx, bad, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << user << " " << allocation;
    EXPECT_THAT(s.error_message(), HasSubstr(field));
  }
  {
    grpc::ClientContext ctx;
    AuthenticateAsRoot(&ctx);
    vipuadmin::UpdateUserRequest last;
    last.set_user_id("root");
    last.set_admin(false);
    vipuadmin::UpdateUserReply reply;
    EXPECT_EQ(stub->UpdateUser(&ctx, last, &reply).error_code(),
              grpc::StatusCode::FAILED_PRECONDITION);
  }
  EXPECT_EQ(Admin({"--showjson", "list", "users"}).out, users_before);
  EXPECT_EQ(VisibleAgents("alice", alice), (std::set<std::string>{"ag1", "ag2"}));
}

TEST_F(SecureUsersTest, AllowedAndRefusedMutatingCallsEachWriteOneAuditLine) {
  const std::string path = work_ + "/audit/trail.log";
  fs::create_directories(work_ + "/audit");
  StartSecure({"--audit-log", path});
  const std::string bob = CreateUser("bob", {});
  ASSERT_FALSE(bob.empty());
  const size_t start = AuditLines(path).size();

  // One call of each kind, then exactly one line for it.
  auto expect_line = [&](const std::string& label, const std::vector<std::string>& cli,
                         bool admin_cli, const std::string& user, const std::string& action,
                         const std::string& object, const std::string& result) {
    const size_t before = AuditLines(path).size();
    CommandResult r = admin_cli ? server_->VipuAdmin(cli) : server_->Vipu(cli);
    EXPECT_EQ(r.exit_code, result == "OK" ? 0 : 1) << label << ": " << r.err;
    std::vector<Json> lines = AuditLines(path);
    ASSERT_EQ(lines.size(), before + 1) << label;
    Json line = lines.back();  // a missing key reads as null, never out of bounds
    EXPECT_EQ(line["user"], user) << label;
    EXPECT_EQ(line["action"], action) << label;
    EXPECT_EQ(line["object"], object) << label;
    EXPECT_EQ(line["result"], result) << label;
    EXPECT_EQ(line["message"].get<std::string>().empty(), result == "OK") << label;
    EXPECT_THAT(line["peer"].get<std::string>(), StartsWith("ipv4:127.0.0.1:")) << label;
    const std::string time = line["time"].get<std::string>();
    EXPECT_EQ(time.size(), 24u) << time;  // 2026-01-02T03:04:05.678Z
    EXPECT_EQ(time.back(), 'Z') << time;
    EXPECT_EQ(time[10], 'T') << time;
  };
  expect_line("allowed create", Join(As("bob", bob), {"create", "partition", "pb", "--size", "1"}),
              false, "bob", "/virmgrpc.UserService/CreatePartition", "pb", "OK");
  expect_line("refused admin call",
              Join(As("bob", bob), {"create", "allocation", "x1", "--cluster", "pod16"}), true,
              "bob", "/vipuadmin.AdminService/CreateAllocation", "x1", "PERMISSION_DENIED");
  expect_line("wrong key", Join(As("mallory", "guess"), {"remove", "partition", "pb"}), false,
              "mallory", "/virmgrpc.UserService/RemovePartition", "pb", "UNAUTHENTICATED");
  expect_line("user admin", Join(As("root", root_key_), {"update", "user", "bob", "--admin"}), true,
              "root", "/vipuadmin.UserAdminService/UpdateUser", "bob", "OK");
  expect_line("not found", Join(As("root", root_key_), {"remove", "user", "ghost"}), true, "root",
              "/vipuadmin.UserAdminService/RemoveUser", "ghost", "NOT_FOUND");
  expect_line("allowed remove", Join(As("bob", bob), {"remove", "partition", "pb"}), false, "bob",
              "/virmgrpc.UserService/RemovePartition", "pb", "OK");

  // Reads leave no line, allowed or refused.
  const size_t before_reads = AuditLines(path).size();
  EXPECT_EQ(server_->Vipu(Join(As("bob", bob), {"list", "partitions"})).exit_code, 0);
  EXPECT_EQ(Admin({"list", "users"}).exit_code, 0);
  EXPECT_EQ(server_->Vipu(Join(As("mallory", "guess"), {"list", "partitions"})).exit_code, 1);
  EXPECT_EQ(AuditLines(path).size(), before_reads);
  EXPECT_GT(before_reads, start);
  // The trail holds hashes of nothing and keys of nobody.
  EXPECT_THAT(ReadFile(path), Not(HasSubstr(bob)));
  EXPECT_THAT(ReadFile(path), Not(HasSubstr(root_key_)));
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AuditLogConfigTest, InvalidValuesAreRefusedAtStartNamingTheFlag) {
  const std::string dir = MakeTempDir();
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  };
  std::ofstream(dir + "/not-a-dir") << "x";
  for (const Case& c : std::vector<Case>{
           {{"--audit-log-max-bytes", "0"}, 2, "--audit-log-max-bytes: must be greater than 0"},
           {{"--audit-log-max-bytes", "-5"}, 2, "--audit-log-max-bytes: must be greater than 0"},
           {{"--audit-log-max-bytes", "ten"}, 2, "--audit-log-max-bytes"},
           {{"--audit-log-keep", "0"}, 2, "--audit-log-keep: must be in 1..1000"},
           {{"--audit-log-keep", "-1"}, 2, "--audit-log-keep: must be in 1..1000"},
           {{"--audit-log", dir + "/not-a-dir/audit.log"}, 1, dir + "/not-a-dir/audit.log"},
       }) {
    CommandResult r = RunCommand(
        Join({VIPU_SERVER_BIN, "--db", dir + "/vipu.db", "--listen", "127.0.0.1:0"}, c.args));
    const std::string label = absl::StrJoin(c.args, " ");
    EXPECT_EQ(r.exit_code, c.exit_code) << label << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << label;
  }
  // The same key in the configuration file is checked the same way.
  std::ofstream(dir + "/bad.hcl") << "audit-log-keep = \"0\"\n";
  CommandResult file = RunCommand({VIPU_SERVER_BIN, "--config", dir + "/bad.hcl", "--db",
                                   dir + "/vipu.db", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(file.exit_code, 2) << file.err;
  EXPECT_THAT(file.err, HasSubstr("--audit-log-keep"));
  RemoveTree(dir);
}

TEST(AuditLogConfigTest, ConfigFileTurnsTheAuditLogOnWithoutSecure) {
  const std::string dir = MakeTempDir();
  const std::string path = dir + "/audit.log";
  std::ofstream(dir + "/server.hcl") << "audit-log = \"" << path << "\"\n"
                                     << "audit-log-max-bytes = \"100000\"\n";
  auto server = ServerProcess::Start("pod4", {"--config", dir + "/server.hcl"});
  CommandResult created = server->Vipu({"create", "partition", "p1", "--size", "1"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  std::vector<Json> lines = AuditLines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["user"], "");  // nobody claims a name without --secure
  EXPECT_EQ(lines[0]["action"], "/virmgrpc.UserService/CreatePartition");
  EXPECT_EQ(lines[0]["object"], "p1");
  EXPECT_EQ(lines[0]["result"], "OK");
  server.reset();
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
