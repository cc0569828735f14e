// Readiness's refusal and retry hint, and --metrics-listen address parsing.
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics_http.h"
#include "server/readiness.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

TEST(ReadinessTest, RefusesUntilReadyWithAHint) {
  Readiness r;
  r.Reconciling(absl::Now() + absl::Seconds(5));
  EXPECT_FALSE(r.ready());
  grpc::Status s = r.Admit(nullptr, "create partition");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("create partition: "));
  EXPECT_THAT(s.error_message(), HasSubstr("retry in "));
  r.SetReady();
  EXPECT_TRUE(r.Admit(nullptr, "create partition").ok());
}

TEST(ReadinessTest, RetryAfterCountsDownToTheDeadlineAndHasAFloor) {
  Readiness r;
  const absl::Time now = absl::Now();
  r.Reconciling(now + absl::Seconds(3));
  EXPECT_EQ(r.RetryAfter(now), absl::Seconds(3));
  EXPECT_EQ(r.RetryAfter(now + absl::Seconds(1)), absl::Seconds(2));
  EXPECT_EQ(r.RetryAfter(now + absl::Seconds(10)), absl::Milliseconds(100));
}

TEST(ReadinessTest, NullReadinessAdmits) {
  EXPECT_TRUE(AdmitWhenReady(nullptr, nullptr, "x").ok());
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
