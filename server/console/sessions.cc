// The console's login sessions and their CSRF tokens.
#include "server/console/sessions.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <vector>

#include "absl/strings/escaping.h"

namespace vipu::server::console {

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

absl::StatusOr<Session> Sessions::Create(const auth::Caller& caller, absl::Time now) {
  auto id = RandomToken(32);
  if (!id.ok()) return id.status();
  auto csrf = RandomToken(32);
  if (!csrf.ok()) return csrf.status();
  Session s{*id, *csrf, caller, now};
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

}  // namespace vipu::server::console
