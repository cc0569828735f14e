// The gRPC form of Readiness's refusal: UNAVAILABLE with the retry hint in
// the message, and the NothingDone mark that the endpoints' interceptor
// (nothing_done_interceptor.h) sends as `retry-after-ms` for programs.
// Stateless; safe from any thread.
#ifndef VIPU_SERVER_API_ADMISSION_H_
#define VIPU_SERVER_API_ADMISSION_H_

#include <grpcpp/grpcpp.h>

#include "absl/strings/string_view.h"
#include "server/control/readiness.h"

namespace vipu::server {

// OK when `readiness` says the server is ready. Otherwise the refusal
// naming `what`.
grpc::Status AdmitWhenReady(const Readiness& readiness, absl::string_view what);

}  // namespace vipu::server

#endif  // VIPU_SERVER_API_ADMISSION_H_
