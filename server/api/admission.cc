// AdmitWhenReady: Readiness's refusal as a gRPC status, marked nothing done.
#include "server/api/admission.h"

#include "wire/status.h"

namespace vipu::server {

grpc::Status AdmitWhenReady(const Readiness& readiness, absl::string_view what) {
  return wire::ToGrpc(readiness.Admit(what));
}

}  // namespace vipu::server
