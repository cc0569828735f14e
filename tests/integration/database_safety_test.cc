// The database: a damaged file or a newer schema stops the server with a
// clear message; vipu-admin backup makes an online copy a server can start
// from.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "vipu_admin.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

// A valid database with partitions, made by a short-lived simulated server.
std::unique_ptr<ServerProcess> ServerWithPartition() {
  auto server = ServerProcess::Start("pod16");
  CommandResult r = server->Vipu({"create", "partition", "kept", "--size", "4"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return server;
}

TEST(DatabaseSafetyTest, FileThatIsNotADatabaseIsRefused) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/vipu.db") << std::string(8192, 'x');
  CommandResult r =
      RunCommand({VIPU_SERVER_BIN, "--db", dir + "/vipu.db", "--listen", "127.0.0.1:0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot open database " + dir + "/vipu.db"));
  RemoveTree(dir);
}

TEST(DatabaseSafetyTest, CorruptPagesFailQuickCheckAndAreRefused) {
  auto server = ServerWithPartition();
  const std::string db = server->db_path();
  server->Stop();
  // Overwrite the second page onward (the tables) with garbage; the header
  // page stays valid so SQLite opens the file and quick_check must catch it.
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string garbage(4096 * 3, '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  std::filesystem::remove(db + "-wal");
  std::filesystem::remove(db + "-shm");
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--db", db, "--listen", "127.0.0.1:0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot open database"));
}

TEST(DatabaseSafetyTest, NewerSchemaIsRefusedNamingTheVersions) {
  auto server = ServerWithPartition();
  const std::string db = server->db_path();
  server->Stop();
  CommandResult set = RunCommand({"/usr/bin/sqlite3", db, "PRAGMA user_version = 999;"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--db", db, "--listen", "127.0.0.1:0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("999"));
}

TEST(BackupTest, OnlineCopyStartsASecondServerWithThePartitions) {
  auto server = ServerWithPartition();
  const std::string copy = server->dir() + "/backup/copy.db";
  std::filesystem::create_directories(server->dir() + "/backup");
  CommandResult r = server->VipuAdmin({"backup", copy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("backup (" + copy + "): success."));
  ASSERT_TRUE(std::filesystem::exists(copy));
  // The first server keeps running and serving.
  EXPECT_EQ(server->Vipu({"create", "partition", "after", "--size", "4"}).exit_code, 0);

  const int port = FreePort();
  Daemon second({VIPU_SERVER_BIN, "--db", copy, "--listen", absl::StrCat("127.0.0.1:", port),
                 "--reconcile-window-ms", "100", "--ready-file", server->dir() + "/ready2"},
                server->dir() + "/second.log");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(server->dir() + "/ready2"); },
                      absl::Seconds(30)))
      << ReadFile(server->dir() + "/second.log");
  CommandResult list = RunCommand({VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port",
                                   std::to_string(port), "list", "partitions"},
                                  {{"HOME", server->home()}});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("kept"));
  EXPECT_THAT(list.out, ::testing::Not(HasSubstr("after")));  // made after the copy
}

TEST(BackupTest, CliRefusesRelativeAndMissingPaths) {
  auto server = ServerProcess::Start("pod4");
  CommandResult r = server->VipuAdmin({"backup", "relative.db"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("FILE: must be an absolute path"));
  r = server->VipuAdmin({"backup"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("missing FILE"));
}

struct BadBackup {
  std::string path;  // "{dir}" is replaced by the server's directory
  grpc::StatusCode code;
  std::string message;
};

// Readable test names in ctest.
void PrintTo(const BadBackup& p, std::ostream* os) { *os << "'" << p.path << "'"; }

class BackupRpcTest : public ::testing::TestWithParam<BadBackup> {};

TEST_P(BackupRpcTest, ServerRefusesEveryInvalidPath) {
  auto server = ServerProcess::Start("pod4");
  std::string path = GetParam().path;
  if (size_t at = path.find("{dir}"); at != std::string::npos) path.replace(at, 5, server->dir());
  auto stub = vipuadmin::AdminService::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  vipuadmin::BackupRequest request;
  request.set_path(path);
  vipuadmin::BackupReply reply;
  grpc::Status s = stub->Backup(&context, request, &reply);
  EXPECT_EQ(s.error_code(), GetParam().code) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(GetParam().message));
  // The live database is intact and still served.
  EXPECT_EQ(server->Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Paths, BackupRpcTest,
    ::testing::Values(
        BadBackup{"", grpc::StatusCode::INVALID_ARGUMENT, "path: must not be empty"},
        BadBackup{"copy.db", grpc::StatusCode::INVALID_ARGUMENT, "path: must be absolute"},
        BadBackup{"{dir}/", grpc::StatusCode::INVALID_ARGUMENT, "path: must name a file"},
        BadBackup{"{dir}/home", grpc::StatusCode::INVALID_ARGUMENT, "is a directory"},
        BadBackup{"{dir}/no/such/dir/copy.db", grpc::StatusCode::FAILED_PRECONDITION,
                  "does not exist"},
        BadBackup{"{dir}/vipu.db", grpc::StatusCode::INVALID_ARGUMENT, "is the live database"},
        BadBackup{"{dir}/vipu.db.lock", grpc::StatusCode::INVALID_ARGUMENT,
                  "a file of the live database"}));

}  // namespace
}  // namespace vipu::testing
