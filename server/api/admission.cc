// AdmitWhenReady: Readiness's refusal as a gRPC status with retry-after-ms.
#include "server/api/admission.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "wire/metadata_keys.h"
#include "wire/status.h"

namespace vipu::server {

grpc::Status AdmitWhenReady(const Readiness& readiness, grpc::ServerContext* context,
                            absl::string_view what) {
  int64_t retry_ms = 0;
  absl::Status admitted = readiness.Admit(what, &retry_ms);
  if (!admitted.ok() && context != nullptr) {
    context->AddTrailingMetadata(wire::kRetryAfterMetadata, absl::StrCat(retry_ms));
  }
  return wire::ToGrpc(admitted);
}

}  // namespace vipu::server
