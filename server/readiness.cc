// Readiness: refuses mutating RPCs with UNAVAILABLE and retry-after-ms until reconciled.
#include "server/readiness.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "wire/metadata_keys.h"

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

grpc::Status Readiness::Admit(grpc::ServerContext* context, absl::string_view what) const {
  if (ready()) return grpc::Status::OK;
  const int64_t retry_ms = absl::ToInt64Milliseconds(RetryAfter(absl::Now()));
  if (context != nullptr) {
    context->AddTrailingMetadata(wire::kRetryAfterMetadata, absl::StrCat(retry_ms));
  }
  return grpc::Status(
      grpc::StatusCode::UNAVAILABLE,
      absl::StrCat(what,
                   ": the server is starting and reconciling its agents with the database; "
                   "retry in ",
                   retry_ms, " ms"));
}

}  // namespace vipu::server
