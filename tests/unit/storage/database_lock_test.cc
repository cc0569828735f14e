// DatabaseLock: one holder per database file, a second refused naming the
// database and the holder's pid, the lock free again once the holder goes,
// and a missing directory reported.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/database_lock.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using ::testing::HasSubstr;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DatabaseLockTest, SecondHolderIsRefusedNamingDatabaseAndPid) {
  test::TempDir dir("vipu-lock");
  const std::string db = dir.File("vipu.db");
  auto first = DatabaseLock::Acquire(db);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)->path(), db + ".lock");
  EXPECT_EQ(Read(db + ".lock"), absl::StrCat(getpid(), "\n"));

  // Another open file description conflicts even in the same process.
  auto second = DatabaseLock::Acquire(db);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(absl::StrCat("database ", db, " is in use by another vipu-server (pid ",
                                     getpid(), ", lock ", db, ".lock)")));
  // The refused attempt left the holder's pid alone.
  EXPECT_EQ(Read(db + ".lock"), absl::StrCat(getpid(), "\n"));

  // Another database beside it is its own.
  EXPECT_TRUE(DatabaseLock::Acquire(dir.File("other.db")).ok());

  first->reset();
  EXPECT_EQ(Read(db + ".lock"), "");
  auto third = DatabaseLock::Acquire(db);
  EXPECT_TRUE(third.ok()) << third.status();
}

TEST(DatabaseLockTest, LockFileIsCloseOnExec) {
  test::TempDir dir("vipu-lock");
  auto lock = DatabaseLock::Acquire(dir.File("vipu.db"));
  ASSERT_TRUE(lock.ok()) << lock.status();
  // The descriptor that points at the lock file carries FD_CLOEXEC.
  bool found = false;
  for (int fd = 0; fd < 1024; ++fd) {
    char target[512] = {};
    const std::string link = absl::StrCat("/proc/self/fd/", fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0 || std::string(target, n) != (*lock)->path()) continue;
    found = true;
    EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  }
  EXPECT_TRUE(found);
}

TEST(DatabaseLockTest, MissingDirectoryIsReportedNamingTheDatabase) {
  test::TempDir dir("vipu-lock");
  const std::string db = dir.File("no/such/vipu.db");
  auto lock = DatabaseLock::Acquire(db);
  ASSERT_FALSE(lock.ok());
  EXPECT_THAT(std::string(lock.status().message()), HasSubstr("cannot lock database " + db));
}

}  // namespace
}  // namespace vipu::storage
