// AdmitWhenReady: Readiness's refusal as the gRPC status a call gets.
#include "server/api/admission.h"

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/control/readiness.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

TEST(AdmitWhenReadyTest, GrpcRefusalIsUnavailableWithTheSameMessage) {
  Readiness r;
  r.Reconciling(absl::Now() + absl::Seconds(5));
  grpc::Status s = AdmitWhenReady(r, "create partition");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("create partition: "));
  // The mark the endpoints' interceptor turns into retry-after-ms.
  EXPECT_GT(wire::NothingDoneRetryAfterMs(s), 0);
  r.SetReady();
  EXPECT_TRUE(AdmitWhenReady(r, "create partition").ok());
}

}  // namespace
}  // namespace vipu::server
