// The probe of an address a listener will bind with SO_REUSEPORT: a socket
// that holds it is found and named, a free one passes.
#include "base/listen_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/unit/support/loopback_listener.h"

namespace vipu {
namespace {

using ::testing::HasSubstr;

TEST(ListenProbeTest, AnAddressASocketHoldsIsInUseAndAFreeOneIsNot) {
  uint32_t released = 0;
  {
    test::Listener listener;
    ASSERT_NE(listener.port(), 0u);
    released = listener.port();
    const std::string address = absl::StrCat("127.0.0.1:", listener.port());
    absl::Status held = ProbeListenAddress(address);
    EXPECT_TRUE(absl::IsUnavailable(held)) << held;
    EXPECT_THAT(std::string(held.message()),
                HasSubstr(absl::StrCat("cannot listen on ", address, ": the address is in use")));
    // Every interface includes the loopback one.
    EXPECT_FALSE(ProbeListenAddress(absl::StrCat("0.0.0.0:", listener.port())).ok());
    EXPECT_FALSE(ProbeListenAddress(absl::StrCat("[::]:", listener.port())).ok());
  }
  EXPECT_TRUE(ProbeListenAddress(absl::StrCat("127.0.0.1:", released)).ok());
  // A fresh port is never held; an address that does not resolve is for the
  // listener's own bind to refuse.
  EXPECT_TRUE(ProbeListenAddress("127.0.0.1:0").ok());
  EXPECT_TRUE(ProbeListenAddress("no-such-host.invalid:8090").ok());
}

}  // namespace
}  // namespace vipu
