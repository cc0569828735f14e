// RateLimiter: one token bucket per caller key, idle buckets dropped.
#include "server/security/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "absl/strings/str_cat.h"

namespace vipu::server {

absl::StatusOr<std::unique_ptr<RateLimiter>> RateLimiter::Create(double rate_per_second,
                                                                 double burst) {
  constexpr double kMax = 1e6;
  if (!std::isfinite(rate_per_second) || rate_per_second < 0 || rate_per_second > kMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rate-limit-per-second: must be in 0..1000000 (0: off), got ", rate_per_second));
  }
  if (!std::isfinite(burst) || burst < 0 || burst > kMax || (burst > 0 && burst < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rate-limit-burst: must be 0 (same as the rate) or in 1..1000000, got ", burst));
  }
  if (burst == 0) burst = std::max(1.0, rate_per_second);
  return std::unique_ptr<RateLimiter>(new RateLimiter(rate_per_second, burst));
}

bool RateLimiter::Allow(const std::string& key, absl::Time now) {
  if (!enabled()) return true;
  vipu::MutexLock lock(&mu_);
  auto it = buckets_.find(key);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxKeys) DropIdle(now);
    it = buckets_.emplace(key, TokenBucket(rate_, burst_, now)).first;
  }
  return it->second.TryTake(now);
}

void RateLimiter::DropIdle(absl::Time now) {
  // A full bucket behaves exactly like a new one: dropping it changes nothing.
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    it = it->second.Available(now) >= burst_ ? buckets_.erase(it) : std::next(it);
  }
}

}  // namespace vipu::server
