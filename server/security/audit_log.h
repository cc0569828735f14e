// The audit log of vipu-server: one JSON line per mutating call, allowed or
// refused, appended to a file that is rotated by size (docs/security.md,
// "Audit log").
//
// Each line is written with one write(2) on a file opened with O_APPEND and
// no user-space buffer: a line is in the kernel before the call's status is
// sent, so it survives a crash or kill -9 of the server. It is not fsynced:
// a power failure may lose the last lines (one more disk flush per change
// would double the cost of every mutating call, whose database commit is
// already synchronous).
#ifndef VIPU_SERVER_SECURITY_AUDIT_LOG_H_
#define VIPU_SERVER_SECURITY_AUDIT_LOG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu::server {

// One audited call.
struct AuditRecord {
  absl::Time time;
  std::string user;     // as claimed in vipu-user-id; empty when none was sent
  std::string peer;     // "ipv4:127.0.0.1:5000"
  std::string action;   // the RPC's full name, "/vipuadmin.UserAdminService/CreateUser"
  std::string object;   // the id the request names; empty when it names none
  std::string result;   // gRPC code name: "OK", "PERMISSION_DENIED", ...
  std::string message;  // the status message; empty on success
};

// `record` as one line of JSON with a trailing newline: keys time (RFC 3339,
// UTC, milliseconds), user, peer, action, object, result, message.
std::string FormatAuditLine(const AuditRecord& record);

struct AuditLogOptions {
  std::string path;
  // A line that would take the file beyond this size goes to a fresh file;
  // the current one becomes path.1 (path.1 becomes path.2, and so on). Each
  // file holds at least one line, however long. Must be > 0.
  int64_t max_bytes = int64_t{10} << 20;
  // Rotated files kept: path.1 .. path.keep; older ones are deleted. Must be
  // at least 1 (0 would throw the trail away at each rotation).
  int keep = 5;
};

// An open audit log file. Thread-safe: lines from concurrent calls never
// interleave. The object owns its file descriptor.
class AuditLog {
 public:
  // Opens (creating, mode 0600) `options.path` for appending. INVALID_ARGUMENT
  // for an empty path or a bad max_bytes/keep; FAILED_PRECONDITION naming the
  // path when it cannot be opened for writing.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(const AuditLogOptions& options);
  ~AuditLog();
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one line, rotating first when the line would not fit. INTERNAL
  // naming the path when the write or the rotation fails (the line is lost;
  // the next Append tries again).
  absl::Status Append(const AuditRecord& record);

  const std::string& path() const { return options_.path; }
  // Lines that could not be written so far (logs, tests).
  uint64_t FailuresForTesting() const;

 private:
  explicit AuditLog(AuditLogOptions options) : options_(std::move(options)) {}
  absl::Status RotateLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status OpenLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AuditLogOptions options_;
  mutable vipu::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  int64_t size_ ABSL_GUARDED_BY(mu_) = 0;  // of the current file
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_AUDIT_LOG_H_
