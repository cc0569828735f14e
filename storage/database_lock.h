// The one-writer rule of the database: a vipu-server holds an exclusive
// flock on `<db>.lock` beside its --db file for as long as it runs, so a
// second server (or `vipu-server --init`) on the same file refuses to start
// instead of driving the same agents from a second copy of the state, and
// `vipu-admin migrate` copies a file no server is changing.
#ifndef VIPU_STORAGE_DATABASE_LOCK_H_
#define VIPU_STORAGE_DATABASE_LOCK_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace vipu::storage {

// The lock file of the database `db`: `<db>.lock`.
std::string DatabaseLockPath(const std::string& db);

// Owns the open lock file; the lock lasts until the object is destroyed or
// the process dies (the kernel releases a flock with its last descriptor, so
// a kill -9 frees it too). The descriptor is O_CLOEXEC: the agent processes
// the server starts do not inherit it and cannot keep the database locked
// after the server has gone. The file holds the holder's process id, for the
// message a second server prints; it is never removed, because removing a
// lock file races with a process that has just opened it. Not thread-safe;
// one thread acquires and destroys it.
class DatabaseLock {
 public:
  // Takes the lock of `db` without waiting. FAILED_PRECONDITION naming the
  // database and the holder's pid when another process holds it; the lock
  // file's directory must exist.
  static absl::StatusOr<std::unique_ptr<DatabaseLock>> Acquire(const std::string& db);
  ~DatabaseLock();

  DatabaseLock(const DatabaseLock&) = delete;
  DatabaseLock& operator=(const DatabaseLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  DatabaseLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_DATABASE_LOCK_H_
