// The console's login sessions and their CSRF tokens.
#include "server/console/sessions.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "base/status_macros.h"

namespace vipu::server {

absl::StatusOr<std::string> RandomToken(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  if (RAND_bytes(buf.data(), static_cast<int>(buf.size())) != 1) {
    return absl::InternalError("console: no randomness for a session token");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

bool TokensEqual(const std::string& a, const std::string& b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::StatusOr<Session> Sessions::Create(const Caller& caller, absl::Time now) {
  ASSIGN_OR_RETURN(std::string id, RandomToken(32));
  ASSIGN_OR_RETURN(std::string csrf, RandomToken(32));
  Session s{std::move(id), std::move(csrf), caller, now};
  vipu::MutexLock lock(&mu_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    it = now - it->second.last_used > idle_timeout_ ? sessions_.erase(it) : std::next(it);
  }
  while (!sessions_.empty() && sessions_.size() >= capacity_) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
    sessions_.erase(oldest);
  }
  sessions_[s.id] = s;
  return s;
}

std::optional<Session> Sessions::Find(const std::string& id, absl::Time now) {
  vipu::MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (now - it->second.last_used > idle_timeout_) {
    sessions_.erase(it);
    return std::nullopt;
  }
  it->second.last_used = now;
  return it->second;
}

void Sessions::Remove(const std::string& id) {
  vipu::MutexLock lock(&mu_);
  sessions_.erase(id);
}

size_t Sessions::size() const {
  vipu::MutexLock lock(&mu_);
  return sessions_.size();
}

}  // namespace vipu::server
