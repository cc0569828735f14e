// A token bucket: `rate` tokens per second up to `burst`; a call takes one.
// Not thread-safe (RateLimiter locks around it). Time is passed in so tests
// need no clock.
#ifndef VIPU_SERVER_SECURITY_TOKEN_BUCKET_H_
#define VIPU_SERVER_SECURITY_TOKEN_BUCKET_H_

#include "absl/time/time.h"

namespace vipu::server {

class TokenBucket {
 public:
  // Starts full. rate > 0, burst >= 1 (RateLimiter validates).
  TokenBucket(double rate_per_second, double burst, absl::Time now)
      : rate_(rate_per_second), burst_(burst), tokens_(burst), last_(now) {}

  // Refills for the time since the last call, then takes a token if one is
  // there. A clock that goes backwards refills nothing.
  bool TryTake(absl::Time now);
  // Tokens after refilling to `now` (does not take one).
  double Available(absl::Time now);

 private:
  void Refill(absl::Time now);
  double rate_;
  double burst_;
  double tokens_;
  absl::Time last_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_TOKEN_BUCKET_H_
