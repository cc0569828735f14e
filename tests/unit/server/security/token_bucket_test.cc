// TokenBucket refill and cap, and RateLimiter's per-key buckets and settings.
#include "server/security/token_bucket.h"

#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/security/rate_limiter.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1000000);

TEST(TokenBucketTest, BurstThenRefusesUntilRefilled) {
  TokenBucket bucket(/*rate=*/2, /*burst=*/3, kT0);
  EXPECT_TRUE(bucket.TryTake(kT0));
  EXPECT_TRUE(bucket.TryTake(kT0));
  EXPECT_TRUE(bucket.TryTake(kT0));
  EXPECT_FALSE(bucket.TryTake(kT0));
  EXPECT_FALSE(bucket.TryTake(kT0 + absl::Milliseconds(400)));  // 0.8 tokens
  EXPECT_TRUE(bucket.TryTake(kT0 + absl::Milliseconds(500)));   // 1.0 token
  EXPECT_FALSE(bucket.TryTake(kT0 + absl::Milliseconds(500)));
}

TEST(TokenBucketTest, RefillIsCappedAtBurst) {
  TokenBucket bucket(100, 2, kT0);
  EXPECT_DOUBLE_EQ(bucket.Available(kT0 + absl::Hours(1)), 2.0);
  EXPECT_TRUE(bucket.TryTake(kT0 + absl::Hours(1)));
  EXPECT_TRUE(bucket.TryTake(kT0 + absl::Hours(1)));
  EXPECT_FALSE(bucket.TryTake(kT0 + absl::Hours(1)));
}

TEST(TokenBucketTest, ClockGoingBackwardsRefillsNothing) {
  TokenBucket bucket(1, 1, kT0);
  EXPECT_TRUE(bucket.TryTake(kT0));
  EXPECT_FALSE(bucket.TryTake(kT0 - absl::Seconds(10)));
  EXPECT_FALSE(bucket.TryTake(kT0 + absl::Milliseconds(500)));
  EXPECT_TRUE(bucket.TryTake(kT0 + absl::Seconds(1)));
}

TEST(RateLimiterTest, ZeroRateIsOff) {
  auto limiter = RateLimiter::Create(0, 0);
  ASSERT_TRUE(limiter.ok());
  EXPECT_FALSE((*limiter)->enabled());
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE((*limiter)->Allow("user:a", kT0));
}

TEST(RateLimiterTest, KeysHaveTheirOwnBuckets) {
  auto limiter = RateLimiter::Create(1, 2);
  ASSERT_TRUE(limiter.ok());
  RateLimiter& l = **limiter;
  EXPECT_TRUE(l.Allow("user:a", kT0));
  EXPECT_TRUE(l.Allow("user:a", kT0));
  EXPECT_FALSE(l.Allow("user:a", kT0));
  EXPECT_TRUE(l.Allow("user:b", kT0));  // b is not slowed by a
  EXPECT_TRUE(l.Allow("user:a", kT0 + absl::Seconds(1)));
}

TEST(RateLimiterTest, BurstZeroMeansTheRate) {
  auto limiter = RateLimiter::Create(3, 0);
  ASSERT_TRUE(limiter.ok());
  int allowed = 0;
  for (int i = 0; i < 10; ++i) allowed += (*limiter)->Allow("k", kT0) ? 1 : 0;
  EXPECT_EQ(allowed, 3);
  auto slow = RateLimiter::Create(0.5, 0);  // burst at least 1
  ASSERT_TRUE(slow.ok());
  EXPECT_TRUE((*slow)->Allow("k", kT0));
  EXPECT_FALSE((*slow)->Allow("k", kT0));
}

TEST(RateLimiterTest, RefusesInvalidSettings) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double rate : {-1.0, nan, inf, 1e6 + 1}) {
    auto l = RateLimiter::Create(rate, 1);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << rate;
    EXPECT_THAT(std::string(l.status().message()), HasSubstr("--rate-limit-per-second"));
  }
  for (double burst : {-1.0, 0.5, nan, inf, 1e6 + 1}) {
    auto l = RateLimiter::Create(1, burst);
    EXPECT_EQ(l.status().code(), absl::StatusCode::kInvalidArgument) << burst;
    EXPECT_THAT(std::string(l.status().message()), HasSubstr("--rate-limit-burst"));
  }
}

}  // namespace
}  // namespace vipu::server
