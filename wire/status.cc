// absl::Status to grpc::Status and back, code for code.
#include "wire/status.h"

namespace vipu::wire {

// absl and gRPC share the canonical code numbers.
grpc::StatusCode ToGrpcCode(absl::StatusCode code) { return static_cast<grpc::StatusCode>(code); }

absl::StatusCode FromGrpcCode(grpc::StatusCode code) { return static_cast<absl::StatusCode>(code); }

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()));
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(FromGrpcCode(status.error_code()), status.error_message());
}

int32_t CodeNumber(const absl::Status& status) {
  return static_cast<int32_t>(ToGrpcCode(status.code()));
}

grpc::Status FromCodeNumber(int32_t code, const std::string& message) {
  return grpc::Status(static_cast<grpc::StatusCode>(code), message);
}

std::string CodeName(int code) {
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return "UNKNOWN";
  }
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace vipu::wire
