// Loopback ports: a listener is not free, the stable range lies above the
// ephemeral range, and the holder of a port is named from /proc.
#include "base/loopback_ports.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/unit/support/loopback_listener.h"

namespace vipu {
namespace {

using ::testing::StartsWith;

using test::Listener;

TEST(LoopbackPortsTest, StableRangeLiesAboveTheEphemeralRange) {
  const auto [first, last] = StablePortRange();
  EXPECT_EQ(last, 65535u);
  EXPECT_GT(first, 1024u);
}

TEST(LoopbackPortsTest, AListeningPortIsNotFreeAndAClosedOneIs) {
  uint32_t released = 0;
  {
    Listener listener;
    ASSERT_NE(listener.port(), 0u);
    EXPECT_FALSE(LoopbackPortFree(listener.port()));
    released = listener.port();
  }
  EXPECT_TRUE(LoopbackPortFree(released));
}

TEST(LoopbackPortsTest, TheHolderOfAListeningPortIsThisProcess) {
  Listener listener;
  ASSERT_NE(listener.port(), 0u);
  EXPECT_THAT(PortHolder(listener.port()), StartsWith("pid " + std::to_string(getpid()) + " ("));
}

TEST(LoopbackPortsTest, APortNobodyListensOnHasNoHolder) {
  uint32_t released = 0;
  {
    Listener listener;
    released = listener.port();
  }
  EXPECT_EQ(PortHolder(released), "");
}

}  // namespace
}  // namespace vipu
