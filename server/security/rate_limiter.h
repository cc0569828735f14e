// One token bucket per key (user id, or peer address for anonymous callers).
// Limits mutating calls only; a refused call gets RESOURCE_EXHAUSTED.
// Owns its buckets. Thread-safe: every RPC thread asks, so Allow takes mu_.
#ifndef VIPU_SERVER_SECURITY_RATE_LIMITER_H_
#define VIPU_SERVER_SECURITY_RATE_LIMITER_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/security/token_bucket.h"

namespace vipu::server {

class RateLimiter {
 public:
  // Buckets kept before idle full ones are dropped (bounds memory when many
  // peers come and go).
  static constexpr size_t kMaxKeys = 10000;

  // rate 0: no limit (burst ignored). Otherwise rate in (0, 1e6] and burst
  // in [1, 1e6]; burst 0 means "same as rate, at least 1".
  // INVALID_ARGUMENT naming the flag (--rate-limit-per-second, --rate-limit-burst).
  static absl::StatusOr<std::unique_ptr<RateLimiter>> Create(double rate_per_second, double burst);

  bool enabled() const { return rate_ > 0; }
  // True when `key` may make one more mutating call at `now`.
  bool Allow(const std::string& key, absl::Time now);

 private:
  RateLimiter(double rate, double burst) : rate_(rate), burst_(burst) {}
  void DropIdle(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double rate_;
  const double burst_;
  vipu::Mutex mu_;
  std::map<std::string, TokenBucket> buckets_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_RATE_LIMITER_H_
