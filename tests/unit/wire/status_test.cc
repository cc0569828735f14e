// The absl::Status <-> grpc::Status mapping: code for code, message kept.
#include <string>
#include <vector>

#include "base/nothing_done.h"
#include "gtest/gtest.h"
#include "wire/status.h"

namespace vipu::wire {
namespace {

// Every canonical code but OK, as gRPC numbers them.
const std::vector<grpc::StatusCode>& ErrorCodes() {
  static const std::vector<grpc::StatusCode> codes = {
      grpc::StatusCode::CANCELLED,
      grpc::StatusCode::UNKNOWN,
      grpc::StatusCode::INVALID_ARGUMENT,
      grpc::StatusCode::DEADLINE_EXCEEDED,
      grpc::StatusCode::NOT_FOUND,
      grpc::StatusCode::ALREADY_EXISTS,
      grpc::StatusCode::PERMISSION_DENIED,
      grpc::StatusCode::RESOURCE_EXHAUSTED,
      grpc::StatusCode::FAILED_PRECONDITION,
      grpc::StatusCode::ABORTED,
      grpc::StatusCode::OUT_OF_RANGE,
      grpc::StatusCode::UNIMPLEMENTED,
      grpc::StatusCode::INTERNAL,
      grpc::StatusCode::UNAVAILABLE,
      grpc::StatusCode::DATA_LOSS,
      grpc::StatusCode::UNAUTHENTICATED,
  };
  return codes;
}

TEST(WireStatusTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpc(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpc(absl::OkStatus()).error_message(), "");
  EXPECT_TRUE(FromGrpc(grpc::Status::OK).ok());
  EXPECT_EQ(FromGrpc(grpc::Status::OK), absl::OkStatus());
  EXPECT_EQ(ToGrpcCode(absl::StatusCode::kOk), grpc::StatusCode::OK);
  EXPECT_EQ(FromGrpcCode(grpc::StatusCode::OK), absl::StatusCode::kOk);
  EXPECT_EQ(CodeNumber(absl::OkStatus()), 0);
}

TEST(WireStatusTest, EveryCodeRoundTripsWithItsMessage) {
  EXPECT_EQ(ErrorCodes().size(), 16u);
  for (grpc::StatusCode code : ErrorCodes()) {
    const std::string message = "x: rule " + std::to_string(code);
    const absl::Status a = FromGrpc(grpc::Status(code, message));
    EXPECT_EQ(static_cast<int>(a.code()), static_cast<int>(code));
    EXPECT_EQ(a.message(), message);

    const grpc::Status g = ToGrpc(a);
    EXPECT_EQ(g.error_code(), code);
    EXPECT_EQ(g.error_message(), message);
    EXPECT_EQ(FromGrpc(g), a);

    EXPECT_EQ(ToGrpcCode(FromGrpcCode(code)), code);
    EXPECT_EQ(CodeNumber(a), static_cast<int32_t>(code));
    const grpc::Status carried = FromCodeNumber(CodeNumber(a), message);
    EXPECT_EQ(carried.error_code(), code);
    EXPECT_EQ(carried.error_message(), message);
  }
}

TEST(WireStatusTest, CodesMatchByName) {
  EXPECT_EQ(ToGrpc(absl::FailedPreconditionError("x: rule")).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(ToGrpc(absl::InvalidArgumentError("id")).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ToGrpc(absl::NotFoundError("p")).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(ToGrpc(absl::UnauthenticatedError("k")).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  const absl::Status a = FromGrpc(grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"));
  EXPECT_EQ(a.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(std::string(a.message()), "down");
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "late")).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(WireStatusTest, MessageIsKeptByteForByte) {
  const std::string message = "line one\nline two: 'quoted' \xc3\xa9";
  EXPECT_EQ(ToGrpc(absl::InternalError(message)).error_message(), message);
  EXPECT_EQ(FromGrpc(grpc::Status(grpc::StatusCode::INTERNAL, message)).message(), message);
  EXPECT_EQ(ToGrpc(absl::InternalError("")).error_message(), "");
  EXPECT_FALSE(ToGrpc(absl::InternalError("")).ok());
}

TEST(CodeNameTest, NamesEveryCanonicalCodeAndUnknownOtherwise) {
  EXPECT_EQ(CodeName(grpc::StatusCode::OK), "OK");
  EXPECT_EQ(CodeName(grpc::StatusCode::UNAVAILABLE), "UNAVAILABLE");
  EXPECT_EQ(CodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(CodeName(grpc::StatusCode::UNAUTHENTICATED), "UNAUTHENTICATED");
  EXPECT_EQ(CodeName(99), "UNKNOWN");
  EXPECT_EQ(CodeName(-1), "UNKNOWN");
}

grpc::Status Handler(absl::StatusOr<int> value, int* out) {
  GRPC_ASSIGN_OR_RETURN(*out, std::move(value));
  GRPC_RETURN_IF_ERROR(*out > 0 ? absl::OkStatus() : absl::InvalidArgumentError("n: must be > 0"));
  return grpc::Status::OK;
}

TEST(GrpcStatusMacrosTest, ReturnTheErrorAsGrpcWithItsCodeAndMessage) {
  int out = 0;
  grpc::Status s = Handler(absl::NotFoundError("partition 'p' not found"), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "partition 'p' not found");
  EXPECT_EQ(out, 0);

  s = Handler(0, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "n: must be > 0");

  EXPECT_TRUE(Handler(3, &out).ok());
  EXPECT_EQ(out, 3);
}

TEST(NothingDoneTest, TheMarkTravelsThroughToGrpcAndOnlyThere) {
  const absl::Status refused =
      NothingDone(absl::UnavailableError("may no longer lead"), /*retry_after_ms=*/200);
  EXPECT_EQ(::vipu::NothingDoneRetryAfterMs(refused), 200);
  const grpc::Status sent = ToGrpc(refused);
  EXPECT_EQ(sent.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(sent.error_message(), "may no longer lead");
  EXPECT_EQ(NothingDoneRetryAfterMs(sent), 200);
  // Any other status carries no mark, and OK stays OK.
  EXPECT_EQ(::vipu::NothingDoneRetryAfterMs(absl::UnavailableError("lost")), -1);
  EXPECT_EQ(NothingDoneRetryAfterMs(ToGrpc(absl::UnavailableError("lost"))), -1);
  EXPECT_EQ(NothingDoneRetryAfterMs(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x", "other")), -1);
  EXPECT_TRUE(NothingDone(absl::OkStatus(), 200).ok());
  EXPECT_EQ(::vipu::NothingDoneRetryAfterMs(absl::OkStatus()), -1);
}

}  // namespace
}  // namespace vipu::wire
