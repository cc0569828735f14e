// A full disk under the single server: the database lives on a small tmpfs
// mounted in a private mount namespace, and a filler file takes every free
// page of it. A create must be refused with RESOURCE_EXHAUSTED naming the
// disk and change nothing, while reads go on; freeing the filler lets
// creates commit again without a restart; a SIGKILL in the full state loses
// nothing acknowledged, leaves a file that passes PRAGMA integrity_check,
// and the server starts again on the still full disk.
//
// The test process is multithreaded and cannot unshare itself: a holder
// process (unshare, then mount, then sleep) keeps the namespace, the server
// joins it through nsenter, and the test reaches the tmpfs through the
// holder's root in /proc. The host's own mount table is never touched.
// Needs root; skipped, saying why, where the namespace or the mount is
// refused.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <linux/magic.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Room for the server's start (about 150 KB of database, WAL and shared
// memory) and a few creates; the filler takes the rest.
constexpr char kTmpfsSize[] = "2m";

// The executable `name` on PATH, or "" when there is none.
std::string FindProgram(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    const std::string candidate = absl::StrCat(dir, "/", name);
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The first column of every row `sql` answers on the database file `db`,
// or one line saying what failed.
std::vector<std::string> Query(const std::string& db, const char* sql) {
  sqlite3* raw = nullptr;
  if (sqlite3_open_v2(db.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    std::vector<std::string> error = {absl::StrCat("cannot open ", db, ": ", sqlite3_errmsg(raw))};
    sqlite3_close(raw);
    return error;
  }
  std::vector<std::string> rows;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(raw, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      rows.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
    }
  }
  if (sqlite3_errcode(raw) != SQLITE_OK && sqlite3_errcode(raw) != SQLITE_DONE) {
    rows = {absl::StrCat(sql, ": ", sqlite3_errmsg(raw))};
  }
  sqlite3_finalize(stmt);
  sqlite3_close(raw);
  return rows;
}

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) VIPU_CANNOT_RUN_HERE() << "needs root: mounts a tmpfs in a private mount namespace";
    const std::string unshare = FindProgram("unshare");
    nsenter_ = FindProgram("nsenter");
    if (unshare.empty() || nsenter_.empty()) VIPU_CANNOT_RUN_HERE() << "unshare or nsenter is not installed";
    // Canonical, as the server's messages name the file.
    dir_ = std::filesystem::canonical(MakeTempDir()).string();
    disk_ = dir_ + "/disk";
    std::filesystem::create_directories(disk_);
    std::filesystem::create_directories(dir_ + "/home");
    holder_ = std::make_unique<Daemon>(
        std::vector<std::string>{unshare, "--mount", "--propagation", "private", "--", "/bin/sh",
                                 "-c",
                                 absl::StrCat("mount -t tmpfs -o size=", kTmpfsSize,
                                              " tmpfs \"$0\" && exec sleep infinity"),
                                 disk_},
        dir_ + "/holder.log");
    // Mounted once the holder's view of the directory is a tmpfs on a
    // device other than the host's directory.
    struct stat host {};
    ASSERT_EQ(stat(disk_.c_str(), &host), 0);
    bool mounted = false;
    WaitFor(
        [&] {
          if (!holder_->running()) return true;
          struct stat seen {};
          struct statfs fs {};
          mounted = stat(InNamespace(disk_).c_str(), &seen) == 0 && seen.st_dev != host.st_dev &&
                    statfs(InNamespace(disk_).c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;
          return mounted;
        },
        absl::Seconds(20));
    if (!mounted) {
      VIPU_CANNOT_RUN_HERE() << "no private mount namespace with a tmpfs (unshare/mount refused): "
                   << ReadFile(dir_ + "/holder.log");
    }
  }

  void TearDown() override {
    // The server first: the namespace, and the tmpfs with it, goes once its
    // last process has.
    server_.reset();
    holder_.reset();
    if (!dir_.empty()) RemoveTree(dir_);
  }

  // `path` of the holder's mount namespace, from this process.
  std::string InNamespace(const std::string& path) const {
    return absl::StrCat("/proc/", holder_->pid(), "/root", path);
  }
  std::string db() const { return disk_ + "/vipu.db"; }
  std::string ServerLog() const { return "server log:\n" + ReadFile(dir_ + "/server.log"); }

  // vipu-server --simulate inside the namespace, on the database of the
  // tmpfs; returns once it is ready.
  void StartServer() {
    const std::string ready = dir_ + "/ready";
    std::filesystem::remove(ready);
    server_ = std::make_unique<Daemon>(
        // --root and --wd: the holder's root and directory too, since
        // joining a mount namespace resets both to the namespace's own (in
        // a chroot, such as CI's fresh root, that is not where the test is).
        std::vector<std::string>{nsenter_,
                                 "-t",
                                 std::to_string(holder_->pid()),
                                 "-m",
                                 "--root",
                                 "--wd",
                                 "--",
                                 VIPU_SERVER_BIN,
                                 "--simulate",
                                 "pod16",
                                 "--listen",
                                 "127.0.0.1:0",
                                 "--db",
                                 db(),
                                 "--ready-file",
                                 ready,
                                 "--log-level",
                                 "warn",
                                 "--heartbeat-ms",
                                 "200"},
        dir_ + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return !server_->running() || std::filesystem::exists(ready); },
                        absl::Seconds(60)));
    ASSERT_TRUE(server_->running()) << "vipu-server exited; " << ServerLog();
    const std::string text(absl::StripAsciiWhitespace(ReadFile(ready)));
    std::vector<std::string> parts = absl::StrSplit(text, ':');
    ASSERT_GE(parts.size(), 2u) << text;
    ASSERT_TRUE(absl::SimpleAtoi(parts.back(), &port_)) << text;
    stub_ = virmgrpc::UserService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

  static void Deadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  }

  grpc::Status Create(const std::string& id) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::CreatePartitionRequest request;
    request.mutable_requirements()->set_id(id);
    request.mutable_requirements()->set_size(1);
    virmgrpc::CreatePartitionReply reply;
    return stub_->CreatePartition(&ctx, request, &reply);
  }

  grpc::Status GetStatus(const std::string& id, virmgrpc::PartitionStatus* status) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::GetPartitionStatusRequest request;
    request.set_partition_id(id);
    virmgrpc::GetPartitionStatusReply reply;
    grpc::Status s = stub_->GetPartitionStatus(&ctx, request, &reply);
    *status = reply.status();
    return s;
  }

  // Once ACTIVE, the outcome is recorded: no write of the server is left in
  // flight that a full disk could refuse behind the test's back.
  bool WaitActive(const std::string& id) {
    return WaitFor(
        [&] {
          virmgrpc::PartitionStatus status;
          return GetStatus(id, &status).ok() && status.ready_state() == virmgrpc::PS_ACTIVE;
        },
        absl::Seconds(20));
  }

  // The ids ListPartitions answers; the status of the call in `s`.
  std::set<std::string> ListIds(grpc::Status* s) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    virmgrpc::ListPartitionsRequest request;
    virmgrpc::ListPartitionsReply reply;
    *s = stub_->ListPartitions(&ctx, request, &reply);
    std::set<std::string> ids;
    for (const virmgrpc::Partition& p : reply.partitions()) ids.insert(p.id());
    return ids;
  }

  CommandResult Vipu(const std::vector<std::string>& args) const {
    return RunCommand(
        Join({VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port", std::to_string(port_)}, args),
        {{"HOME", dir_ + "/home"}});
  }

  // Writes the filler until the tmpfs refuses it (ENOSPC): not one free
  // page is left, so the next commit, which appends to the WAL, has none.
  void FillDisk() {
    const std::string filler = InNamespace(disk_ + "/filler");
    int fd = open(filler.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << filler << ": " << std::strerror(errno);
    const std::string block(64 * 1024, 'x');
    int error = 0;
    while (error == 0) {
      if (write(fd, block.data(), block.size()) < 0) error = errno;
    }
    close(fd);
    ASSERT_EQ(error, ENOSPC) << std::strerror(error);
    struct statfs fs {};
    ASSERT_EQ(statfs(InNamespace(disk_).c_str(), &fs), 0);
    ASSERT_EQ(fs.f_bavail, 0u) << "free blocks left on the tmpfs";
  }

  void FreeDisk() {
    ASSERT_TRUE(std::filesystem::remove(InNamespace(disk_ + "/filler")));
    struct statfs fs {};
    ASSERT_EQ(statfs(InNamespace(disk_).c_str(), &fs), 0);
    ASSERT_GT(fs.f_bavail, 0u);
  }

  // The refusal of a create on the full disk: the code, and words that name
  // the disk and what to do.
  void ExpectDiskFull(const grpc::Status& s) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << s.error_code() << " " << s.error_message() << "\n"
        << ServerLog();
    EXPECT_THAT(s.error_message(), HasSubstr("the disk of the database " + db() + " is full"));
    EXPECT_THAT(s.error_message(), HasSubstr("free space there and retry"));
  }

  std::string nsenter_;
  std::string dir_;
  std::string disk_;
  std::unique_ptr<Daemon> holder_;
  std::unique_ptr<Daemon> server_;
  int port_ = 0;
  std::unique_ptr<virmgrpc::UserService::Stub> stub_;
};

TEST_F(DiskFullTest, RefusesCreatesKeepsReadingRecoversAndLosesNothingAcknowledged) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::set<std::string> acknowledged;
  for (const char* id : {"before-1", "before-2", "before-3"}) {
    grpc::Status s = Create(id);
    ASSERT_TRUE(s.ok()) << id << ": " << s.error_message();
    acknowledged.insert(id);
    ASSERT_TRUE(WaitActive(id)) << id << "; " << ServerLog();
  }

  ASSERT_NO_FATAL_FAILURE(FillDisk());
  const pid_t pid = server_->pid();
  ExpectDiskFull(Create("refused-1"));
  // A second refusal: the first broke nothing.
  ExpectDiskFull(Create("refused-2"));
  CommandResult cli = Vipu({"create", "partition", "refused-cli", "--size", "1"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_THAT(cli.err, HasSubstr("create partition (refused-cli): failure: the disk of the "
                                 "database " +
                                 db() + " is full; free space there and retry"))
      << cli.out;

  // Reads go on, and show nothing of the refused creates.
  grpc::Status listed;
  EXPECT_EQ(ListIds(&listed), acknowledged);
  EXPECT_TRUE(listed.ok()) << listed.error_message();
  virmgrpc::PartitionStatus status;
  grpc::Status got = GetStatus("before-1", &status);
  EXPECT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(status.ready_state(), virmgrpc::PS_ACTIVE);
  EXPECT_EQ(GetStatus("refused-1", &status).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(HealthCheck(absl::StrCat("127.0.0.1:", port_)), 1) << "SERVING";

  // Room again: the same process commits.
  ASSERT_NO_FATAL_FAILURE(FreeDisk());
  grpc::Status s = Create("after-free");
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << ServerLog();
  acknowledged.insert("after-free");
  EXPECT_TRUE(WaitActive("after-free"));
  EXPECT_TRUE(server_->running());
  EXPECT_EQ(server_->pid(), pid) << "no restart";
  EXPECT_EQ(ListIds(&listed), acknowledged);

  // Full again, and killed in that state: the file holds every acknowledged
  // partition and nothing refused, and is sound.
  ASSERT_NO_FATAL_FAILURE(FillDisk());
  ExpectDiskFull(Create("refused-3"));
  server_->Kill();
  const std::string copy = dir_ + "/copy";
  std::filesystem::create_directories(copy);
  // A copy, database and WAL, taken while no process has the file open.
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    std::filesystem::copy_file(InNamespace(db() + suffix), copy + "/vipu.db" + suffix, ec);
    ASSERT_FALSE(ec) << "vipu.db" << suffix << ": " << ec.message();
  }
  EXPECT_THAT(Query(copy + "/vipu.db", "PRAGMA integrity_check"), ElementsAre("ok"));
  const std::vector<std::string> stored = Query(copy + "/vipu.db", "SELECT id FROM partitions");
  EXPECT_EQ(std::set<std::string>(stored.begin(), stored.end()), acknowledged);

  // Started again on the same, still full, disk: every acknowledged
  // partition is there and nothing refused; creates wait for room.
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_EQ(ListIds(&listed), acknowledged) << ServerLog();
  EXPECT_TRUE(listed.ok()) << listed.error_message();
  for (const std::string& id : acknowledged) EXPECT_TRUE(WaitActive(id)) << id;
  ExpectDiskFull(Create("refused-4"));
  ASSERT_NO_FATAL_FAILURE(FreeDisk());
  s = Create("after-restart");
  EXPECT_TRUE(s.ok()) << s.error_message() << "\n" << ServerLog();
  EXPECT_TRUE(WaitActive("after-restart"));
}

}  // namespace
}  // namespace vipu::testing
