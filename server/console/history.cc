// The bounded ring of history samples behind the console's chart.
#include "server/console/history.h"

namespace vipu::server {

void History::Add(Sample sample) {
  vipu::MutexLock lock(&mu_);
  const int64_t oldest = sample.unix_ms - absl::ToInt64Milliseconds(window_);
  samples_.push_back(std::move(sample));
  while (samples_.size() > capacity_ || (!samples_.empty() && samples_.front().unix_ms < oldest)) {
    samples_.pop_front();
  }
}

std::vector<Sample> History::Since(absl::Time now, absl::Duration span) const {
  const int64_t from = absl::ToUnixMillis(now - span);
  vipu::MutexLock lock(&mu_);
  std::vector<Sample> out;
  for (const Sample& s : samples_) {
    if (s.unix_ms >= from) out.push_back(s);
  }
  return out;
}

size_t History::SizeForTesting() const {
  vipu::MutexLock lock(&mu_);
  return samples_.size();
}

}  // namespace vipu::server
