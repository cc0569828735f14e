// absl::Status to grpc::Status and back, code for code.
#include "wire/status.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/nothing_done.h"

namespace vipu::wire {

// absl and gRPC share the canonical code numbers.
grpc::StatusCode ToGrpcCode(absl::StatusCode code) { return static_cast<grpc::StatusCode>(code); }

absl::StatusCode FromGrpcCode(grpc::StatusCode code) { return static_cast<absl::StatusCode>(code); }

namespace {
// The details of a grpc::Status made of a NothingDone status: this prefix
// and the wait in milliseconds. Never sent: the server's interceptor turns
// it into trailing metadata.
constexpr char kNothingDoneDetails[] = "vipu-nothing-done:";
}  // namespace

int64_t NothingDoneRetryAfterMs(const grpc::Status& status) {
  const std::string& details = status.error_details();
  int64_t ms = -1;
  if (!absl::StartsWith(details, kNothingDoneDetails) ||
      !absl::SimpleAtoi(details.substr(sizeof(kNothingDoneDetails) - 1), &ms)) {
    return -1;
  }
  return ms;
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  if (const int64_t ms = ::vipu::NothingDoneRetryAfterMs(status); ms >= 0) {
    return grpc::Status(ToGrpcCode(status.code()), std::string(status.message()),
                        absl::StrCat(kNothingDoneDetails, ms));
  }
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
