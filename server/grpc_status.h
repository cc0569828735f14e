// The one place where absl::Status becomes grpc::Status (codes map 1:1).
#ifndef VIPU_SERVER_GRPC_STATUS_H_
#define VIPU_SERVER_GRPC_STATUS_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace vipu::server {

inline grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

inline absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace vipu::server

#endif  // VIPU_SERVER_GRPC_STATUS_H_
