// Loopback ports: a listener is not free, the stable range lies above the
// ephemeral range, and the holder of a port is named from /proc.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "base/loopback_ports.h"

namespace vipu {
namespace {

using ::testing::StartsWith;

// A socket listening on a free 127.0.0.1 port for as long as it lives.
class Listener {
 public:
  Listener() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~Listener() { close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint32_t port() const { return port_; }

 private:
  int fd_;
  uint32_t port_ = 0;
};

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
