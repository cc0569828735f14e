// Authenticator: checks a user id and access key, caching verified pairs by key hash.
#include "server/security/authenticator.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/security/access_key.h"
#include "wire/metadata_keys.h"

namespace vipu::server {
namespace {

std::string CacheKey(const std::string& user_id, const std::string& access_key) {
  return absl::StrCat(user_id, std::string(1, '\0'), Sha256Hex(access_key));
}

// Spends the same PBKDF2 time for an unknown user as for a known one.
const std::string& DummyHash() {
  static const std::string* hash = new std::string(*HashAccessKey("dummy-key"));
  return *hash;
}

}  // namespace

absl::StatusOr<Caller> Authenticator::Authenticate(const std::string& user_id,
                                                   const std::string& access_key) {
  if (user_id.empty()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "unauthenticated: ", wire::kUserIdMetadata,
        ": missing; this server runs with --secure: give --api-user-id and --api-access-key"));
  }
  if (access_key.empty()) {
    return absl::UnauthenticatedError(absl::StrCat("unauthenticated: ", wire::kAccessKeyMetadata,
                                                   ": missing for user '", user_id,
                                                   "'; give --api-access-key"));
  }
  const std::string cache_key = CacheKey(user_id, access_key);
  uint64_t forgets_before = 0;
  {
    vipu::MutexLock lock(&mu_);
    if (auto it = cache_.find(cache_key); it != cache_.end()) return it->second;
    forgets_before = forgets_;
  }
  std::optional<storage::UserRecord> user;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto u = txn.GetUser(user_id);
    if (u.ok()) {
      user = *std::move(u);
      return absl::OkStatus();
    }
    return absl::IsNotFound(u.status()) ? absl::OkStatus() : u.status();
  });
  RETURN_IF_ERROR(s);
  bool verified = VerifyAccessKey(access_key, user ? user->key_hash : DummyHash());
  {
    vipu::MutexLock lock(&mu_);
    ++slow_verifications_;
  }
  if (!user || !verified) {
    return absl::UnauthenticatedError(absl::StrCat("unauthenticated: unknown user '", user_id,
                                                   "' or wrong ", wire::kAccessKeyMetadata,
                                                   " (--api-access-key)"));
  }
  Caller caller;
  caller.user_id = user->id;
  caller.authenticated = true;
  caller.is_admin = user->is_admin;
  caller.allocations = user->allocations;
  vipu::MutexLock lock(&mu_);
  if (forgets_ != forgets_before) return caller;  // the row may have changed since it was read
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_[cache_key] = caller;
  return caller;
}

void Authenticator::Forget(const std::string& user_id) {
  const std::string prefix = absl::StrCat(user_id, std::string(1, '\0'));
  vipu::MutexLock lock(&mu_);
  ++forgets_;
  for (auto it = cache_.lower_bound(prefix);
       it != cache_.end() && it->first.compare(0, prefix.size(), prefix) == 0;) {
    it = cache_.erase(it);
  }
}

uint64_t Authenticator::SlowVerificationsForTesting() const {
  vipu::MutexLock lock(&mu_);
  return slow_verifications_;
}

}  // namespace vipu::server
