// DatabaseLock: the exclusive flock on `<db>.lock` that makes a vipu-server the only writer.
#include "storage/database_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vipu::storage {
namespace {

// The pid the holder wrote into the lock file, or 0 when the file is empty
// (the holder has the lock but has not written yet) or unreadable.
pid_t HolderPid(int fd) {
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  pid_t pid = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(buf, n)), &pid)) return 0;
  return pid;
}

}  // namespace

std::string DatabaseLockPath(const std::string& db) { return db + ".lock"; }

absl::StatusOr<std::unique_ptr<DatabaseLock>> DatabaseLock::Acquire(const std::string& db) {
  std::string path = DatabaseLockPath(db);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("cannot lock database ", db, ": cannot open ",
                                                      path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const pid_t holder = error == EWOULDBLOCK ? HolderPid(fd) : 0;
    close(fd);
    if (error != EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot lock database ", db, ": flock ", path, ": ", std::strerror(error)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("database ", db, " is in use by another vipu-server (",
                     holder > 0 ? absl::StrCat("pid ", holder) : std::string("pid unknown"),
                     ", lock ", path, "); stop that server first, or give this one another --db"));
  }
  // Ours now: replace whatever pid an earlier holder left behind.
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot lock database ", db, ": write ", path, ": ", std::strerror(error)));
  }
  return std::unique_ptr<DatabaseLock>(new DatabaseLock(std::move(path), fd));
}

DatabaseLock::~DatabaseLock() {
  // Still held here, so no other holder's pid can be lost; an empty file
  // says nobody runs on the database.
  if (ftruncate(fd_, 0) != 0) {
    // Only the pid stays behind; the lock itself goes with the descriptor.
  }
  close(fd_);
}

}  // namespace vipu::storage
