// TokenBucket: refill by elapsed time, take one token per call.
#include "server/security/token_bucket.h"

#include <algorithm>

namespace vipu::server {

void TokenBucket::Refill(absl::Time now) {
  if (now <= last_) return;
  tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * rate_);
  last_ = now;
}

bool TokenBucket::TryTake(absl::Time now) {
  Refill(now);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

double TokenBucket::Available(absl::Time now) {
  Refill(now);
  return tokens_;
}

}  // namespace vipu::server
