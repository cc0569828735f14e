// Readiness: refuses mutating requests with UNAVAILABLE and a retry hint until reconciled.
#include "server/control/readiness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/nothing_done.h"

namespace vipu::server {

void Readiness::Reconciling(absl::Time deadline) {
  vipu::MutexLock lock(&mu_);
  deadline_ = deadline;
}

void Readiness::SetReady() { ready_.store(true); }

absl::Duration Readiness::RetryAfter(absl::Time now) const {
  vipu::MutexLock lock(&mu_);
  return std::max(absl::Milliseconds(100), deadline_ - now);
}

absl::Status Readiness::Admit(absl::string_view what) const {
  if (ready()) return absl::OkStatus();
  const int64_t retry_ms = absl::ToInt64Milliseconds(RetryAfter(absl::Now()));
  return NothingDone(
      absl::UnavailableError(absl::StrCat(
          what, ": the server is starting and reconciling its agents with the database; retry in ",
          retry_ms, " ms")),
      retry_ms);
}

}  // namespace vipu::server
