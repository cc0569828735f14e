// Readiness's refusal and retry hint, and --metrics-listen address parsing.
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/nothing_done.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api/admission.h"
#include "server/control/readiness.h"
#include "server/metrics/metrics_http.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

TEST(ReadinessTest, RefusesUntilReadyWithAHint) {
  Readiness r;
  r.Reconciling(absl::Now() + absl::Seconds(5));
  EXPECT_FALSE(r.ready());
  absl::Status s = r.Admit("create partition");
  const int64_t retry_ms = NothingDoneRetryAfterMs(s);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("create partition: "));
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("retry in ", retry_ms, " ms")));
  EXPECT_GT(retry_ms, 0);
  r.SetReady();
  EXPECT_TRUE(r.Admit("create partition").ok());
}

TEST(ReadinessTest, RetryAfterCountsDownToTheDeadlineAndHasAFloor) {
  Readiness r;
  const absl::Time now = absl::Now();
  r.Reconciling(now + absl::Seconds(3));
  EXPECT_EQ(r.RetryAfter(now), absl::Seconds(3));
  EXPECT_EQ(r.RetryAfter(now + absl::Seconds(1)), absl::Seconds(2));
  EXPECT_EQ(r.RetryAfter(now + absl::Seconds(10)), absl::Milliseconds(100));
}

TEST(ReadinessTest, GrpcRefusalIsUnavailableWithTheSameMessage) {
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

TEST(ParseListenAddressTest, Accepted) {
  auto a = ParseListenAddress("127.0.0.1:2113");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 2113);
  a = ParseListenAddress("[::1]:0");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "::1");
  EXPECT_EQ(a->second, 0);
}

TEST(ParseListenAddressTest, EveryInvalidFormRefusedNamingTheFlag) {
  for (std::string bad : {"", "2113", "127.0.0.1", ":2113", "127.0.0.1:", "127.0.0.1:x",
                          "127.0.0.1:-1", "127.0.0.1:65536", "::1:2113", "[]:1"}) {
    auto a = ParseListenAddress(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(a.status().message(), HasSubstr("--metrics-listen: ")) << bad;
  }
}

}  // namespace
}  // namespace vipu::server
