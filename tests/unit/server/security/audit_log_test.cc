// AuditLog: the JSON line, appending across reopen, size rotation and its limits, threads.
#include "server/security/audit_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

AuditRecord Record(const std::string& object) {
  AuditRecord r;
  r.time = absl::FromUnixMillis(1700000000123);
  r.user = "alice";
  r.peer = "ipv4:127.0.0.1:5000";
  r.action = "/virmgrpc.UserService/CreatePartition";
  r.object = object;
  r.result = "PERMISSION_DENIED";
  r.message = "permission denied: \"quoted\"\nnext line";
  return r;
}

TEST(AuditLogTest, LineIsOneJsonObjectWithEveryField) {
  const std::string line = FormatAuditLine(Record("p1"));
  ASSERT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line, whatever the message holds
  auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["time"], "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(json["user"], "alice");
  EXPECT_EQ(json["peer"], "ipv4:127.0.0.1:5000");
  EXPECT_EQ(json["action"], "/virmgrpc.UserService/CreatePartition");
  EXPECT_EQ(json["object"], "p1");
  EXPECT_EQ(json["result"], "PERMISSION_DENIED");
  EXPECT_EQ(json["message"], "permission denied: \"quoted\"\nnext line");
}

TEST(AuditLogTest, AppendsAcrossReopenWithPrivateMode) {
  test::TempDir dir("vipu-audit");
  AuditLogOptions options;
  options.path = dir.File("audit.log");
  {
    auto log = AuditLog::Open(options);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Append(Record("a")).ok());
  }
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Record("b")).ok());
  auto lines = Lines(options.path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(lines[0])["object"], "a");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["object"], "b");
  struct stat st;
  ASSERT_EQ(::stat(options.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AuditLogTest, RotatesBySizeAndKeepsOnlyKOldFiles) {
  test::TempDir dir("vipu-audit");
  AuditLogOptions options;
  options.path = dir.File("audit.log");
  const size_t line_size = FormatAuditLine(Record("x0")).size();
  options.max_bytes = static_cast<int64_t>(2 * line_size);  // two lines per file
  options.keep = 2;
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok()) << log.status();
  for (int i = 0; i < 9; ++i) {
    ASSERT_TRUE((*log)->Append(Record("x" + std::to_string(i))).ok());
  }
  // x0 x1 | x2 x3 | x4 x5 | x6 x7 | x8: the current file holds x8, .1 x6 x7,
  // .2 x4 x5; older files are gone.
  auto current = Lines(options.path);
  auto one = Lines(options.path + ".1");
  auto two = Lines(options.path + ".2");
  ASSERT_EQ(current.size(), 1u);
  ASSERT_EQ(one.size(), 2u);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(nlohmann::json::parse(current[0])["object"], "x8");
  EXPECT_EQ(nlohmann::json::parse(one[0])["object"], "x6");
  EXPECT_EQ(nlohmann::json::parse(two[1])["object"], "x5");
  EXPECT_FALSE(Exists(options.path + ".3"));
}

TEST(AuditLogTest, LineLongerThanTheLimitStillGetsWritten) {
  test::TempDir dir("vipu-audit");
  AuditLogOptions options;
  options.path = dir.File("audit.log");
  options.max_bytes = 10;
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Record("a")).ok());
  ASSERT_TRUE((*log)->Append(Record("b")).ok());
  EXPECT_EQ(Lines(options.path).size(), 1u);
  EXPECT_EQ(Lines(options.path + ".1").size(), 1u);
  EXPECT_EQ((*log)->FailuresForTesting(), 0u);
}

TEST(AuditLogTest, RefusesBadOptionsNamingThem) {
  test::TempDir dir("vipu-audit");
  AuditLogOptions options;
  options.path = "";
  EXPECT_EQ(AuditLog::Open(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.path = dir.File("audit.log");
  for (int64_t bad : {int64_t{0}, int64_t{-1}}) {
    options.max_bytes = bad;
    auto log = AuditLog::Open(options);
    EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(log.status().message()), HasSubstr("--audit-log-max-bytes"));
  }
  options.max_bytes = 100;
  for (int bad : {0, -3}) {
    options.keep = bad;
    auto log = AuditLog::Open(options);
    EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(log.status().message()), HasSubstr("--audit-log-keep"));
  }
  EXPECT_FALSE(Exists(options.path));  // nothing was created by the refusals
  options.keep = 1;
  options.path = dir.File("no/such/dir/audit.log");
  auto missing = AuditLog::Open(options);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(options.path));
}

TEST(AuditLogTest, ConcurrentAppendsNeverInterleave) {
  test::TempDir dir("vipu-audit");
  AuditLogOptions options;
  options.path = dir.File("audit.log");
  options.max_bytes = 4096;
  options.keep = 1000;
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok()) << log.status();
  constexpr int kThreads = 4, kPerThread = 100;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE((*log)->Append(Record(std::to_string(t) + "-" + std::to_string(i))).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  size_t total = 0;
  for (int k = 0; k <= 1000; ++k) {
    const std::string path = k == 0 ? options.path : options.path + "." + std::to_string(k);
    if (!Exists(path)) break;
    for (const std::string& line : Lines(path)) {
      EXPECT_FALSE(nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false).is_discarded())
          << line;
      ++total;
    }
  }
  EXPECT_EQ(total, static_cast<size_t>(kThreads * kPerThread));
}

}  // namespace
}  // namespace vipu::server
