// --metrics-listen address parsing (ParseListenAddress).
#include "server/metrics/metrics_http.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

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
