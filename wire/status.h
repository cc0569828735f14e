// The one place where an absl::Status becomes a grpc::Status and back.
// Libraries return absl::Status; services answer, and clients receive, a
// grpc::Status. The two share the canonical code numbers, so the mapping is
// code for code with the message unchanged. Stateless; safe from any thread.
#ifndef VIPU_WIRE_STATUS_H_
#define VIPU_WIRE_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "base/status_macros.h"

namespace vipu::wire {

// The same code. Numbers outside the canonical range pass through unchanged.
grpc::StatusCode ToGrpcCode(absl::StatusCode code);
absl::StatusCode FromGrpcCode(grpc::StatusCode code);

// grpc::Status::OK for OK (an OK status carries no message); otherwise the
// same code and the same message (and, for NothingDone, its mark).
grpc::Status ToGrpc(const absl::Status& status);
// OkStatus() for OK; otherwise the same code and the same message (the
// error details, which we never send, are dropped).
absl::Status FromGrpc(const grpc::Status& status);

// The wait in milliseconds of a grpc::Status that ToGrpc made of a
// NothingDone status (base/nothing_done.h), or -1. ToGrpc carries the mark
// in the status's details, and the server's NothingDoneInterceptor
// (server/api) sends it as the trailing metadata `retry-after-ms`
// (wire/metadata_keys.h), the word clients read.
int64_t NothingDoneRetryAfterMs(const grpc::Status& status);

// A status carried inside a reply as a code number and a message (one
// refusal per agent in RegisterBatchReply): the gRPC code number of
// `status`, and the grpc::Status such a pair stands for.
int32_t CodeNumber(const absl::Status& status);
grpc::Status FromCodeNumber(int32_t code, const std::string& message);

// The canonical name of a gRPC code number ("OK", "UNAVAILABLE"), as metrics
// labels and audit records write it; "UNKNOWN" for a number outside the
// canonical range.
std::string CodeName(int code);

}  // namespace vipu::wire

// For gRPC handlers, which answer a grpc::Status: RETURN_IF_ERROR and
// ASSIGN_OR_RETURN of base/status_macros.h, returning the error as ToGrpc
// makes it (same code, same message).
#define GRPC_RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                       \
    const auto& vipu_grpc_status_ref_ = (expr);                                              \
    if (!vipu_grpc_status_ref_.ok()) {                                                       \
      return ::vipu::wire::ToGrpc(::vipu::status_internal::AsStatus(vipu_grpc_status_ref_)); \
    }                                                                                        \
  } while (false)

#define GRPC_ASSIGN_OR_RETURN(lhs, rexpr) \
  VIPU_GRPC_ASSIGN_OR_RETURN_IMPL_(VIPU_STATUS_CONCAT_(vipu_grpc_status_or_, __LINE__), lhs, rexpr)

#define VIPU_GRPC_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)        \
  auto statusor = (rexpr);                                            \
  if (!statusor.ok()) return ::vipu::wire::ToGrpc(statusor.status()); \
  lhs = *std::move(statusor)

#endif  // VIPU_WIRE_STATUS_H_
