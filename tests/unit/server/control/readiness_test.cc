// Readiness: its refusal until the controller is ready, and the retry hint.
#include "server/control/readiness.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/nothing_done.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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

}  // namespace
}  // namespace vipu::server
