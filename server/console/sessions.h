// Console logins: an opaque random session id (the cookie) maps to the
// Caller the AccessControl gate admitted at login and to a CSRF token that
// every changing request must echo in a header. Sessions end after an idle
// timeout, at logout, or when the table is full (the least recently used
// goes), so memory stays bounded. Thread-safe.
#ifndef VIPU_SERVER_CONSOLE_SESSIONS_H_
#define VIPU_SERVER_CONSOLE_SESSIONS_H_

#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/security/caller.h"

namespace vipu::server {

struct Session {
  std::string id;    // cookie value: 32 random bytes, hex
  std::string csrf;  // X-CSRF-Token value: 32 random bytes, hex
  Caller caller;
  absl::Time last_used;
};

class Sessions {
 public:
  Sessions(size_t capacity, absl::Duration idle_timeout)
      : capacity_(capacity), idle_timeout_(idle_timeout) {}

  // A new session for `caller`. INTERNAL when the system has no randomness.
  absl::StatusOr<Session> Create(const Caller& caller, absl::Time now);
  // The live session `id` (touched), or nullopt.
  std::optional<Session> Find(const std::string& id, absl::Time now);
  void Remove(const std::string& id);
  size_t size() const;

 private:
  const size_t capacity_;
  const absl::Duration idle_timeout_;
  mutable vipu::Mutex mu_;
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
};

// Hex of `bytes` random bytes from OpenSSL's CSPRNG; INTERNAL on failure.
absl::StatusOr<std::string> RandomToken(size_t bytes);

// Compares without leaking where they differ through timing.
bool TokensEqual(const std::string& a, const std::string& b);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_SESSIONS_H_
