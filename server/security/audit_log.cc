// AuditLog: JSON lines appended with one write(2) each, rotated by size into path.1 .. path.K.
#include "server/security/audit_log.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/json_writer.h"

namespace vipu::server {
namespace {

std::string ErrnoText(int err) { return std::strerror(err); }

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string FormatAuditLine(const AuditRecord& r) {
  JsonWriter json;
  json.BeginObject()
      .Field("time", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", r.time, absl::UTCTimeZone()))
      .Field("user", r.user)
      .Field("peer", r.peer)
      .Field("action", r.action)
      .Field("object", r.object)
      .Field("result", r.result)
      .Field("message", r.message)
      .EndObject();
  std::string line = json.Take();
  line.push_back('\n');
  return line;
}

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const AuditLogOptions& options) {
  if (options.path.empty()) {
    return absl::InvalidArgumentError("--audit-log: must name a file, got an empty path");
  }
  if (options.max_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--audit-log-max-bytes: must be greater than 0, got ", options.max_bytes));
  }
  if (options.keep < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--audit-log-keep: must be at least 1, got ", options.keep));
  }
  std::unique_ptr<AuditLog> log(new AuditLog(options));
  vipu::MutexLock lock(&log->mu_);
  if (absl::Status s = log->OpenLocked(); !s.ok()) {
    return absl::FailedPreconditionError(s.message());
  }
  return log;
}

AuditLog::~AuditLog() {
  vipu::MutexLock lock(&mu_);
  if (fd_ >= 0) ::close(fd_);
}

absl::Status AuditLog::OpenLocked() {
  fd_ = ::open(options_.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    return absl::InternalError(absl::StrCat("--audit-log ", options_.path,
                                            ": cannot open for appending: ", ErrnoText(errno)));
  }
  struct stat st;
  size_ = ::fstat(fd_, &st) == 0 ? st.st_size : 0;
  return absl::OkStatus();
}

absl::Status AuditLog::RotateLocked() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  const std::string& path = options_.path;
  // path.K-1 -> path.K, ..., path -> path.1; rename replaces the oldest.
  for (int i = options_.keep - 1; i >= 1; --i) {
    const std::string from = absl::StrCat(path, ".", i);
    if (!Exists(from)) continue;
    if (::rename(from.c_str(), absl::StrCat(path, ".", i + 1).c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("--audit-log ", path, ": cannot rotate ", from, ": ", ErrnoText(errno)));
    }
  }
  if (::rename(path.c_str(), absl::StrCat(path, ".1").c_str()) != 0 && errno != ENOENT) {
    return absl::InternalError(
        absl::StrCat("--audit-log ", path, ": cannot rotate: ", ErrnoText(errno)));
  }
  return OpenLocked();
}

absl::Status AuditLog::Append(const AuditRecord& record) {
  const std::string line = FormatAuditLine(record);
  vipu::MutexLock lock(&mu_);
  absl::Status s;
  if (fd_ >= 0 && size_ > 0 && size_ + static_cast<int64_t>(line.size()) > options_.max_bytes) {
    s = RotateLocked();
  } else if (fd_ < 0) {
    s = OpenLocked();  // a failed rotation or open earlier
  }
  if (s.ok()) {
    // One write: O_APPEND keeps the line whole even if another process
    // appends to the same file.
    const ssize_t n = ::write(fd_, line.data(), line.size());
    if (n == static_cast<ssize_t>(line.size())) {
      size_ += n;
      return absl::OkStatus();
    }
    s = absl::InternalError(absl::StrCat("--audit-log ", options_.path, ": cannot write: ",
                                         n < 0 ? ErrnoText(errno) : std::string("short write")));
    if (n > 0) size_ += n;
  }
  ++failures_;
  return s;
}

uint64_t AuditLog::FailuresForTesting() const {
  vipu::MutexLock lock(&mu_);
  return failures_;
}

}  // namespace vipu::server
