// Checks a user id and access key against the users table. A verified pair
// is cached in memory keyed by (user, SHA-256 of the key), so PBKDF2 runs
// once per key and process, not once per call. Failures are not cached.
// Borrows the store, which must outlive it; owns the cache.
// Thread-safe. A pair verified while Forget ran for any user is not cached,
// so a key rotated or a user changed during a slow verification never
// comes back from the cache.
#ifndef VIPU_SERVER_SECURITY_AUTHENTICATOR_H_
#define VIPU_SERVER_SECURITY_AUTHENTICATOR_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "server/security/caller.h"
#include "storage/store.h"

namespace vipu::server {

class Authenticator {
 public:
  // Cached pairs before the cache is emptied (bounds memory).
  static constexpr size_t kMaxCached = 4096;

  explicit Authenticator(storage::Store* store) : store_(store) {}

  // UNAUTHENTICATED naming the metadata key when the user id or the key is
  // missing, or when the user is unknown or the key is wrong (one message
  // for both, so that user ids cannot be probed). INTERNAL for storage errors.
  absl::StatusOr<Caller> Authenticate(const std::string& user_id, const std::string& access_key);

  // Drops the cached pairs of `user_id`. Call it after the user's row has
  // changed (removed, new key, allocations or admin flag): the next call
  // reads the row again.
  void Forget(const std::string& user_id);

  // Verifications that ran PBKDF2 (tests of the cache).
  uint64_t SlowVerificationsForTesting() const;

 private:
  storage::Store* store_;
  mutable vipu::Mutex mu_;
  std::map<std::string, Caller> cache_ ABSL_GUARDED_BY(mu_);  // "user\0sha256(key)"
  uint64_t slow_verifications_ ABSL_GUARDED_BY(mu_) = 0;
  // Calls of Forget so far: a verification that began before one does not
  // cache its result (it may have read the row before it changed).
  uint64_t forgets_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_AUTHENTICATOR_H_
