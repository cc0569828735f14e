// RdmaPorts: each machine's RDMA port is listened on for as long as the
// object lives, a port already taken is refused naming it, and none is left
// behind.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/rdma_ports.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using ::testing::HasSubstr;

// Whether a plain listener could take 127.0.0.1:port now.
bool Bindable(uint32_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd, 1) == 0;
  close(fd);
  return ok;
}

TEST(RdmaPortsTest, HoldsEachPortUntilDestroyed) {
  auto held = RdmaPorts::Listen("127.0.0.1", {0, 0, 0});
  ASSERT_TRUE(held.ok()) << held.status();
  const std::vector<uint32_t> ports = (*held)->ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(std::set<uint32_t>(ports.begin(), ports.end()).size(), 3u);
  for (uint32_t port : ports) {
    EXPECT_NE(port, 0u);
    EXPECT_FALSE(Bindable(port)) << port;
  }
  held->reset();
  for (uint32_t port : ports) EXPECT_TRUE(Bindable(port)) << port;
}

TEST(RdmaPortsTest, GivenPortIsTakenAndATakenOneIsRefusedNamingIt) {
  auto first = RdmaPorts::Listen("127.0.0.1", {0});
  ASSERT_TRUE(first.ok()) << first.status();
  const uint32_t port = (*first)->ports()[0];
  auto again = RdmaPorts::Listen("127.0.0.1", {0, port});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(again.status().message()),
              HasSubstr(absl::StrCat("cannot listen on RDMA port 127.0.0.1:", port)));
  first->reset();
  auto now = RdmaPorts::Listen("127.0.0.1", {port});
  ASSERT_TRUE(now.ok()) << now.status();
  EXPECT_EQ((*now)->ports()[0], port);
}

}  // namespace
}  // namespace vipu::agents
